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
// # How counts find their batch
//
// [Recorder.Batch] puts a fresh counter in each invocation's context;
// [Recorder.Observe], the guard's OnOutcome hook, adds to the counter of the
// context it is given. Nothing is kept between invocations.
package metrics
