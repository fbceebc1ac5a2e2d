package oteltrace_test

import (
	"context"
	"errors"
	"net/http"
	"net/http/httptest"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/aws/aws-lambda-go/events"
	"go.opentelemetry.io/otel"
	"go.opentelemetry.io/otel/exporters/otlp/otlptrace/otlptracehttp"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/sdk/trace/tracetest"

	"github.com/sqsonce/sqsonce/middleware/batch"
	"github.com/sqsonce/sqsonce/middleware/idempotency"
	"github.com/sqsonce/sqsonce/middleware/idempotency/memstore"
	"github.com/sqsonce/sqsonce/middleware/oteltrace"
)

// stuckProcessor is a span processor whose exporter's collector is stuck:
// ForceFlush returns only when its context ends. It counts the flushes.
type stuckProcessor struct{ flushes atomic.Int32 }

func (*stuckProcessor) OnStart(context.Context, sdktrace.ReadWriteSpan) {}
func (*stuckProcessor) OnEnd(sdktrace.ReadOnlySpan)                     {}
func (*stuckProcessor) Shutdown(context.Context) error                  { return nil }
func (p *stuckProcessor) ForceFlush(ctx context.Context) error {
	p.flushes.Add(1)
	<-ctx.Done()
	return ctx.Err()
}

// otelErrors collects what reaches otel.Handle until t ends (the global
// error handler, restored then): the flushes' errors, which would
// otherwise be logged.
func otelErrors(t *testing.T) func() []error {
	t.Helper()
	var mu sync.Mutex
	var errs []error
	prev := otel.GetErrorHandler()
	otel.SetErrorHandler(otel.ErrorHandlerFunc(func(err error) {
		mu.Lock()
		errs = append(errs, err)
		mu.Unlock()
	}))
	t.Cleanup(func() { otel.SetErrorHandler(prev) })
	return func() []error {
		mu.Lock()
		defer mu.Unlock()
		return append([]error(nil), errs...)
	}
}

// slack is how late past the moment a flush must end the handler may
// return, for the timer and the scheduler (under -race too).
const slack = 100 * time.Millisecond

// guardedSQS is an idempotent SQS handler traced on tp.
func guardedSQS(t *testing.T, tp *sdktrace.TracerProvider, opts batch.Options) func(context.Context, events.SQSEvent) (events.SQSEventResponse, error) {
	t.Helper()
	g, err := idempotency.New(oteltrace.Instrument(idempotency.Config{Store: memstore.New(), Namespace: "orders"}, oteltrace.WithTracerProvider(tp)))
	if err != nil {
		t.Fatal(err)
	}
	op := func(context.Context, events.SQSMessage) (string, error) { return "ok", nil }
	return oteltrace.SQS(idempotency.Wrap(g, idempotency.BodyField("key"), op), opts, oteltrace.WithTracerProvider(tp))
}

func sqsCall(h func(context.Context, events.SQSEvent) (events.SQSEventResponse, error)) func(context.Context) error {
	return func(ctx context.Context) error {
		resp, err := h(ctx, events.SQSEvent{Records: []events.SQSMessage{message("m1", `{"key":"a"}`)}})
		if err == nil && len(resp.BatchItemFailures) != 0 {
			err = errors.New("failed records")
		}
		return err
	}
}

func kinesisRecord() events.KinesisEventRecord {
	return events.KinesisEventRecord{EventID: "shardId-000000000000:1", EventSource: "aws:kinesis",
		EventSourceArn: "arn:aws:kinesis:eu-west-1:123456789012:stream/orders",
		Kinesis:        events.KinesisRecord{SequenceNumber: "1", PartitionKey: "p", Data: []byte("x")}}
}

func dynamoRecord() events.DynamoDBEventRecord {
	return events.DynamoDBEventRecord{EventID: "ev-1", EventName: "MODIFY", EventSource: "aws:dynamodb",
		EventSourceArn: "arn:aws:dynamodb:eu-west-1:123456789012:table/orders/stream/2024-01-01T00:00:00.000",
		Change: events.DynamoDBStreamRecord{SequenceNumber: "1",
			Keys: map[string]events.DynamoDBAttributeValue{"pk": events.NewStringAttribute("a")}}}
}

