// Command infra is the CDK app that deploys the summarise function of
// sqsonce: an SQS queue and its dead-letter queue, the consumer function with
// partial batch responses, its DynamoDB idempotency table, the summaries
// table and the documents bucket.
//
//	make -C .. build          # build/bootstrap.zip
//	make deploy               # cdk deploy, CDK CLI pinned in cdk-cli/package.json
//	make destroy              # cdk destroy; the tables, bucket and log group are retained
//	make test                 # go test ./... and cfn-lint on the template
//
// # Settings
//
// Every setting is a CDK context value: -c key=value on the command line,
// or the "context" of cdk.json. README.md lists them with their defaults.
// The queue's figures and the record expiry come from package
// idempotentconsumer, which derives the expiry from the queue it creates.
//
// # Local invocation
//
// The function has the fixed logical id SummariseFunction, so from the
// repository's root
//
//	sam local invoke -t infra/cdk.out/Sqsonce.template.json SummariseFunction -e events/duplicate-delivery.json --env-vars events/env/stub.json
//
// runs it under SAM (which needs Docker); make invoke takes the same files.
//
// # On moto_server
//
// make bootstrap, deploy, diff and destroy with ENDPOINT=http://127.0.0.1:PORT
// target a moto_server instead of AWS; make deploy-local at the root does
// that from a test.
package main
