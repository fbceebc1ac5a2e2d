// Command summarise is the summarise Lambda function: SQS messages asking
// for a summary of a document version, each answered with one model call
// however often it is delivered.
//
//	go run ./cmd/summarise -event events/duplicate-delivery.json -repeat 2   # local: memory store, stub provider
//	GOOS=linux GOARCH=arm64 CGO_ENABLED=0 go build -tags lambda.norpc -o bootstrap ./cmd/summarise
//	# deploy bootstrap on provided.al2023 with ReportBatchItemFailures on the SQS event source
//
// # Inside Lambda
//
// With AWS_LAMBDA_RUNTIME_API set (by Lambda, or by the runtime interface
// emulator) it builds its clients once, at init, and serves
// lambda.StartHandlerFunc(rec.Batch(batch.SQS(idempotency.WrapJSON(g,
// handler.RequestKey(), h.HandleRequest, handler.RequestOptions()...),
// opts))): each body is decoded once
// into a handler.Request, which gives the key, is checked and is passed to
// the handler; records run concurrently, each idempotent on the configured
// store (DynamoDB by default), and the failed ones are returned as
// batchItemFailures. Logs (the guard's outcomes, the request log's
// "provider call" lines) are JSON on standard output, as are the EMF
// metric lines, one per batch.
//
// # Environment
//
//	SQSONCE_TABLE              idempotency table, partition key id (S), TTL on expiration; required with the
//	                           DynamoDB store (the default inside Lambda)
//	SQSONCE_SUMMARIES_TABLE    summaries table, partition key id (S); optional, DynamoDB store only: the summary
//	                           is written in the same transaction as the record's completion
//	SQSONCE_NAMESPACE          record id prefix; default "summarise"; keep it fixed across deploys
//	SQSONCE_EXPIRES_AFTER      record lifetime, a Go duration (e.g. 360h); default 15 days
//	SQSONCE_QUEUE_WINDOW       the queue's retention + maxReceiveCount × visibility timeout, a Go duration;
//	                           a shorter SQSONCE_EXPIRES_AFTER is refused at start-up
//	SQSONCE_PROVIDER           stub (default), bedrock or openai
//	SQSONCE_MODEL              model for requests that name none; default "stub-model" for the stub, none otherwise
//	SQSONCE_DOCUMENTS_BUCKET   S3 bucket of the documents; key {prefix}{id}/{version}.txt unless the request names one;
//	                           inside Lambda this or SQSONCE_DOCUMENTS_DIR is required (not both)
//	SQSONCE_DOCUMENTS_PREFIX   S3 key prefix; default none
//	SQSONCE_CONCURRENCY        records in flight per batch; default 10
//	SQSONCE_MIN_REMAINING      time that must be left before the invocation's deadline for a record to start,
//	                           a Go duration; default 90s; 0 starts records until the deadline itself
//	SQSONCE_PACING             on or off: paced redelivery of failed records (see Pacing); default on inside
//	                           Lambda, off outside (the local runner's receipt handles are not real)
//	SQSONCE_DEAD_LETTER        on or off: a message whose body does not decode or has no key goes to the queue's
//	                           dead-letter queue at once (batch.DeadLetter); default on inside Lambda, off outside
//	SQSONCE_STRICT             true or false: strict mode (idempotency.Config.Strict): a claim whose lease lapsed
//	                           with the call's outcome unknown is quarantined, never run again; default false
//	SQSONCE_SORT_KEY           the idempotency table's sort key attribute (S), for a table with a composite key
//	                           shared with Powertools (dynamostore.WithSortKey); DynamoDB store only; default none
//	SQSONCE_PARTITION_KEY      with SQSONCE_SORT_KEY: the partition key attribute; default id
//	SQSONCE_STATIC_PARTITION   with SQSONCE_SORT_KEY, required: the partition value of every record
//	                           (Powertools' static_pk_value)
//	SQSONCE_TENANCY            invocation (default), message-group or off: what scopes a record id
//	                           (idempotency.Config.Tenancy); message-group adds a fair queue's MessageGroupId
//	SQSONCE_KEY                refused when set: summarise keys by handler.RequestKey (idempotency_key, else a
//	                           digest of the work), which no key source spells; leave the construct's
//	                           Props.KeySource unset, and sqsonce-ops takes this key
//	SQSONCE_FORMAT, SQSONCE_DATA_FORMAT, SQSONCE_REDIS_KEY_PREFIX, SQSONCE_REDIS_KEY_PREFIX_UNSEPARATED,
//	SQSONCE_REDIS_CLUSTER      refused unless native, json, empty, off and off: summarise applies none, and
//	                           sqsonce-ops, which reads them, would compute other ids or read other records
//	SQSONCE_SEAL_KEY           a KMS key's ARN: results sealed under it (kmsenv); default unsealed
//	SQSONCE_METRICS_NAMESPACE  the metrics' CloudWatch namespace; default the library's
//	SQSONCE_METRICS_SERVICE    the metrics' Service dimension; default SQSONCE_NAMESPACE
//
// For local runs and tests:
//
//	SQSONCE_STORE              memory, dynamodb, redis or postgres; default dynamodb inside Lambda (memory there
//	                           catches duplicates within one execution environment only: for the emulator), memory outside
//	SQSONCE_REDIS_URL          the Redis store's server, redis://[user:password@]host:port/db (rediss:// for TLS);
//	                           required with the Redis store
//	SQSONCE_POSTGRES_URL       the PostgreSQL store's database, postgres://user:password@host:port/db?sslmode=verify-full
//	                           (without sslmode pgx checks no certificate and may fall back to plaintext); required with
//	                           the PostgreSQL store; the table "idempotency" is created there at start-up if missing
//	SQSONCE_REQUEST_LOG        request log file (JSON lines, one per provider call); default: log lines
//	SQSONCE_DYNAMODB_ENDPOINT  DynamoDB endpoint, e.g. moto's http://127.0.0.1:5000
//	SQSONCE_SQS_ENDPOINT       SQS endpoint for pacing and the dead-letter queue, e.g. moto's
//	SQSONCE_DOCUMENTS_DIR      local documents folder, {dir}/{id}/{version}.txt; default samples/documents outside Lambda
//	SQSONCE_STUB_DELAY         how long each stub call takes, a Go duration; default 0; stub provider only
//	OPENAI_BASE_URL            OpenAI-compatible base URL, e.g. https://api.openai.com/v1; required with provider openai
//	OPENAI_API_KEY             its API key; default none
//	SQSONCE_RIE                tests only: the aws-lambda-rie binary the end-to-end test runs; default
//	                           aws-lambda-rie on PATH, else in $GOPATH/bin (make test sets the one in .tools/)
//
// A bad configuration is reported in full and the process exits with
// status 2 (inside Lambda: the init fails).
//
// # Deadline margin
//
// A record is started only while at least SQSONCE_MIN_REMAINING is left
// before the invocation's deadline; a later one is reported failed without
// running and SQS redelivers it. A started record is never interrupted, so
// the margin must cover one model call (60–90 s for a long document):
// otherwise Lambda kills the invocation half way through a billed call,
// the whole batch fails, and the redelivery pays for the call again. The
// function's timeout must in turn exceed the margin, or no record ever
// starts; Lambda does not tell a function its timeout, so the app cannot
// check this at start-up: infra sets half the timeout (90s of 3m) and
// refuses a margin not below the timeout, and the app logs a warning for
// each invocation that starts with less time than the margin. The runtime
// interface emulator's timeout is AWS_LAMBDA_FUNCTION_TIMEOUT (default
// 300 s), which make invoke keeps. The local runner gives its
// invocations no deadline, so the margin does not apply there.
//
// # Pacing
//
// Inside Lambda the handler paces the redelivery of its failed records
// (batch.Options.Pacing, through sqsvisibility on an *sqs.Client built at
// init): before it returns, it changes the visibility of each failed
// record's message with ChangeMessageVisibilityBatch, so that a duplicate
// whose key is in progress elsewhere comes back just after the holder's
// lease ends (its deadline plus 5 s), any other failure after a backoff of
// 10 s doubling per receive up to 15 minutes (jittered), and a record not
// started (too little time left) at once, instead of all of them after the
// queue's visibility timeout (infra sets 6 × the function's timeout: 18
// minutes). The function's role needs sqs:ChangeMessageVisibility on the
// queue (infra grants it). A failed change is logged as a warning and
// changes no outcome. SQSONCE_PACING=off turns pacing off.
//
// # Outside Lambda
//
//	summarise -event FILE [-repeat N] [-store memory|dynamodb|redis|postgres] [-provider stub|bedrock|openai] [-v] [-metrics]
//
// invokes the same batch handler with the SQS event in FILE, N times in one
// process, prints each batch response as one JSON line and then
// "deliveries: X, provider calls: Y". The defaults need no AWS account: the
// in-memory store, the stub provider, the documents in samples/documents.
// -v logs every outcome and provider call to standard error; -metrics writes
// the EMF lines there.
package main