// TestFlushKeepsReserve: with an exporter that never answers, each
// handler still returns with at least half its reserve
// (batch.Options.Reserve, StreamOptions.Reserve, batch.DefaultReserve for
// Wrap) left before the invocation's deadline, for Lambda to receive its
// response: the flush is cut short then.
func TestFlushKeepsReserve(t *testing.T) {
	otelErrors(t)
	cases := []struct {
		name    string
		timeout time.Duration // the invocation's
		reserve time.Duration // what the handler must keep half of
		call    func(t *testing.T, tp *sdktrace.TracerProvider) func(context.Context) error
	}{
		{"SQS", 2 * time.Second, batch.DefaultReserve, func(t *testing.T, tp *sdktrace.TracerProvider) func(context.Context) error {
			return sqsCall(guardedSQS(t, tp, batch.Options{}))
		}},
		{"SQS at Lambda's default timeout", 3 * time.Second, batch.DefaultReserve, func(t *testing.T, tp *sdktrace.TracerProvider) func(context.Context) error {
			return sqsCall(guardedSQS(t, tp, batch.Options{}))
		}},
		{"SQS Reserve 1s", 3 * time.Second, time.Second, func(t *testing.T, tp *sdktrace.TracerProvider) func(context.Context) error {
			return sqsCall(guardedSQS(t, tp, batch.Options{Reserve: time.Second}))
		}},
		{"SQS under an outer span", 3 * time.Second, batch.DefaultReserve, func(t *testing.T, tp *sdktrace.TracerProvider) func(context.Context) error {
			call := sqsCall(guardedSQS(t, tp, batch.Options{}))
			return func(ctx context.Context) error {
				ctx, outer := tp.Tracer("user").Start(ctx, "my handler")
				defer outer.End()
				return call(ctx)
			}
		}},
		{"Kinesis", 3 * time.Second, batch.DefaultReserve, func(t *testing.T, tp *sdktrace.TracerProvider) func(context.Context) error {
			h := oteltrace.Kinesis(func(context.Context, events.KinesisEventRecord) (string, error) { return "ok", nil },
				batch.StreamOptions{}, oteltrace.WithTracerProvider(tp))
			return func(ctx context.Context) error {
				_, err := h(ctx, events.KinesisEvent{Records: []events.KinesisEventRecord{kinesisRecord()}})
				return err
			}
		}},
		{"DynamoDBStream Reserve 800ms", 3 * time.Second, 800 * time.Millisecond, func(t *testing.T, tp *sdktrace.TracerProvider) func(context.Context) error {
			h := oteltrace.DynamoDBStream(func(context.Context, events.DynamoDBEventRecord) (string, error) { return "ok", nil },
				batch.StreamOptions{Reserve: 800 * time.Millisecond}, oteltrace.WithTracerProvider(tp))
			return func(ctx context.Context) error {
				_, err := h(ctx, events.DynamoDBEvent{Records: []events.DynamoDBEventRecord{dynamoRecord()}})
				return err
			}
		}},
		{"Wrap", 3 * time.Second, batch.DefaultReserve, func(t *testing.T, tp *sdktrace.TracerProvider) func(context.Context) error {
			h := oteltrace.Wrap("orders", func(context.Context, string) (string, error) { return "ok", nil }, oteltrace.WithTracerProvider(tp))
			return func(ctx context.Context) error {
				_, err := h(ctx, "in")
				return err
			}
		}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			t.Parallel()
			p := &stuckProcessor{}
			tp := sdktrace.NewTracerProvider(sdktrace.WithSpanProcessor(p))
			call := c.call(t, tp)
			deadline := time.Now().Add(c.timeout)
			ctx, cancel := context.WithDeadline(context.Background(), deadline)
			defer cancel()
			if err := call(ctx); err != nil {
				t.Fatal(err)
			}
			if left := time.Until(deadline); left < c.reserve/2-slack {
				t.Errorf("returned %v before the deadline, want about Reserve/2 (%v): the flush spent the reserve", left, c.reserve/2)
			}
			if n := p.flushes.Load(); n != 1 {
				t.Errorf("%d flushes, want 1", n)
			}
		})
	}
}

// TestFlushKeepsReserveOTLP is TestFlushKeepsReserve's SQS case on the
// SDK's batch processor and the OTLP/HTTP exporter, to a collector that
// accepts the connection and does not answer for 5 s, at Lambda's default
// timeout.
func TestFlushKeepsReserveOTLP(t *testing.T) {
	otelErrors(t)
	release := make(chan struct{})
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		select {
		case <-time.After(5 * time.Second):
		case <-r.Context().Done():
		case <-release:
		}
	}))
	defer srv.Close()
	defer close(release)
	exp, err := otlptracehttp.New(context.Background(), otlptracehttp.WithEndpointURL(srv.URL+"/v1/traces"))
	if err != nil {
		t.Fatal(err)
	}
	tp := sdktrace.NewTracerProvider(sdktrace.WithBatcher(exp))
	defer func() {
		ctx, cancel := context.WithTimeout(context.Background(), 100*time.Millisecond)
		defer cancel()
		_ = tp.Shutdown(ctx)
	}()
	h := guardedSQS(t, tp, batch.Options{})
	deadline := time.Now().Add(3 * time.Second)
	ctx, cancel := context.WithDeadline(context.Background(), deadline)
	defer cancel()
	if err := sqsCall(h)(ctx); err != nil {
		t.Fatal(err)
	}
	if left := time.Until(deadline); left < batch.DefaultReserve/2-slack {
		t.Errorf("returned %v before the deadline, want about Reserve/2 (%v): the flush spent the reserve", left, batch.DefaultReserve/2)
	}
}

