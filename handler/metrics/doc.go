// Package metrics turns the summarise app's provider requests and the
// idempotency guard's outcomes into CloudWatch metrics: one Embedded Metric
// Format (EMF) line per SQS batch, written to standard output, where
// Lambda's log stream makes them metrics without an API call.
//
//	rec, err := metrics.New(metrics.Config{Writer: os.Stdout, Service: "summarise"})
//	provider = handler.LogRequests(rec.Provider(provider), log, nil)
//	g, err := idempotency.New(idempotency.Config{..., OnOutcome: rec.Observe})
//	h := idempotency.WrapJSON(g, handler.RequestKey(), h.HandleRequest, handler.RequestOptions()...)
//	lambda.StartHandlerFunc(rec.Batch(batch.SQS(h, opts)))
//
// # Metrics
//
// Each line holds every metric, zeros included, for one batch (one Lambda
// invocation), in namespace [Config.Namespace] (default "sqsonce") with the
// one dimension Service ([Config.Service]). Every metric has unit Count.
//
//	metric                 unit   moves by one for each
//	ProviderCalls          Count  request sent to the model provider, answered or failed
//	DuplicatesSuppressed   Count  delivery answered with a stored result, without a run
//	InProgressRetried      Count  delivery handed back to SQS: its key is in progress elsewhere
//	TakenOver              Count  run that took over a lapsed lease or an expired record
//	Failed                 Count  delivery the guard failed (see below)
//	DoubleRuns             Count  run whose lease passed while it ran, and whose key another worker ran too
//	Quarantined            Count  delivery whose key strict mode quarantined, or found quarantined
//
// The line also carries "Records", the batch size, as a property (not a
// metric).
//
// # ProviderCalls
//
// [Recorder.Provider] counts each request to the provider it wraps, before
// sending it, whether it then succeeds or fails (a failed request may still
// be billed). A run that fails before any request (a document that cannot
// be fetched, no model, a request log line that cannot be written) counts
// nothing, nor does a delivery that did not run. So for a key delivered any
// number of times, ProviderCalls is 1 unless a run failed after its request
// (the claim is released and the redelivery asks again) or the documented
// window of the guard's promise was hit.
//
// # From outcomes to the other metrics
//
// [Recorder.Observe], the guard's OnOutcome hook, adds each
// idempotency.Report to at most one metric:
//
//	claimed                 (none)
//	taken_over              TakenOver
//	replayed                DuplicatesSuppressed: from the store, the cache, or a run shared in process
//	in_progress             InProgressRetried
//	failed                  Failed: a key or body error, a store error, a result that could not be stored
//	released                Failed: the operation failed and its claim was released
//	mismatch                Failed: the key was reused with another payload
//	double_run              DoubleRuns: it ran, lost its lease, and another worker's run stands
//	                        (whether that run had completed or, handed back to SQS, still ran)
//	quarantined             Quarantined: strict mode stopped the key; nothing ran
//
// Calls that waited for another call's run of the same key in process
// (Source "shared") report with Ran unset: replayed when that run
// succeeded; in_progress or mismatch when it found the key so; failed when
// it failed otherwise, or when their own context ended while they waited.
// So n records of one new key running at once count ProviderCalls 1 and
// DuplicatesSuppressed n-1, or, if the run fails after its request,
// ProviderCalls 1 and Failed n. Records the batch handler reports failed
// without starting them (too little time left before the deadline) reach
// no guard and appear in no count.
//
// # How counts find their batch
//
// [Recorder.Batch] puts a fresh counter in each invocation's context;
// [Recorder.Observe] and the provider from [Recorder.Provider] add to the
// counter of the context they are given. Nothing is kept between
// invocations.
package metrics
