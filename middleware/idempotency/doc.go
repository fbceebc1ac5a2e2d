// Package idempotency makes an SQS-triggered Lambda handler idempotent: the
// operation behind an idempotency key runs at most once, and every later
// delivery of the key gets the stored result.
//
//	g, err := idempotency.New(idempotency.Config{Store: store, Namespace: "summarise"})
//	h := idempotency.Wrap(g, idempotency.BodyField("idempotency_key"), summarise)
//	lambda.StartHandlerFunc(batch.SQS(h, batch.Options{}))
//
// SQS delivers at least once: a visibility timeout that expires while a
// worker runs, a worker that crashes after the call and before the ack, the
// broker's own duplicate and a producer's re-send all deliver a request
// again. The [Guard] claims the request's key with one conditional write
// before the operation runs, with a lease, and records the result after it.
//
// # The promise
//
// For every key, across all deliveries of all messages that carry it:
//
//   - The operation runs to completion at most once while the key's record
//     lives. The one exception: a worker that dies after the operation
//     succeeded and before the record was completed; its lease then passes
//     and the work runs again. Leases are written by one worker's clock and
//     read by another's: this holds while the workers' clocks disagree by
//     less than [Config.SkewMargin] (default 5 s).
//   - Every call that succeeds returns the same stored result.
//   - A call that finds the key in progress elsewhere fails with
//     [ErrInProgress] (an [*InProgressError] telling when the holder's lease
//     ends): the message is not acknowledged, and SQS delivers it again
//     later, just after that lease end when the batch handler paces
//     redeliveries (see package batch).
//   - A store error never leads to running the operation: the call fails
//     with a [*StoreError] (fail closed).
//   - A key reused with another payload fails with [ErrPayloadMismatch] when
//     [Config.Validate] is set; it never returns the other payload's result.
//
// # Keys
//
// The key is chosen by the producer, travels in the message body and is the
// same for every retry of one decision: never the broker's message id, which
// is the same across redeliveries of one message and different for the
// producer's re-send. [BodyField] takes a producer's key; [BodyFields] takes
// a canonical subset of the fields that define the work; [FirstOf] tries one
// then the other. Key material is hashed as canonical JSON (RFC 8785) with
// SHA-256, so field order, whitespace and number spelling (0.7, 0.70, 7e-1)
// do not change a key. RFC 8785 writes numbers as IEEE 754 doubles, so an
// integer beyond ±2^53 (by size, whatever its value) and a decimal with more
// digits than a double keeps are refused rather than rounded into another
// request's key: send such ids as strings. The record id is "{Namespace}#{hex digest}". A
// message without a key fails with a [*KeyError]; the operation never runs
// unprotected.
//
// # Records and the state machine
//
// A [Record] is stored under Powertools for AWS Lambda's attribute names
// ([AttrID], [AttrStatus], [AttrExpiration], ...), so the two can share a
// table. One call:
//
//  1. [Store.Acquire] writes an INPROGRESS record in one atomic conditional
//     create, which succeeds if the key is free, its record expired, or its
//     lease passed. The lease ends at the context's deadline (the Lambda
//     invocation's), else after [Config.Lease], plus [Config.SkewMargin].
//  2. If a COMPLETED record is there, its result is returned (replayed); if
//     an INPROGRESS record with a live lease is there, [ErrInProgress].
//  3. Otherwise the operation runs. If it fails or panics, the claim is
//     released ([Store.Release], fenced by the owner token) so a retry can run
//     it; a panic becomes a [*PanicError].
//  4. The result is stored ([Store.Complete]), only if this worker still owns
//     the lease. A worker whose lease was taken over never overwrites the new
//     owner: it claims the key again, and returns the winner's result if the
//     winner completed, fails with [ErrInProgress] if the winner still runs,
//     or, if the key was freed meanwhile, records its own result under the
//     new claim.
//
// A completion that fails with a store error is retried while the deadline
// and [Config.CompleteAttempts] allow (not when it cannot succeed: see
// [Store]); a retry that finds the record completed under its own owner
// token (the first attempt was applied and its response lost) is a success,
// reported as claimed. If it still fails, the call fails with a [*StoreError] and the
// record stays INPROGRESS until its lease ends; the next delivery after that
// runs the operation again. That, and a worker that dies between the
// operation and its completion, is the documented window of the promise.
//
// Calls of one key and payload made at the same time in one process (two
// records of one batch) run once: the others wait and share the outcome
// without a store round trip. A waiting call whose own context ends stops
// waiting and fails; the run it waited for goes on. With [Config.CacheSize]
// set, completed records are also served from memory until they expire.
//
// # Writes that commit with the result
//
// An operation can [Attach] its own writes to its completion, so that the
// answer it persists and the record cannot disagree: the store commits both
// or neither (package dynamostore commits them in one DynamoDB transaction).
//
// # Expiry
//
// A record must outlive every delivery of its message: the queue's retention
// plus one visibility timeout per receive ([QueueWindow]). The default,
// [DefaultExpiresAfter], is above SQS's longest retention; [New] refuses an
// [Config.ExpiresAfter] below [Config.MinExpiry].
//
// # Observability
//
// Every call logs one line (key, message id, outcome, duration) and passes
// an [Event] to [Config.OnOutcome], for metrics.
package idempotency
