// Package metrics adds the summarise app's own metric, ProviderCalls, to
// the library's EMF lines (package middleware/metrics: the guard's outcomes
// and the batch handler's records, which infra's construct alarms on): one
// Embedded Metric Format line per SQS batch, written to standard output.
//
//	rec, err := metrics.New(metrics.Config{Writer: os.Stdout, Service: "summarise"})
//	provider = handler.LogRequests(rec.Provider(provider), log, nil)
//	rec.Instrument(&cfg, &opts) // idempotency.Config, batch.Options
//	g, err := idempotency.New(cfg)
//	h := idempotency.WrapJSON(g, handler.RequestKey(), h.HandleRequest, handler.RequestOptions()...)
//	lambda.StartHandlerFunc(rec.Batch(batch.SQS(h, opts)))
//
// Each line holds the library's metrics (see middleware/metrics), then
// ProviderCalls, in the library's namespace with the one dimension
// Service ([Config.Service], default "summarise").
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
// # How counts find their batch
//
// The library's Recorder.Batch puts a fresh counter in each invocation's
// context; the provider from [Recorder.Provider] adds to the counter of
// the context it is given, as the library's hooks do. A request made
// outside a batch is counted in a line of its own.
package metrics
