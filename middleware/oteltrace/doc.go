// Package oteltrace traces an idempotent Lambda function with OpenTelemetry:
// one span per SQS, Kinesis or DynamoDB stream record, that says what the
// idempotency guard decided for it; an SQS record's is linked to its
// producer (stream records carry no producer's trace context).
//
//	g, err := idempotency.New(oteltrace.Instrument(cfg, oteltrace.WithTracerProvider(tp)))
//	lambda.StartHandlerFunc(oteltrace.SQS(idempotency.Wrap(g, key, summarise), batch.Options{}, oteltrace.WithTracerProvider(tp)))
//
// SQS replaces batch.SQS (Kinesis and DynamoDBStream their batch
// counterparts; Wrap any other function), and Instrument the guard's
// Config. Without WithTracerProvider the global provider is used.
//
// # Spans
//
// One trace per invocation, by OpenTelemetry's semantic conventions for AWS
// Lambda and messaging:
//
//   - the invocation (SERVER, named after the function; faas.invocation_id,
//     cloud.account.id, aws.lambda.invoked_arn), a child of the trace
//     context Lambda gives the invocation (X-Ray's, from the context, or
//     _X_AMZN_TRACE_ID for a context without the header at one invocation
//     at a time), so that it is sampled as X-Ray sampled it. When the
//     context already holds a span of this process (otellambda's), that span
//     stands for the invocation and none is added;
//   - the batch, "<queue> process" (CONSUMER; faas.trigger pubsub,
//     messaging.system aws_sqs, messaging.operation.type process), linked to
//     every record's producer;
//   - one span per record, "<queue> process" (CONSUMER; messaging.message.id,
//     messaging.destination.name), linked, not parented, to its producer's
//     context: the AWSTraceHeader system attribute (X-Ray's format) and a
//     traceparent message attribute (W3C's), each when present: a link
//     holds the producer's trace id, span id and flags, not its tracestate,
//     a message attribute's value like any other. The guard's
//     decision is on it: sqsonce.outcome (claimed, taken_over, replayed,
//     in_progress, mismatch, released, failed, double_run, quarantined),
//     sqsonce.source (store, cache or shared for a replay), sqsonce.ran,
//     sqsonce.record_id (the namespace and the key's digest, never the key),
//     sqsonce.lease_until and sqsonce.extensions, and an event per store
//     call ("sqsonce.store acquire", complete, release, quarantine, extend)
//     with its latency (sqsonce.store.ms) and result;
//   - under it, the operation ("sqsonce.operation"), present only when the
//     operation ran in this delivery.
//
// A record that failed has an error status and error.type, its error's
// class: a sentinel's name (idempotency.ErrInProgress) or the error's Go
// type (*idempotency.KeyError), never the error's text, which an operation's
// error could take from the message. No span holds a key, a body or a
// message attribute's value.
//
// The operation's context carries its span, so the spans of the clients it
// calls (otelaws, otelhttp) nest under it.
//
// # Export
//
// Any exporter of the OpenTelemetry SDK: the ADOT collector layer listens on
// OTLP at localhost:4318, and otlptracehttp sends there by default. When the
// provider (WithTracerProvider's, else the global one, set before or after
// the handler is built) can ForceFlush (the SDK's can), every invocation
// flushes it before it returns, since Lambda freezes the environment
// between invocations. Under an outer span of this process
// (otellambda's, or one of your own) it flushes the spans made here; the
// outer span ends after, and its instrumentation flushes it (otellambda's
// WithFlusher). Wrap called under a span of this process is no invocation
// and does not flush.
//
// The flush does not take the time batch keeps before the invocation's
// deadline to return the response (the reserve: batch.Options.Reserve for
// SQS, batch.StreamOptions.Reserve for Kinesis and DynamoDBStream,
// batch.DefaultReserve when zero and for Wrap): it ends half the reserve
// before the deadline, cut short if the exporter has not
// finished (a slow or stuck collector), and is skipped if that moment has
// passed, each reported to otel.Handle. At least half the reserve is left
// to return the response; the spans not sent are lost, or sent by a later
// flush. Raise the reserve to give the flush more time.
//
// An invocation X-Ray did not sample (Sampled=0) records nothing, flushes
// nothing, and costs next to nothing.
package oteltrace
