module github.com/sqsonce/sqsonce/cmd/summarise

go 1.26.0

toolchain go1.26.10

require (
	github.com/aws/aws-lambda-go v1.55.1
	github.com/aws/aws-sdk-go-v2 v1.48.0
	github.com/aws/aws-sdk-go-v2/config v1.33.21
	github.com/aws/aws-sdk-go-v2/service/dynamodb v1.74.0
	github.com/aws/aws-sdk-go-v2/service/kms v1.63.0
	github.com/aws/aws-sdk-go-v2/service/s3 v1.114.10
	github.com/aws/aws-sdk-go-v2/service/sqs v1.53.0
	github.com/jackc/pgx/v5 v5.13.0
	github.com/redis/go-redis/v9 v9.23.0
	github.com/sqsonce/sqsonce v0.10.0
	github.com/sqsonce/sqsonce/handler v0.10.0
	github.com/sqsonce/sqsonce/internal/testenv/esm v0.10.0
	github.com/sqsonce/sqsonce/internal/testenv/motoserver v0.10.0
	github.com/sqsonce/sqsonce/internal/testenv/pgserver v0.10.0
	github.com/sqsonce/sqsonce/middleware/batch/sqsdlq v0.10.0
	github.com/sqsonce/sqsonce/middleware/batch/sqsvisibility v0.10.0
	github.com/sqsonce/sqsonce/middleware/idempotency/dynamostore v0.10.0
	github.com/sqsonce/sqsonce/middleware/idempotency/pgstore v0.10.0
	github.com/sqsonce/sqsonce/middleware/idempotency/redisstore v0.10.0
	github.com/sqsonce/sqsonce/middleware/lambdaenv v0.10.0
	github.com/sqsonce/sqsonce/middleware/lambdaenv/envvars v0.10.0
	github.com/sqsonce/sqsonce/middleware/lambdaenv/kmsenv v0.10.0
)

require (
	github.com/aws/aws-sdk-go-v2/aws/protocol/eventstream v1.7.27 // indirect
	github.com/aws/aws-sdk-go-v2/credentials v1.21.3 // indirect
	github.com/aws/aws-sdk-go-v2/feature/ec2/imds v1.20.9 // indirect
	github.com/aws/aws-sdk-go-v2/internal/configsources v1.5.12 // indirect
	github.com/aws/aws-sdk-go-v2/internal/endpoints/v2 v2.8.12 // indirect
	github.com/aws/aws-sdk-go-v2/internal/v4a v1.5.12 // indirect
	github.com/aws/aws-sdk-go-v2/service/bedrockruntime v1.63.13 // indirect
	github.com/aws/aws-sdk-go-v2/service/internal/accept-encoding v1.13.25 // indirect
	github.com/aws/aws-sdk-go-v2/service/internal/checksum v1.11.13 // indirect
	github.com/aws/aws-sdk-go-v2/service/internal/endpoint-discovery v1.13.12 // indirect
	github.com/aws/aws-sdk-go-v2/service/internal/presigned-url v1.14.12 // indirect
	github.com/aws/aws-sdk-go-v2/service/internal/s3shared v1.20.12 // indirect
	github.com/aws/aws-sdk-go-v2/service/signin v1.14.0 // indirect
	github.com/aws/aws-sdk-go-v2/service/sso v1.39.5 // indirect
	github.com/aws/aws-sdk-go-v2/service/ssooidc v1.44.5 // indirect
	github.com/aws/aws-sdk-go-v2/service/sts v1.53.0 // indirect
	github.com/aws/smithy-go v1.28.9 // indirect
	github.com/cespare/xxhash/v2 v2.3.0 // indirect
	github.com/gowebpki/jcs v1.0.2 // indirect
	github.com/hashicorp/golang-lru/v2 v2.0.7 // indirect
	github.com/jackc/pgpassfile v1.0.0 // indirect
	github.com/jackc/pgservicefile v0.0.0-20240606120523-5a60cdf6a761 // indirect
	github.com/jackc/puddle/v2 v2.2.3 // indirect
	github.com/sqsonce/sqsonce/middleware/idempotency/kmsseal v0.10.0 // indirect
	go.uber.org/atomic v1.12.0 // indirect
	golang.org/x/sync v0.25.0 // indirect
	golang.org/x/sys v0.49.0 // indirect
	golang.org/x/text v0.41.0 // indirect
)

replace (
	github.com/sqsonce/sqsonce => ../..
	github.com/sqsonce/sqsonce/cmd/sqsonce-esm => ../sqsonce-esm
	github.com/sqsonce/sqsonce/cmd/sqsonce-ops => ../sqsonce-ops
	github.com/sqsonce/sqsonce/events => ../../events
	github.com/sqsonce/sqsonce/handler => ../../handler
	github.com/sqsonce/sqsonce/infra => ../../infra
	github.com/sqsonce/sqsonce/internal/testenv/esm => ../../internal/testenv/esm
	github.com/sqsonce/sqsonce/internal/testenv/pgserver => ../../internal/testenv/pgserver
	github.com/sqsonce/sqsonce/middleware/batch/sqsdlq => ../../middleware/batch/sqsdlq
	github.com/sqsonce/sqsonce/middleware/batch/sqsvisibility => ../../middleware/batch/sqsvisibility
	github.com/sqsonce/sqsonce/middleware/idempotency/dynamostore => ../../middleware/idempotency/dynamostore
	github.com/sqsonce/sqsonce/middleware/idempotency/kmsseal => ../../middleware/idempotency/kmsseal
	github.com/sqsonce/sqsonce/middleware/idempotency/pgstore => ../../middleware/idempotency/pgstore
	github.com/sqsonce/sqsonce/middleware/idempotency/redisstore => ../../middleware/idempotency/redisstore
	github.com/sqsonce/sqsonce/middleware/idempotency/storetest/linearize => ../../middleware/idempotency/storetest/linearize
	github.com/sqsonce/sqsonce/middleware/lambdaenv => ../../middleware/lambdaenv
	github.com/sqsonce/sqsonce/middleware/lambdaenv/envvars => ../../middleware/lambdaenv/envvars
	github.com/sqsonce/sqsonce/samples => ../../samples
	github.com/sqsonce/sqsonce/test => ../../test
	github.com/sqsonce/sqsonce/tools => ../../tools
)

replace github.com/sqsonce/sqsonce/middleware/lambdaenv/pgenv => ../../middleware/lambdaenv/pgenv

replace github.com/sqsonce/sqsonce/middleware/lambdaenv/redisenv => ../../middleware/lambdaenv/redisenv

replace github.com/sqsonce/sqsonce/middleware/oteltrace => ../../middleware/oteltrace

replace github.com/sqsonce/sqsonce/test/ownfunction/stack => ../../test/ownfunction/stack

replace github.com/sqsonce/sqsonce/internal/testenv/motoserver => ../../internal/testenv/motoserver

replace github.com/sqsonce/sqsonce/middleware/lambdaenv/kmsenv => ../../middleware/lambdaenv/kmsenv
