module github.com/sqsonce/sqsonce/middleware/oteltrace

go 1.26.0

toolchain go1.26.10

replace github.com/sqsonce/sqsonce => ../..

require (
	github.com/aws/aws-lambda-go v1.55.1
	github.com/sqsonce/sqsonce v0.10.0
	go.opentelemetry.io/otel v1.47.0
	go.opentelemetry.io/otel/trace v1.47.0
)

require (
	github.com/cespare/xxhash/v2 v2.3.0 // indirect
	github.com/go-logr/logr v1.4.4 // indirect
	github.com/go-logr/stdr v1.2.2 // indirect
	github.com/hashicorp/golang-lru/v2 v2.0.7 // indirect
	go.opentelemetry.io/auto/sdk v1.2.1 // indirect
	go.opentelemetry.io/otel/log v1.47.0 // indirect
	go.opentelemetry.io/otel/metric v1.47.0 // indirect
)

replace github.com/sqsonce/sqsonce/cmd/sqsonce-esm => ../../cmd/sqsonce-esm

replace github.com/sqsonce/sqsonce/cmd/sqsonce-ops => ../../cmd/sqsonce-ops

replace github.com/sqsonce/sqsonce/cmd/summarise => ../../cmd/summarise

replace github.com/sqsonce/sqsonce/events => ../../events

replace github.com/sqsonce/sqsonce/handler => ../../handler

replace github.com/sqsonce/sqsonce/infra => ../../infra

replace github.com/sqsonce/sqsonce/internal/testenv/esm => ../../internal/testenv/esm

replace github.com/sqsonce/sqsonce/internal/testenv/pgserver => ../../internal/testenv/pgserver

replace github.com/sqsonce/sqsonce/middleware/batch/sqsdlq => ../batch/sqsdlq

replace github.com/sqsonce/sqsonce/middleware/batch/sqsvisibility => ../batch/sqsvisibility

replace github.com/sqsonce/sqsonce/middleware/idempotency/dynamostore => ../idempotency/dynamostore

replace github.com/sqsonce/sqsonce/middleware/idempotency/pgstore => ../idempotency/pgstore

replace github.com/sqsonce/sqsonce/middleware/idempotency/redisstore => ../idempotency/redisstore

replace github.com/sqsonce/sqsonce/middleware/idempotency/storetest/linearize => ../idempotency/storetest/linearize

replace github.com/sqsonce/sqsonce/middleware/lambdaenv => ../lambdaenv

replace github.com/sqsonce/sqsonce/middleware/lambdaenv/envvars => ../lambdaenv/envvars

replace github.com/sqsonce/sqsonce/middleware/lambdaenv/pgenv => ../lambdaenv/pgenv

replace github.com/sqsonce/sqsonce/middleware/lambdaenv/redisenv => ../lambdaenv/redisenv

replace github.com/sqsonce/sqsonce/samples => ../../samples

replace github.com/sqsonce/sqsonce/test => ../../test

replace github.com/sqsonce/sqsonce/test/ownfunction/stack => ../../test/ownfunction/stack

replace github.com/sqsonce/sqsonce/tools => ../../tools
