// Package batch turns a function that handles one SQS message into a Lambda
// SQS handler that returns a partial batch response:
//
//	func handle(ctx context.Context, msg events.SQSMessage) (Result, error) { ... }
//
//	lambda.StartHandlerFunc(batch.SQS(handle, batch.Options{}))
//
// and does the same for Kinesis Data Streams ([Kinesis]) and DynamoDB
// Streams ([DynamoDBStream]) records (see Streams).
//
// Turn on ReportBatchItemFailures on the event source mapping: Lambda then
// deletes the records that succeeded and makes only the failed ones visible
// again. The package imports the standard library and aws-lambda-go/events
// only; it works with or without the idempotency package.
//
// # Standard queues
//
// The records of a standard queue run concurrently, at most
// [Options.Concurrency] at a time (default [DefaultConcurrency]), started in
// event order. Each record succeeds or fails on its own.
//
// # FIFO queues
//
// A record whose eventSourceARN ends in ".fifo" belongs to its message group
// (the "MessageGroupId" attribute). The records of one group run one after
// another, in event order. When one of them fails, the rest of that group in
// the batch are reported failed without being attempted, with
// [ErrGroupFailed]: SQS then redelivers them after the failed record, in
// order. Other groups carry on, concurrently up to [Options.Concurrency],
// since FIFO order holds within a group only (Powertools for AWS Lambda
// calls this skipGroupOnError). A batch that mixes queues is grouped by
// queue and group; standard records in it behave as above.
//
// # Deadline
//
// A response that reaches Lambda after the invocation's deadline is lost,
// and the whole batch is delivered again. So the handler keeps
// [Options.Reserve] (default [DefaultReserve]) free before the context's
// deadline: the records run under a context that ends then (the records'
// deadline), and the handler's own calls after the records (moves to the
// dead-letter queue, pacing's visibility changes) are made only until
// then: cut short when the records' deadline comes while they run,
// skipped when it has passed, and logged either way (see [DeadLetter] and
// [Pacing]). The handler returns by the records'
// deadline unless a record function runs past it.
//
// A record starts only if the context has no deadline or at least
// [Options.MinRemaining] is left before the records' deadline. Its zero
// value follows the invocation: a quarter of the records' window (from the
// handler's start to the records' deadline), at most [DefaultMinRemaining]
// ([MinRemainingFor]), so that Options{} runs records at Lambda's default
// timeout of 3 s. A record not started in time is reported failed with
// [ErrDeadline] and logged with the time left, the threshold and the
// window; in a FIFO group the records after it fail with
// [ErrGroupFailed]. The deadline is checked only before a record starts: a
// record that has started is never interrupted by this package (its
// context ends at the records' deadline), so MinRemaining should exceed
// the time one record takes. [Options.CheckTimeout] tells whether any
// record could start at a given function timeout. Once the context is
// canceled, records not yet started are reported failed with an error
// wrapping [context.Cause].
//
// # Streams
//
// [Kinesis] and [DynamoDBStream] run the records of a stream batch with the
// same engine, ordered by key: the records of one Kinesis partition key, or
// of one DynamoDB item (its key attributes), run one after another in event
// order, as a FIFO queue's message group does; different keys run
// concurrently, at most [StreamOptions.Concurrency] at a time. After a
// record fails, the later records of its key are reported failed without
// starting ([ErrGroupFailed]): a key's records never run out of order
// within a batch. BatchItemFailures lists the sequence numbers of the
// failed and not started records. Lambda takes the lowest as its
// checkpoint and delivers every record after it again, the records of other
// keys that succeeded included: make the record function idempotent
// (package idempotency, keyed on the record's data) so that those come
// back as replays. The deadline, panics, logs (by sequence number and event
// id) and whole-batch failure are as for SQS; there is no pacing and no
// dead-letter mover: a stream's failed records go to the event source
// mapping's on-failure destination, after its retry policy.
//
// # Failures
//
// A record's failure never fails the batch: a batch-level error would make
// every record of the batch visible again, including those that succeeded.
// A record fails when its function returns an error, panics (recovered as a
// [*PanicError] and logged with its stack; the other records are not
// affected) or is not started. BatchItemFailures lists exactly the failed
// records' messageIds, in the event's record order, and is empty, never
// nil, when all succeed.
//
// When every record of a batch failed, the handler returns a
// [*FullBatchFailureError] with the response, so that Lambda counts the
// invocation as failed and backs off, unless every failure is a retry
// ([IsRetry]: a key in progress elsewhere, and the records of its FIFO
// group behind it): a routine duplicate returns its response alone and does
// not count in the function's Errors metric. [Options.AlwaysFullBatchError]
// returns the error for retries too, as Powertools for AWS Lambda does;
// [Options.NoFullBatchError] never returns it.
//
// Every outcome reaches [Options.OnRecord]. Each failure is logged at most
// once, to [Options.Logger], with the messageId and the error, never the
// body:
//
//	record                                         level  message
//	succeeded                                      -      (none)
//	failed: its function returned an error         ERROR  batch: record failed
//	panicked                                       ERROR  batch: record panicked (with the stack)
//	not started: deadline, FIFO group, canceled    WARN   batch: record not started
//	failed with a LoggedError                      -      (none: its function logged it)
//
// The last row is how a failure is logged once when the record function
// logs its own outcomes: an error that wraps a [LoggedError] whose Logged
// reports true was logged, or deliberately not, by the function that
// returned it. The errors of package idempotency's guard are such errors,
// so a record that fails through the guard gets the guard's line only.
//
// # Permanent failures
//
// A failure no new delivery can cure is a [PermanentError] (package
// idempotency's BodyError, KeyError, PayloadMismatchError and QuarantinedError are;
// [Permanent] marks one's own). With [Options.DeadLetter] set, the handler
// moves such a message to its queue's dead-letter queue at once, through a
// [DeadLetterMover] (package sqsdlq makes it on the SQS API), instead of
// letting SQS deliver it again until maxReceiveCount. See [DeadLetter].
//
// # Pacing
//
// With [Options.Pacing] set, the handler changes the visibility of each
// failed record's message before it returns, through a [VisibilityChanger]
// (package sqsvisibility makes it on the SQS API): a record in progress
// elsewhere comes back just after the holder's lease ends, any other
// failure backs off by its receive count, and a record not started comes
// back at once. See [Pacing].
//
// The same Changer keeps the messages of the records that have not
// finished invisible while they run ([Options.KeepVisible], on whenever
// Pacing.Changer is set): every third of the records' window (833 ms at
// Lambda's default 3 s timeout; 10 s without a deadline), to the window
// from then (30 s without a deadline), so that SQS does not deliver a
// message again while the record that holds it lives. See [KeepVisible].
//
// A record with an empty messageId is still listed when it fails. Lambda
// treats an empty itemIdentifier as the failure of the whole batch, so every
// record of that batch is delivered again; nothing is lost.
package batch
