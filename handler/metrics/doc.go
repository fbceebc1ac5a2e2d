// Package metrics turns the idempotency guard's outcomes into CloudWatch
// metrics: one Embedded Metric Format (EMF) line per SQS batch, written to
// standard output, where Lambda's log stream makes them metrics without an
// API call.
//
//	rec, err := metrics.New(metrics.Config{Writer: os.Stdout, Service: "summarise"})
//	g, err := idempotency.New(idempotency.Config{..., OnOutcome: rec.Observe})
//	lambda.StartHandlerFunc(rec.Batch(batch.SQS(idempotency.Wrap(g, key, h.Handle), opts)))
//
// # Metrics
//
// In namespace [Config.Namespace] with dimension Service, unit Count, per
// batch: [ProviderCalls] (runs of the operation), [DuplicatesSuppressed]
// (deliveries answered from a stored result), [InProgressRetried]
// (deliveries handed back to SQS because the key was in progress elsewhere),
// [TakenOver] (runs that took over a lapsed lease) and [Failed] (failed
// deliveries). See [Counts]. The batch size is the "Records" property.
//
// # From outcomes to metrics
//
// Every idempotency.Event with Ran set (the operation ran in that call)
// adds one to ProviderCalls, whatever its outcome. Each event also adds one
// to at most one outcome metric:
//
//	claimed                 (none: ProviderCalls only)
//	taken_over              TakenOver
//	replayed, Ran unset     DuplicatesSuppressed: from the store, the cache, or a run shared in process
//	replayed, Ran set       (none: it ran, lost its lease, and the winner's result stands)
//	in_progress             InProgressRetried
//	failed                  Failed
//	released                Failed
//	mismatch                Failed
//
// Calls that waited for another call's run of the same key in process
// (Source "shared") report with Ran unset: replayed when that run
// succeeded; in_progress or mismatch when it found the key so; failed when
// it failed otherwise, or when their own context ended while they waited.
// So n records of one new key running at once count ProviderCalls 1 and
// DuplicatesSuppressed n-1, or, if the run fails, ProviderCalls 1 and
// Failed n. Records the batch handler reports failed without starting them
// (too little time left before the deadline) reach no guard and appear in
// no count.
//
// # How counts find their batch
//
// [Recorder.Batch] puts a fresh counter in each invocation's context;
// [Recorder.Observe], the guard's OnOutcome hook, adds to the counter of the
// context it is given. Nothing is kept between invocations.
package metrics
