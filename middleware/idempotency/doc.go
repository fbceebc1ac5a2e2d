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
// This is the one statement of what sqsonce guarantees; the README and the
// store packages link here. For every key, across all deliveries of all
// messages that carry it:
//
//   - The operation runs to completion at most once while the key's record
//     lives, with two exceptions, in both of which the record stays
//     INPROGRESS until its lease ends and the next delivery after that runs
//     the operation again:
//     (1) a worker dies, or outlives its lease, after the operation started
//     and before its record was completed (inside Lambda the lease ends at
//     the invocation's deadline, when Lambda stops the worker); leases are
//     written by one worker's clock and read by another's, so this holds
//     while the workers' clocks disagree by less than [Config.SkewMargin]
//     (default 5 s, added to every lease);
//     (2) the store does not accept the completion: it refuses it for good
//     (an attached write's condition fails, see [Attach]) or still fails
//     when [Config.CompleteAttempts] and the deadline run out; the call
//     fails with a [*StoreError].
//   - In strict mode ([Config.Strict], [Guard.Strict]) the operation
//     never starts twice for a key while its record lives: the first
//     exception becomes a quarantine. A strict call that finds the claim's
//     lease lapsed with the operation's outcome unknown does not run it; it
//     marks the record quarantined (still INPROGRESS to every reader,
//     Powertools included), and every call of the key fails with
//     [ErrQuarantined] (a [*QuarantinedError], permanent) until an operator
//     releases the record (the next delivery runs the operation) or
//     resolves it with a result, or the record expires. A strict claim is
//     written so that no reader of the record (a default guard, an earlier
//     release, Powertools) takes it over. The same clock condition holds
//     ([Config.SkewMargin]).
//   - A call succeeds only once the key's record is COMPLETED, and every
//     call that succeeds returns the same stored result. Through package
//     batch, a message is acknowledged only then.
//   - A call that finds the key in progress elsewhere fails with
//     [ErrInProgress] (an [*InProgressError] telling when the holder's lease
//     ends): the message is not acknowledged, and SQS delivers it again
//     later, just after that lease end when the batch handler paces
//     redeliveries (see package batch).
//   - A store error never leads to running the operation: the call fails
//     with a [*StoreError] (fail closed).
//   - A key reused with another payload fails with [ErrPayloadMismatch] when
//     the call validates its payload ([DoPayload], [WrapPayload],
//     [JSONBody.PayloadFunc]); it never returns the other payload's result.
//
// # Keys
//
// The key is chosen by the producer, travels in the message body and is the
// same for every retry of one decision: never the broker's message id, which
// is the same across redeliveries of one message and different for the
// producer's re-send. [BodyField] takes a producer's key, at the top of the
// body or nested in it; [BodySubset] a canonical subset of the fields that
// define the work; [FirstOf] tries one then the other; [KeyOf] makes a key
// of your own, and [RawKey] one of raw bytes. Key material is one type,
// [Key]: the JSON value selected, as the message spells it, and the name of
// its selector. [Do] takes a Key and [Wrap] a [KeyFunc] that returns one,
// so both find the same records. [Config.Format] turns it into the record
// id "{Namespace}#{digest}" ([Guard.ID]):
//
//   - [FormatNative] (the default) hashes the canonical JSON (RFC 8785) of
//     the selector and the value with SHA-256, so field order, whitespace and
//     number spelling (0.7, 0.70, 7e-1) do not change a key, and keys from
//     different selectors never collide: a producer key holding another
//     request's subset of fields does not land on that request's record.
//     RFC 8785 writes numbers as IEEE 754 doubles, so an integer beyond
//     ±2^53 (by size, whatever its value) and a decimal with more digits
//     than a double keeps are refused rather than rounded into another
//     request's key: send such ids as strings.
//   - [FormatPowertoolsPython] and [FormatPowertoolsTypeScript] are
//     Powertools for AWS Lambda's recipes, byte for byte, for sharing a table
//     with that runtime; they keep its collisions.
//
// Key material keeps one set of rules in every format, whatever selected
// it: it is I-JSON (RFC 7493: valid UTF-8, no unpaired surrogate escape
// such as \ud800, no object naming a member twice), nested at most 10,000
// levels, with no number longer than 100 characters (refused before it is
// parsed). Nothing is replaced: what breaks a rule is refused, so two
// different requests never read as one. Body selectors apply the rules to
// what they read (the members on their path, each of which must appear
// once, and the selected value); [WrapJSON] to the whole body.
// [FormatPowertoolsTypeScript] also refuses an object whose keys hold a
// character whose lower case differs between Unicode versions (see the
// format). A message without a key, or whose key breaks a rule, fails with
// a [*KeyError]; the operation never runs unprotected.
//
// # Typed requests
//
// [WrapJSON] decodes each body once into the operation's request type
// (strictly, with [JSONBody.DisallowUnknownFields], or not), takes the key,
// a well-formedness check and the validated payload from the decoded
// value, and calls the operation with it. It decodes without a loss or not
// at all: a body that does not decode, that the type would read with a
// loss (see [WrapJSON]) or that fails the check fails its message with a
// [*BodyError], before anything is claimed.
//
// # Other events
//
// [WrapEvent] makes a handler of any event type idempotent, or the
// per-record function of a stream: an API Gateway, ALB, EventBridge or
// direct-invocation handler, a Kinesis record's. [EventKeys] takes the key
// and the validated payload from the event, typed, or with a JMESPath
// expression over the whole event as Powertools evaluates eventKeyJmesPath
// (package jmespath's EventKey). A key in progress elsewhere and a key
// reused with another payload come back as an [*InProgressError] and a
// [*PayloadMismatchError], which an HTTP handler maps to 409 and 422.
// [PowertoolsTypeScriptPrefix] and [PowertoolsPythonPrefix] give the
// Namespace that shares records with a Powertools handler that has no key
// prefix.
//
// # Replay hooks
//
// [Config.ReplayHook] (Powertools' responseHook) and its typed form
// [OnReplay] see every result a call returns from a record rather than
// from its own run, and can change it: to mark a replayed HTTP response,
// say.
//
// # Payload validation
//
// A key reused for other work must not get that work's result. A call
// says, beside its key, which part of the request must be the same
// whenever the key is reused: [DoPayload], [WrapPayload] or
// [JSONBody.PayloadFunc]. Its digest is stored with the record, and a call
// whose payload differs fails with a [*PayloadMismatchError]. [Do], [Wrap]
// and a JSONBody without PayloadFunc validate nothing.
//
// # Records and the state machine
//
// A [driver.Record] is stored under Powertools for AWS Lambda's attribute names
// ([driver.AttrID], [driver.AttrStatus], [driver.AttrExpiration], ...), so the two can share a
// table. One call:
//
//  1. [driver.Store.Acquire] writes an INPROGRESS record in one atomic conditional
//     create, which succeeds if the key is free, its record expired, or its
//     lease passed. The lease ends at the context's deadline (the Lambda
//     invocation's), else after [Config.Lease], plus [Config.SkewMargin].
//  2. If a COMPLETED record is there, its result is returned (replayed); if
//     an INPROGRESS record with a live lease is there, [ErrInProgress].
//  3. Otherwise the operation runs, under a context that ends a reserve
//     before the lease (a tenth of it, at most a second), so that its result
//     can be stored in time. If it fails or panics, the claim is released
//     ([driver.Store.Release], fenced by the owner token) so a retry can run it; a
//     panic becomes a [*batch.PanicError].
//  4. The result is stored ([driver.Store.Complete]), only if this worker still owns
//     the lease. A worker whose lease was taken over never overwrites the new
//     owner: it claims the key again, and returns the winner's result if the
//     winner completed, fails with [ErrInProgress] if the winner still runs,
//     or, if the key was freed meanwhile, records its own result under the
//     new claim. In the first two cases the operation ran twice, and the
//     call's outcome says so: [OutcomeDoubleRun].
//
// A completion that fails is retried as [Config.CompleteAttempts] says; a
// retry that finds the record completed under its own owner token (the
// first attempt was applied and its response lost) is a success. If it
// still fails, that is the promise's second exception.
//
// Calls of one key and payload made at the same time in one process (two
// records of one batch) run once: the others wait and share the outcome
// without a store round trip. A waiting call whose own context ends stops
// waiting and fails; the run it waited for goes on. With [Config.CacheBytes]
// set, completed records are also served from memory, least recently used
// out first within that many bytes, until they expire.
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
// Every call passes an [Event] to [Config.OnOutcome], for metrics, and logs
// at most one line to [Config.Logger] (outcome, record_id, input_id, ran,
// duration, and the error if any), at its outcome's level:
//
//	outcome      level  meaning
//	claimed      DEBUG  the operation ran and its result was stored
//	taken_over   INFO   the same, after a lapsed lease or an expired record
//	replayed     INFO   a duplicate, answered with the stored result
//	in_progress  WARN   a duplicate while another worker runs: retried later
//	mismatch     ERROR  the key was reused with another payload
//	released     ERROR  the operation failed, or panicked (the line has the stack)
//	failed       ERROR  a key, store or encoding error
//	double_run   ERROR  the operation ran here after its lease passed, and another
//	                    worker ran it too: the other's result stands
//	quarantined  ERROR  strict mode stopped the key: an operator must act
//
// Success is below INFO, so a slog handler at INFO logs nothing for a
// first delivery that succeeds, and one line for each duplicate.
// A slog handler filters the lines (see [Outcome]). The errors the guard returns say they were logged
// (they are batch.LoggedErrors), so package batch does not log the same
// failure again: a failed record gets one line, the guard's.
//
// # Errors
//
// When [Do], [Wrap], [WrapJSON] or [WrapEvent] fail, the error they return wraps one of
// these; find it with [errors.As] (or [errors.Is] for the sentinels), not
// with a type assertion on the returned error itself:
//
//   - [*KeyError]: no key ([ErrNoKey]), or a key or payload the format
//     cannot hash; nothing was claimed.
//   - [*BodyError]: WrapJSON could not take the body as its request type;
//     nothing was claimed.
//   - [*InProgressError] ([ErrInProgress]): another worker holds the key;
//     nothing ran. Its RetryAt tells when to deliver again.
//   - [*PayloadMismatchError] ([ErrPayloadMismatch]): the key was claimed
//     with another payload; nothing ran.
//   - [*QuarantinedError] ([ErrQuarantined]): the key's record is
//     quarantined (strict mode); nothing ran.
//   - [*StoreError]: the store failed; the operation did not run (Op
//     "acquire" on the claim) or its outcome was not recorded (see [StoreError]).
//   - [*batch.PanicError]: the operation, or its result's MarshalJSON, panicked.
//   - an encoding/json error: the result could not be encoded (the record
//     was completed without it), or the stored result does not decode into
//     the result type.
//   - the operation's own error; its claim was released.
//   - a replay hook's error ([Config.ReplayHook], [OnReplay]), wrapped: the
//     stored result was not returned.
//   - the context's error, wrapped, when the context ended before the claim
//     or while the call waited for a call of its key in this process: nothing
//     was claimed.
//
// Each is logged once, by the guard, as Observability says.
//
// No line holds message content: the record id is a digest, and the key
// errors of this package describe a value they refuse by a short prefix,
// its length and a digest, never in full. A [KeyFunc] or an operation of
// your own should do the same in its errors, which the guard logs.
package idempotency
