// Package metrics writes the CloudWatch metrics of the idempotency guard's
// outcomes and of the batch handler's failed records as Embedded Metric
// Format (EMF) lines: one line per SQS batch (one Lambda invocation),
// written to standard output, where Lambda's log stream makes them metrics
// without an API call. They are the metrics infra's construct
// (infra/idempotentconsumer) alarms on, by this package's names,
// [DefaultNamespace] and [Dimension].
//
// One line turns them on, before the guard and the handler are built:
//
//	rec, err := metrics.New(metrics.Config{Writer: os.Stdout, Service: "orders"})
//	rec.Instrument(&cfg, &opts) // cfg idempotency.Config, opts batch.Options
//	g, err := idempotency.New(cfg)
//	lambda.StartHandlerFunc(rec.Batch(batch.SQS(idempotency.Wrap(g, key, fn), opts)))
//
// Service must be the construct's MetricsService, by default its Namespace
// (SQSONCE_NAMESPACE): middleware/lambdaenv builds the recorder so.
//
// # Metrics
//
// Each line holds every metric, zeros included, in namespace
// [Config.Namespace] (default [DefaultNamespace]) with the one dimension
// [Dimension] = [Config.Service]; every metric has unit Count. The line
// also carries "Records", the batch size, as a property (not a metric).
//
//	metric                 moves by one for each
//	DuplicatesSuppressed   delivery answered with a stored result, without a run
//	InProgressRetried      delivery handed back to SQS: its key is in progress elsewhere
//	TakenOver              run that took over a lapsed lease or an expired record
//	Failed                 delivery the guard failed: released, mismatch or failed
//	DoubleRuns             run whose lease passed while it ran, and whose key another worker ran too
//	Quarantined            delivery whose key strict mode quarantined, or found quarantined
//	RecordsFailed          record that failed, for any reason (moved to the dead-letter queue or not)
//	RecordsNotStarted      record the batch handler reported failed without starting it
//
// [Recorder.Observe] (the guard's OnOutcome) moves the first six,
// [Recorder.OnRecord] (the batch handler's OnRecord) the last two. A
// function's own counters ([Config.Counters], [Recorder.Add]) follow in the
// same line.
//
// # How counts find their batch
//
// [Recorder.Batch] puts a fresh counter in each invocation's context; the
// hooks add to the counter of the context they are given. A count made
// outside a handler wrapped by Batch is written at once in a line of its
// own. Nothing is kept between invocations, and no line names a key or
// quotes a message.
package metrics
