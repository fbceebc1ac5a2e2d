module github.com/sqsonce/sqsonce/middleware/lambdaenv

go 1.26.0

toolchain go1.26.10

require (
	github.com/aws/aws-lambda-go v1.55.1
	github.com/aws/aws-sdk-go-v2 v1.48.0
	github.com/aws/aws-sdk-go-v2/config v1.33.21
	github.com/aws/aws-sdk-go-v2/service/dynamodb v1.74.0
	github.com/aws/aws-sdk-go-v2/service/sqs v1.53.0
	github.com/sqsonce/sqsonce v0.10.0
	github.com/sqsonce/sqsonce/middleware/batch/sqsdlq v0.10.0
	github.com/sqsonce/sqsonce/middleware/batch/sqsvisibility v0.10.0
	github.com/sqsonce/sqsonce/middleware/idempotency/dynamostore v0.10.0
	github.com/sqsonce/sqsonce/middleware/lambdaenv/envvars v0.10.0
)

require (
	github.com/aws/aws-sdk-go-v2/credentials v1.21.3 // indirect
	github.com/aws/aws-sdk-go-v2/feature/ec2/imds v1.20.9 // indirect
	github.com/aws/aws-sdk-go-v2/internal/configsources v1.5.12 // indirect
	github.com/aws/aws-sdk-go-v2/internal/endpoints/v2 v2.8.12 // indirect
	github.com/aws/aws-sdk-go-v2/internal/v4a v1.5.12 // indirect
	github.com/aws/aws-sdk-go-v2/service/internal/accept-encoding v1.13.25 // indirect
	github.com/aws/aws-sdk-go-v2/service/internal/endpoint-discovery v1.13.12 // indirect
	github.com/aws/aws-sdk-go-v2/service/internal/presigned-url v1.14.12 // indirect
	github.com/aws/aws-sdk-go-v2/service/signin v1.14.0 // indirect
	github.com/aws/aws-sdk-go-v2/service/sso v1.39.5 // indirect
	github.com/aws/aws-sdk-go-v2/service/ssooidc v1.44.5 // indirect
	github.com/aws/aws-sdk-go-v2/service/sts v1.53.0 // indirect
	github.com/aws/smithy-go v1.28.9 // indirect
	github.com/hashicorp/golang-lru/v2 v2.0.7 // indirect
)

replace (
	github.com/sqsonce/sqsonce => ../..
	github.com/sqsonce/sqsonce/cmd/sqsonce-esm => ../../cmd/sqsonce-esm
	github.com/sqsonce/sqsonce/cmd/sqsonce-ops => ../../cmd/sqsonce-ops
	github.com/sqsonce/sqsonce/cmd/summarise => ../../cmd/summarise
	github.com/sqsonce/sqsonce/events => ../../events
	github.com/sqsonce/sqsonce/handler => ../../handler
	github.com/sqsonce/sqsonce/infra => ../../infra
	github.com/sqsonce/sqsonce/internal/testenv/esm => ../../internal/testenv/esm
	github.com/sqsonce/sqsonce/internal/testenv/pgserver => ../../internal/testenv/pgserver
	github.com/sqsonce/sqsonce/middleware/batch/sqsdlq => ../batch/sqsdlq
	github.com/sqsonce/sqsonce/middleware/batch/sqsvisibility => ../batch/sqsvisibility
	github.com/sqsonce/sqsonce/middleware/idempotency/dynamostore => ../idempotency/dynamostore
	github.com/sqsonce/sqsonce/middleware/idempotency/pgstore => ../idempotency/pgstore
	github.com/sqsonce/sqsonce/middleware/idempotency/redisstore => ../idempotency/redisstore
	github.com/sqsonce/sqsonce/middleware/idempotency/storetest/linearize => ../idempotency/storetest/linearize
	github.com/sqsonce/sqsonce/middleware/lambdaenv/envvars => ./envvars
	github.com/sqsonce/sqsonce/samples => ../../samples
	github.com/sqsonce/sqsonce/test => ../../test
	github.com/sqsonce/sqsonce/tools => ../../tools
)

replace github.com/sqsonce/sqsonce/middleware/lambdaenv/pgenv => ./pgenv

replace github.com/sqsonce/sqsonce/middleware/lambdaenv/redisenv => ./redisenv

replace github.com/sqsonce/sqsonce/middleware/oteltrace => ../oteltrace

replace github.com/sqsonce/sqsonce/test/ownfunction/stack => ../../test/ownfunction/stack