// TestFlushSkippedPastReserve: when the records ran past the moment the
// flush must end (half the reserve before the deadline), the handler
// skips the flush, returns at once and reports it to otel.Handle.
func TestFlushSkippedPastReserve(t *testing.T) {
	errs := otelErrors(t)
	p := &stuckProcessor{}
	tp := sdktrace.NewTracerProvider(sdktrace.WithSpanProcessor(p))
	deadline := time.Now().Add(time.Second)
	late := deadline.Add(-batch.DefaultReserve / 2 * 3 / 4) // past the flush's end, before the deadline
	h := oteltrace.SQS(func(context.Context, events.SQSMessage) (string, error) {
		time.Sleep(time.Until(late)) // a record function that ignores its context's end
		return "ok", nil
	}, batch.Options{}, oteltrace.WithTracerProvider(tp))
	ctx, cancel := context.WithDeadline(context.Background(), deadline)
	defer cancel()
	if _, err := h(ctx, events.SQSEvent{Records: []events.SQSMessage{message("m1", `{}`)}}); err != nil {
		t.Fatal(err)
	}
	if left, want := time.Until(deadline), deadline.Sub(late); left < want-slack/2 {
		t.Errorf("returned %v before the deadline, want about %v: it flushed past the reserve", left, want)
	}
	if n := p.flushes.Load(); n != 0 {
		t.Errorf("%d flushes, want none", n)
	}
	var got error
	for _, err := range errs() {
		if errors.Is(err, batch.ErrReserveReached) {
			got = err
		}
	}
	if got == nil {
		t.Errorf("otel.Handle got %v, want an error wrapping batch.ErrReserveReached", errs())
	}
}

// TestFlushUnderOuterSpan: a handler run under a span of the process (the
// user's own, or otellambda's) still flushes its spans when it returns:
// Lambda may freeze the environment right after.
func TestFlushUnderOuterSpan(t *testing.T) {
	exp := tracetest.NewInMemoryExporter()
	tp := sdktrace.NewTracerProvider(sdktrace.WithBatcher(exp, sdktrace.WithBatchTimeout(time.Hour)))
	defer func() { _ = tp.Shutdown(context.Background()) }()
	h := guardedSQS(t, tp, batch.Options{})
	ctx, outer := tp.Tracer("user").Start(context.Background(), "my handler")
	if err := sqsCall(h)(ctx); err != nil {
		t.Fatal(err)
	}
	if len(exp.GetSpans()) == 0 {
		t.Errorf("no span exported when the invocation returned: it did not flush")
	}
	outer.End()
}

// TestNoFlushUnderUnsampledOuterSpan: under a span of the process that
// was not sampled, nothing is recorded, and nothing flushed.
func TestNoFlushUnderUnsampledOuterSpan(t *testing.T) {
	p := &stuckProcessor{}
	tp := sdktrace.NewTracerProvider(sdktrace.WithSpanProcessor(p), sdktrace.WithSampler(sdktrace.NeverSample()))
	h := guardedSQS(t, tp, batch.Options{})
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Second)
	defer cancel()
	ctx, outer := tp.Tracer("user").Start(ctx, "my handler")
	defer outer.End()
	if err := sqsCall(h)(ctx); err != nil {
		t.Fatal(err)
	}
	if n := p.flushes.Load(); n != 0 {
		t.Errorf("%d flushes under an unsampled span, want none", n)
	}
}

// TestFlushOncePerInvocation: a Wrap'd function called inside a traced
// batch's records is no invocation, and does not flush: only the batch's
// handler does, once.
func TestFlushOncePerInvocation(t *testing.T) {
	exp := tracetest.NewInMemoryExporter()
	var flushes atomic.Int32
	tp := sdktrace.NewTracerProvider(sdktrace.WithSpanProcessor(countFlushes{sdktrace.NewSimpleSpanProcessor(exp), &flushes}))
	defer func() { _ = tp.Shutdown(context.Background()) }()
	inner := oteltrace.Wrap("enrich", func(context.Context, string) (string, error) { return "ok", nil }, oteltrace.WithTracerProvider(tp))
	h := oteltrace.SQS(func(ctx context.Context, m events.SQSMessage) (string, error) {
		return inner(ctx, m.Body)
	}, batch.Options{}, oteltrace.WithTracerProvider(tp))
	ctx, cancel := lambdaContext()
	defer cancel()
	ev := events.SQSEvent{Records: []events.SQSMessage{message("m1", "a"), message("m2", "b"), message("m3", "c")}}
	if _, err := h(ctx, ev); err != nil {
		t.Fatal(err)
	}
	if n := flushes.Load(); n != 1 {
		t.Errorf("%d flushes, want 1", n)
	}
	if n := len(newTree(exp.GetSpans()).named("enrich")); n != 3 {
		t.Errorf("%d enrich spans, want 3: %v", n, names(exp.GetSpans()))
	}
}

// countFlushes is a span processor that counts the flushes.
type countFlushes struct {
	sdktrace.SpanProcessor
	n *atomic.Int32
}

func (c countFlushes) ForceFlush(ctx context.Context) error {
	c.n.Add(1)
	return c.SpanProcessor.ForceFlush(ctx)
}
