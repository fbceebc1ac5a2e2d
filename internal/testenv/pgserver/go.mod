module github.com/sqsonce/sqsonce/internal/testenv/pgserver

go 1.26.0

toolchain go1.26.10

require (
	github.com/jackc/pgx/v5 v5.13.0
	github.com/sqsonce/sqsonce v0.10.0
)

require (
	github.com/jackc/pgpassfile v1.0.0 // indirect
	github.com/jackc/pgservicefile v0.0.0-20240606120523-5a60cdf6a761 // indirect
	golang.org/x/sync v0.25.0 // indirect
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
	github.com/sqsonce/sqsonce/internal/testenv/esm => ../esm
	github.com/sqsonce/sqsonce/middleware/batch/sqsdlq => ../../../middleware/batch/sqsdlq
	github.com/sqsonce/sqsonce/middleware/batch/sqsvisibility => ../../../middleware/batch/sqsvisibility
	github.com/sqsonce/sqsonce/middleware/idempotency/dynamostore => ../../../middleware/idempotency/dynamostore
	github.com/sqsonce/sqsonce/middleware/idempotency/pgstore => ../../../middleware/idempotency/pgstore
	github.com/sqsonce/sqsonce/middleware/idempotency/redisstore => ../../../middleware/idempotency/redisstore
	github.com/sqsonce/sqsonce/middleware/idempotency/storetest/linearize => ../../../middleware/idempotency/storetest/linearize
	github.com/sqsonce/sqsonce/middleware/lambdaenv => ../../../middleware/lambdaenv
	github.com/sqsonce/sqsonce/middleware/lambdaenv/envvars => ../../../middleware/lambdaenv/envvars
	github.com/sqsonce/sqsonce/samples => ../../../samples
	github.com/sqsonce/sqsonce/test => ../../../test
	github.com/sqsonce/sqsonce/tools => ../../../tools
)

replace github.com/sqsonce/sqsonce/middleware/lambdaenv/pgenv => ../../../middleware/lambdaenv/pgenv

replace github.com/sqsonce/sqsonce/middleware/lambdaenv/redisenv => ../../../middleware/lambdaenv/redisenv

replace github.com/sqsonce/sqsonce/middleware/oteltrace => ../../../middleware/oteltrace

replace github.com/sqsonce/sqsonce/test/ownfunction/stack => ../../../test/ownfunction/stack
