// Command minimal is the smallest idempotent SQS handler: a per-record
// function wrapped with the guard and the batch decorator. The body's
// "idempotency_key" is the key; the work runs once per key and every later
// delivery gets the stored result.
//
//	GOOS=linux GOARCH=arm64 CGO_ENABLED=0 go build -tags lambda.norpc -o bootstrap ./samples/minimal
//
// With SQSONCE_TABLE set, lambdaenv.Load reads the construct's variables
// (SQSONCE_NAMESPACE, default "minimal" here; the expiry; strict mode;
// SQSONCE_MIN_REMAINING) and the records are in that DynamoDB table
// (partition key "id", TTL on "expiration"), with the metrics the
// construct's alarms watch written to standard output; without it they
// are in memory, which
// protects against duplicates within one execution environment only. The
// AWS SDK's own settings apply: AWS_ENDPOINT_URL_DYNAMODB points it at a
// local server such as moto_server.
//
// Outside Lambda, given an SQS event file, it runs that one batch and
// prints the partial batch response:
//
//	SQSONCE_TABLE=idempotency go run ./samples/minimal events/duplicate-delivery.json
package main
