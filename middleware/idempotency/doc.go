// Package idempotency makes an operation run at most once per idempotency
// key, whatever delivers its input again: an SQS message, a stream record,
// an API request. Later deliveries of the key get the stored result.
//
//	g, err := idempotency.New(idempotency.Config{Store: store, Namespace: "summarise"})
//	h := idempotency.Wrap(g, idempotency.BodyField("idempotency_key"), summarise)
//	lambda.StartHandlerFunc(batch.SQS(h, batch.Options{}))
//
// SQS delivers at least once: a visibility timeout that expires while a
// worker runs, a worker that crashes after the call and before the ack, the
// broker's duplicate and a producer's re-send all deliver a request again.
// The [Guard] claims the input's key with one conditional write, with a
// lease, before the operation runs, and stores its result after it. The
// store is a [driver.Store]: package memstore, dynamostore, redisstore or
// pgstore.
//
// # The promise
//
// For every key, across all deliveries of all inputs that carry it:
//
//  1. The operation runs to completion at most once while the key's
//     record lives, except when its worker dies, or is cut off from the
//     store, after the operation started and before the record was
//     completed, or the store does not accept the completion (a
//     [*StoreError]): the record stays in progress until its lease ends,
//     and the next delivery runs the operation again. A live worker keeps
//     its lease: the guard extends it while the operation runs
//     ([Config.KeepAliveEvery], on a store that implements
//     [driver.Extender], as every store of this module does), and when it
//     cannot, ends the operation's context ([ErrLeaseNotExtended]) before
//     the lease does. A lease ends at the invocation's deadline, or
//     [Config.Lease] after the claim or its last extension, plus
//     [Config.SkewMargin], so this holds while workers' clocks disagree by
//     less. Without keep-alive (a store without Extend, or keep-alive
//     off), a worker that outlives its lease is an exception too.
//  2. In strict mode ([Config.Strict], [Strict]) not even then: a lapsed
//     claim is quarantined ([ErrQuarantined]) until an operator releases
//     or resolves it, and no reader of the record (a default guard, an
//     older release, Powertools) takes it over.
//  3. A call succeeds only once the key's record is COMPLETED, and every
//     call that succeeds returns the same stored result; through package
//     batch, an input is acknowledged only then.
//  4. A call that finds the key in progress elsewhere fails with
//     [ErrInProgress]: its input is not acknowledged, and comes again.
//  5. A store error never leads to running the operation (fail closed).
//  6. With [WithPayload], a key reused with another payload fails with
//     [ErrPayloadMismatch]; it never returns the other payload's result.
//  7. Every valid spelling of a valid input gets the record of its compact
//     form, and no input makes a selector panic.
//
// # Keys
//
// The key is chosen by the producer, travels in the input and is the same
// for every retry of one decision: never the broker's message id, which is
// the same across redeliveries of one message and different for the
// producer's re-send. A [Selector] takes it from an input: [BodyField] a
// field of the JSON body, [BodySubset] the fields that define the work,
// [FirstOf] the first of several, [SelectorFunc] a function of your own,
// package jmespath a Powertools JMESPath expression. [Do] takes a
// [Selection] its caller holds. A [Format] turns the selection into the
// record id "{Namespace}#{digest}", scoped to the invocation's tenant when
// it has one ([Config.Tenancy]). A message without a key fails with a
// [*KeyError]: the operation never runs unprotected.
//
// # Inputs and options
//
// [Wrap] is generic over its input. [Option] values configure one wrapper.
// [WrapJSON] decodes each SQS body once into the operation's request type.
//
// # Claims
//
// One call claims its key ([driver.Store.Acquire]); finds a COMPLETED
// record and returns its result, or a live claim and fails with
// ErrInProgress; or runs the operation under a context that ends a reserve
// before the lease. A failed or panicking operation releases its claim,
// unless it returned after its lease ended (another worker may hold the
// claim, or have quarantined it); a result is stored only while the call
// still owns its lease. Calls of one
// key at the same time in one process run once and share the outcome.
//
// # Outcomes and errors
//
// Every call has one [Outcome], reported to [Config.OnOutcome] as a
// [Report] and logged once, at its level, to [Config.Logger]. The errors the
// guard returns wrap one of [*KeyError] or [*BodyError] (nothing claimed),
// [*InProgressError], [*PayloadMismatchError], [*QuarantinedError] (nothing
// ran), [*StoreError], a [*failure.PanicError], the operation's own error, an
// encoding/json error for a result that could not be encoded or decoded, a
// replay hook's error, or the context's: find it with [errors.As] or
// [errors.Is]. They tell package batch they were logged, so that a failed
// input gets the guard's line only. No line quotes an input: values are
// named by a prefix, a length and a digest.
package idempotency
