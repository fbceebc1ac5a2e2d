module github.com/sqsonce/sqsonce/middleware/idempotency/pgstore

go 1.26.0

toolchain go1.26.10

require (
	github.com/aws/aws-lambda-go v1.55.1
	github.com/jackc/pgx/v5 v5.13.0
	github.com/sqsonce/sqsonce v0.10.0
)

require (
	github.com/hashicorp/golang-lru/v2 v2.0.7 // indirect
	github.com/jackc/pgpassfile v1.0.0 // indirect
	github.com/jackc/pgservicefile v0.0.0-20240606120523-5a60cdf6a761 // indirect
	github.com/jackc/puddle/v2 v2.2.3 // indirect
	golang.org/x/sync v0.22.0 // indirect
	golang.org/x/text v0.41.0 // indirect
)

replace (
	github.com/sqsonce/sqsonce => ../../..
	github.com/sqsonce/sqsonce/cmd/sqsonce-esm => ../../../cmd/sqsonce-esm
	github.com/sqsonce/sqsonce/cmd/sqsonce-ops => ../../../cmd/sqsonce-ops
	github.com/sqsonce/sqsonce/cmd/summarise => ../../../cmd/summarise
	github.com/sqsonce/sqsonce/events => ../../../events
	github.com/sqsonce/sqsonce/handler => ../../../handler
	github.com/sqsonce/sqsonce/infra => ../../../infra
	github.com/sqsonce/sqsonce/internal/testenv/esm => ../../../internal/testenv/esm
	github.com/sqsonce/sqsonce/internal/testenv/pgserver => ../../../internal/testenv/pgserver
	github.com/sqsonce/sqsonce/middleware/batch/sqsdlq => ../../batch/sqsdlq
	github.com/sqsonce/sqsonce/middleware/batch/sqsvisibility => ../../batch/sqsvisibility
	github.com/sqsonce/sqsonce/middleware/idempotency/dynamostore => ../dynamostore
	github.com/sqsonce/sqsonce/middleware/idempotency/redisstore => ../redisstore
	github.com/sqsonce/sqsonce/middleware/idempotency/storetest/linearize => ../storetest/linearize
	github.com/sqsonce/sqsonce/middleware/lambdaenv => ../../lambdaenv
	github.com/sqsonce/sqsonce/middleware/lambdaenv/envvars => ../../lambdaenv/envvars
	github.com/sqsonce/sqsonce/samples => ../../../samples
	github.com/sqsonce/sqsonce/test => ../../../test
	github.com/sqsonce/sqsonce/tools => ../../../tools
)

replace github.com/sqsonce/sqsonce/middleware/lambdaenv/pgenv => ../../lambdaenv/pgenv

replace github.com/sqsonce/sqsonce/middleware/lambdaenv/redisenv => ../../lambdaenv/redisenv

replace github.com/sqsonce/sqsonce/middleware/oteltrace => ../../oteltrace

replace github.com/sqsonce/sqsonce/test/ownfunction/stack => ../../../test/ownfunction/stack
