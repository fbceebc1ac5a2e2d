module github.com/sqsonce/sqsonce/middleware/idempotency/storetest/linearize

go 1.26.0

toolchain go1.26.10

require github.com/anishathalye/porcupine v1.3.1

replace (
	github.com/sqsonce/sqsonce => ../../../..
	github.com/sqsonce/sqsonce/cmd/sqsonce-esm => ../../../../cmd/sqsonce-esm
	github.com/sqsonce/sqsonce/cmd/sqsonce-ops => ../../../../cmd/sqsonce-ops
	github.com/sqsonce/sqsonce/cmd/summarise => ../../../../cmd/summarise
	github.com/sqsonce/sqsonce/events => ../../../../events
	github.com/sqsonce/sqsonce/handler => ../../../../handler
	github.com/sqsonce/sqsonce/infra => ../../../../infra
	github.com/sqsonce/sqsonce/internal/testenv/esm => ../../../../internal/testenv/esm
	github.com/sqsonce/sqsonce/internal/testenv/pgserver => ../../../../internal/testenv/pgserver
	github.com/sqsonce/sqsonce/middleware/batch/sqsdlq => ../../../batch/sqsdlq
	github.com/sqsonce/sqsonce/middleware/batch/sqsvisibility => ../../../batch/sqsvisibility
	github.com/sqsonce/sqsonce/middleware/idempotency/dynamostore => ../../dynamostore
	github.com/sqsonce/sqsonce/middleware/idempotency/pgstore => ../../pgstore
	github.com/sqsonce/sqsonce/middleware/idempotency/redisstore => ../../redisstore
	github.com/sqsonce/sqsonce/middleware/lambdaenv => ../../../lambdaenv
	github.com/sqsonce/sqsonce/middleware/lambdaenv/envvars => ../../../lambdaenv/envvars
	github.com/sqsonce/sqsonce/samples => ../../../../samples
	github.com/sqsonce/sqsonce/test => ../../../../test
	github.com/sqsonce/sqsonce/tools => ../../../../tools
)

replace github.com/sqsonce/sqsonce/middleware/lambdaenv/pgenv => ../../../lambdaenv/pgenv

replace github.com/sqsonce/sqsonce/middleware/lambdaenv/redisenv => ../../../lambdaenv/redisenv

replace github.com/sqsonce/sqsonce/middleware/oteltrace => ../../../oteltrace

replace github.com/sqsonce/sqsonce/test/ownfunction/stack => ../../../../test/ownfunction/stack
