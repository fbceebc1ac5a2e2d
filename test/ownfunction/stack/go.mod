module example.com/orders/stack

go 1.26.0

toolchain go1.26.10

require (
	github.com/aws/aws-cdk-go/awscdk/v2 v2.276.0
	github.com/aws/jsii-runtime-go v1.142.0
)

require github.com/aws/constructs-go/constructs/v10 v10.8.1 // indirect

require (
	github.com/Masterminds/semver/v3 v3.5.0 // indirect
	github.com/aws/aws-lambda-go v1.55.1 // indirect
	github.com/cdklabs/awscdk-asset-awscli-go/awscliv1/v2 v2.2.292 // indirect
	github.com/cdklabs/awscdk-asset-node-proxy-agent-go/nodeproxyagentv6/v2 v2.1.3 // indirect
	github.com/cdklabs/cloud-assembly-schema-go/awscdkcloudassemblyschema/v55 v55.3.0 // indirect
	github.com/fatih/color v1.19.0 // indirect
	github.com/hashicorp/golang-lru/v2 v2.0.7 // indirect
	github.com/mattn/go-colorable v0.1.14 // indirect
	github.com/mattn/go-isatty v0.0.24 // indirect
	github.com/sqsonce/sqsonce v0.10.0 // indirect
	github.com/sqsonce/sqsonce/middleware/lambdaenv/envvars v0.10.0 // indirect
	github.com/yuin/goldmark v1.7.16 // indirect
	golang.org/x/lint v0.0.0-20241112194109-818c5a804067 // indirect
	golang.org/x/mod v0.42.0 // indirect
	golang.org/x/sync v0.25.0 // indirect
	golang.org/x/sys v0.49.0 // indirect
	golang.org/x/telemetry v0.0.0-20261009151841-97e8ea77aa2a // indirect
	golang.org/x/tools v0.52.0 // indirect
	golang.org/x/tools/cmd/godoc v0.1.0-deprecated // indirect
	golang.org/x/tools/godoc v0.1.0-deprecated // indirect
)

require github.com/sqsonce/sqsonce/infra v0.10.0

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
	github.com/sqsonce/sqsonce/middleware/batch/sqsdlq => ../../../middleware/batch/sqsdlq
	github.com/sqsonce/sqsonce/middleware/batch/sqsvisibility => ../../../middleware/batch/sqsvisibility
	github.com/sqsonce/sqsonce/middleware/idempotency/dynamostore => ../../../middleware/idempotency/dynamostore
	github.com/sqsonce/sqsonce/middleware/idempotency/pgstore => ../../../middleware/idempotency/pgstore
	github.com/sqsonce/sqsonce/middleware/idempotency/redisstore => ../../../middleware/idempotency/redisstore
	github.com/sqsonce/sqsonce/middleware/idempotency/storetest/linearize => ../../../middleware/idempotency/storetest/linearize
	github.com/sqsonce/sqsonce/middleware/lambdaenv => ../../../middleware/lambdaenv
	github.com/sqsonce/sqsonce/middleware/lambdaenv/envvars => ../../../middleware/lambdaenv/envvars
	github.com/sqsonce/sqsonce/samples => ../../../samples
	github.com/sqsonce/sqsonce/test => ../..
	github.com/sqsonce/sqsonce/tools => ../../../tools
)

replace github.com/sqsonce/sqsonce/middleware/lambdaenv/pgenv => ../../../middleware/lambdaenv/pgenv

replace github.com/sqsonce/sqsonce/middleware/lambdaenv/redisenv => ../../../middleware/lambdaenv/redisenv

replace github.com/sqsonce/sqsonce/middleware/oteltrace => ../../../middleware/oteltrace
