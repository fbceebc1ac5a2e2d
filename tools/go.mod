module github.com/sqsonce/sqsonce/tools

go 1.26.0

toolchain go1.26.10

require (
	github.com/aws/aws-lambda-go v1.55.1
	github.com/aws/aws-sdk-go-v2 v1.48.0
	github.com/aws/aws-sdk-go-v2/credentials v1.21.3
	github.com/aws/aws-sdk-go-v2/service/dynamodb v1.74.0
	github.com/aws/aws-sdk-go-v2/service/sqs v1.53.0
	github.com/sqsonce/sqsonce v0.10.0
	github.com/sqsonce/sqsonce/internal/testenv/esm v0.10.0
	github.com/sqsonce/sqsonce/internal/testenv/motoserver v0.10.0
	github.com/sqsonce/sqsonce/middleware/idempotency/dynamostore v0.10.0
)

require (
	github.com/aws/aws-sdk-go-v2/internal/configsources v1.5.12 // indirect
	github.com/aws/aws-sdk-go-v2/internal/endpoints/v2 v2.8.12 // indirect
	github.com/aws/aws-sdk-go-v2/service/internal/accept-encoding v1.13.25 // indirect
	github.com/aws/aws-sdk-go-v2/service/internal/endpoint-discovery v1.13.12 // indirect
	github.com/aws/smithy-go v1.28.9 // indirect
	github.com/hashicorp/golang-lru/v2 v2.0.7 // indirect
)

replace (
	github.com/sqsonce/sqsonce => ..
	github.com/sqsonce/sqsonce/cmd/sqsonce-esm => ../cmd/sqsonce-esm
	github.com/sqsonce/sqsonce/cmd/sqsonce-ops => ../cmd/sqsonce-ops
	github.com/sqsonce/sqsonce/cmd/summarise => ../cmd/summarise
	github.com/sqsonce/sqsonce/events => ../events
	github.com/sqsonce/sqsonce/handler => ../handler
	github.com/sqsonce/sqsonce/infra => ../infra
	github.com/sqsonce/sqsonce/internal/testenv/esm => ../internal/testenv/esm
	github.com/sqsonce/sqsonce/internal/testenv/pgserver => ../internal/testenv/pgserver
	github.com/sqsonce/sqsonce/middleware/batch/sqsdlq => ../middleware/batch/sqsdlq
	github.com/sqsonce/sqsonce/middleware/batch/sqsvisibility => ../middleware/batch/sqsvisibility
	github.com/sqsonce/sqsonce/middleware/idempotency/dynamostore => ../middleware/idempotency/dynamostore
	github.com/sqsonce/sqsonce/middleware/idempotency/pgstore => ../middleware/idempotency/pgstore
	github.com/sqsonce/sqsonce/middleware/idempotency/redisstore => ../middleware/idempotency/redisstore
	github.com/sqsonce/sqsonce/middleware/idempotency/storetest/linearize => ../middleware/idempotency/storetest/linearize
	github.com/sqsonce/sqsonce/middleware/lambdaenv => ../middleware/lambdaenv
	github.com/sqsonce/sqsonce/middleware/lambdaenv/envvars => ../middleware/lambdaenv/envvars
	github.com/sqsonce/sqsonce/samples => ../samples
	github.com/sqsonce/sqsonce/test => ../test
)

replace github.com/sqsonce/sqsonce/middleware/lambdaenv/pgenv => ../middleware/lambdaenv/pgenv

replace github.com/sqsonce/sqsonce/middleware/lambdaenv/redisenv => ../middleware/lambdaenv/redisenv

replace github.com/sqsonce/sqsonce/middleware/oteltrace => ../middleware/oteltrace

replace github.com/sqsonce/sqsonce/test/ownfunction/stack => ../test/ownfunction/stack

replace github.com/sqsonce/sqsonce/internal/testenv/motoserver => ../internal/testenv/motoserver
