package oteltrace_test

import (
	"bufio"
	"context"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/aws/aws-lambda-go/events"
	"github.com/aws/aws-lambda-go/lambdacontext"
	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/credentials"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"go.opentelemetry.io/otel/attribute"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	semconv "go.opentelemetry.io/otel/semconv/v1.43.0"
	"go.opentelemetry.io/otel/trace"

	"github.com/sqsonce/sqsonce/internal/testenv/motoserver"
	"github.com/sqsonce/sqsonce/middleware/batch"
	"github.com/sqsonce/sqsonce/middleware/idempotency"
	"github.com/sqsonce/sqsonce/middleware/idempotency/driver"
	"github.com/sqsonce/sqsonce/middleware/idempotency/dynamostore"
	"github.com/sqsonce/sqsonce/middleware/idempotency/memstore"
	"github.com/sqsonce/sqsonce/middleware/oteltrace"
)

// freshStore is a store the benchmark replaces with an empty one now and
// then, so that the live heap stays as small as a function's: a memstore
// that grows without end makes every collection, and so every allocation,
// dearer.
type freshStore struct {
	cur atomic.Pointer[storeExtender]
}

type storeExtender interface {
	driver.Store
	driver.Extender
}

func (f *freshStore) set(s driver.Store) {
	se := s.(storeExtender)
	f.cur.Store(&se)
}

func (f *freshStore) Acquire(ctx context.Context, rec driver.Record, now time.Time, mode driver.ClaimMode) (driver.Record, bool, error) {
	return (*f.cur.Load()).Acquire(ctx, rec, now, mode)
}
func (f *freshStore) Complete(ctx context.Context, rec driver.Record) ([]byte, error) {
	return (*f.cur.Load()).Complete(ctx, rec)
}
func (f *freshStore) Release(ctx context.Context, id, owner string) error {
	return (*f.cur.Load()).Release(ctx, id, owner)
}
func (f *freshStore) Quarantine(ctx context.Context, found driver.Record, now time.Time) (driver.Record, error) {
	return (*f.cur.Load()).Quarantine(ctx, found, now)
}
func (f *freshStore) Extend(ctx context.Context, rec driver.Record, now time.Time) error {
	return (*f.cur.Load()).Extend(ctx, rec, now)
}

// discard is an exporter that drops what it is given.
type discard struct{}

func (discard) ExportSpans(context.Context, []sdktrace.ReadOnlySpan) error { return nil }
func (discard) Shutdown(context.Context) error                             { return nil }

// BenchmarkRecord is the cost per record of a batch of ten new keys on
// memstore (the cheapest store, so the largest share for tracing): without
// tracing (off), traced under a Lambda trace header with Sampled=0
// (unsampled) and Sampled=1 (sampled), on the SDK's default sampler. A
// sampled span goes to the SDK's BatchSpanProcessor (what an OTLP exporter,
// to the ADOT collector layer or CloudWatch, runs under:
// sdktrace.WithBatcher), flushed at the end of each invocation as the
// handler does, to an exporter that drops it. The floor arm runs the
// untraced batch, then makes the same spans, with the same links,
// attributes and events, straight with the SDK on the same provider:
// sampled over floor is what this package costs beyond the spans
// themselves.
//
//	cd test/oteltrace && go test -run '^$' -bench '^BenchmarkRecord$' -benchmem -count 4 -cpu 1 .
func BenchmarkRecord(b *testing.B) {
	benchmarkRecord(b, func(testing.TB) driver.Store { return memstore.New() }, true)
}

// BenchmarkRecordDynamoDB is BenchmarkRecord on dynamostore, on a moto
// server: the CPU a function spends per record on a real store's client.
//
//	cd test/oteltrace && go test -run '^$' -bench '^BenchmarkRecordDynamoDB$' -benchmem -count 4 -cpu 1 .
func BenchmarkRecordDynamoDB(b *testing.B) {
	db := moto.DynamoDB(b)
	table := motoserver.NewTable(b, db)
	benchmarkRecord(b, func(t testing.TB) driver.Store {
		s, err := dynamostore.New(db, table)
		if err != nil {
			t.Fatal(err)
		}
		return s
	}, false)
}

// BenchmarkRecordDynamoDBClient is BenchmarkRecordDynamoDB on a server of
// this test binary's own, in a child process, that answers every DynamoDB
// call at once with success: the CPU counted is the function's alone (the
// SDK's client, its signing, JSON and HTTP), without moto's latency and
// its noise, so that tracing's share of a real store's path is stable.
//
//	cd test/oteltrace && go test -run '^$' -bench '^BenchmarkRecordDynamoDBClient$' -benchmem -count 4 -cpu 1 .
func BenchmarkRecordDynamoDBClient(b *testing.B) {
	db := dynamodb.NewFromConfig(aws.Config{
		Region:       "us-east-1",
		Credentials:  credentials.NewStaticCredentialsProvider("test", "test", ""),
		BaseEndpoint: aws.String(fakeDynamoDB(b)),
	})
	benchmarkRecord(b, func(t testing.TB) driver.Store {
		s, err := dynamostore.New(db, "records")
		if err != nil {
			t.Fatal(err)
		}
		return s
	}, true)
}

// fakeDynamoDBEnv, set, makes the test binary a fake DynamoDB server
// (serveFakeDynamoDB) instead of running tests.
const fakeDynamoDBEnv = "OTELTRACE_FAKE_DYNAMODB"

// fakeDynamoDB starts this test binary as a fake DynamoDB in a child
// process, stopped when b ends, and returns its endpoint.
func fakeDynamoDB(b *testing.B) string {
	exe, err := os.Executable()
	if err != nil {
		b.Fatal(err)
	}
	cmd := exec.Command(exe)
	cmd.Env = append(os.Environ(), fakeDynamoDBEnv+"=1")
	cmd.Stderr = os.Stderr
	out, err := cmd.StdoutPipe()
	if err != nil {
		b.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() {
		_ = cmd.Process.Kill()
		_ = cmd.Wait()
	})
	line, err := bufio.NewReader(out).ReadString('\n')
	if err != nil {
		b.Fatalf("fake DynamoDB: no address: %v", err)
	}
	return "http://" + strings.TrimSpace(line)
}

// serveFakeDynamoDB answers every DynamoDB call with an empty success (a
// PutItem that claims, an UpdateItem that completes), on a port of its own
// that it prints first; it never returns.
func serveFakeDynamoDB() {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	fmt.Println(l.Addr())
	err = http.Serve(l, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		_, _ = io.Copy(io.Discard, r.Body)
		w.Header().Set("Content-Type", "application/x-amz-json-1.0")
		_, _ = io.WriteString(w, "{}")
	}))
	fmt.Fprintln(os.Stderr, err)
	os.Exit(1)
}

// keySeq numbers the benchmarks' keys, new in every arm and run: a
// DynamoDB table outlives an arm.
var keySeq atomic.Int64

func benchmarkRecord(b *testing.B, newStore func(testing.TB) driver.Store, floor bool) {
	modes := []string{"off", "unsampled", "sampled"}
	if floor {
		modes = append(modes, "floor")
	}
	for _, mode := range modes {
		b.Run(mode, func(b *testing.B) {
			st := &freshStore{}
			st.set(newStore(b))
			cfg := idempotency.Config{Store: st, Namespace: "orders", Logger: discardLogger()}
			// The SDK's default sampler, ParentBased(AlwaysSample): Lambda's
			// trace header decides, as X-Ray sampled the invocation.
			tp := sdktrace.NewTracerProvider(sdktrace.WithBatcher(discard{}))
			b.Cleanup(func() { _ = tp.Shutdown(context.Background()) })
			opts := []oteltrace.Option{oteltrace.WithTracerProvider(tp)}
			if mode == "unsampled" || mode == "sampled" {
				cfg = oteltrace.Instrument(cfg, opts...)
			}
			g, err := idempotency.New(cfg)
			if err != nil {
				b.Fatal(err)
			}
			fn := idempotency.WrapJSON(g, idempotency.BodyField("key"), func(context.Context, order, events.SQSMessage) (string, error) { return "ok", nil })
			h := batch.SQS(fn, batch.Options{})
			switch mode {
			case "unsampled", "sampled":
				h = oteltrace.SQS(fn, batch.Options{}, opts...)
			case "floor":
				h = floorSpans(tp, h)
			}
			sampled := "1"
			if mode == "unsampled" {
				sampled = "0"
			}
			ctx := lambdacontext.NewContext(context.Background(), &lambdacontext.LambdaContext{
				AwsRequestID:       "req-1",
				InvokedFunctionArn: "arn:aws:lambda:eu-west-1:123456789012:function:orders",
			})
			//lint:ignore SA1029 aws-lambda-go's own key
			ctx = context.WithValue(ctx, "x-amzn-trace-id", "Root="+lambdaTraceID+";Parent=463ac35c9f6413ad;Sampled="+sampled)
			const n = 10
			ev := events.SQSEvent{Records: make([]events.SQSMessage, n)}
			seq := 0
			batch := func() {
				for i := range ev.Records {
					seq++
					m := message("m"+strconv.Itoa(i), `{"key":"k`+strconv.FormatInt(keySeq.Add(1), 10)+`"}`)
					m.Attributes["AWSTraceHeader"] = xrayProducer
					ev.Records[i] = m
				}
				if _, err := h(ctx, ev); err != nil {
					b.Fatal(err)
				}
			}
			batch() // warm up: a client's first call (connections, endpoint rules) is no record's cost
			b.ReportAllocs()
			cpu0 := cpuTime()
			for b.Loop() {
				if seq%1000 == 0 {
					st.set(newStore(b)) // keep the live heap a function's, not the benchmark's
				}
				batch()
			}
			b.ReportMetric(float64((cpuTime()-cpu0).Nanoseconds())/float64(b.N*n), "cpu-ns/record")
			b.ReportMetric(0, "ns/op")
		})
	}
}

// floorSpans is h, untraced, followed by the spans a traced batch of new
// keys has, made with tp straight, in the SDK's own idiom, and nothing
// else: the invocation's (under Lambda's trace context), the batch's
// (linked to every producer) and, per record, its span (linked to its
// producer, with the same attributes, the lease, two store events and the
// decision) and the operation's; then tp is flushed.
func floorSpans(tp *sdktrace.TracerProvider, h func(context.Context, events.SQSEvent) (events.SQSEventResponse, error)) func(context.Context, events.SQSEvent) (events.SQSEventResponse, error) {
	tr := tp.Tracer("floor")
	sc := func(traceHex, spanHex string) trace.SpanContext {
		tid, _ := trace.TraceIDFromHex(traceHex)
		sid, _ := trace.SpanIDFromHex(spanHex)
		return trace.NewSpanContext(trace.SpanContextConfig{TraceID: tid, SpanID: sid, TraceFlags: trace.FlagsSampled, Remote: true})
	}
	lambda := sc(strings.ReplaceAll(lambdaTraceID[2:], "-", ""), "463ac35c9f6413ad")
	link := trace.Link{SpanContext: sc(xrayTraceID, xraySpanID), Attributes: []attribute.KeyValue{attribute.String("sqsonce.link", "AWSTraceHeader")}}
	sqs := []attribute.KeyValue{
		semconv.FaaSTriggerPubSub, semconv.MessagingSystemAWSSQS, semconv.MessagingOperationTypeProcess,
		semconv.MessagingOperationName("process"),
	}
	lease := time.Now().Add(time.Minute).UTC().Format("2006-01-02T15:04:05.000Z07:00")
	const recordID = "orders#0123456789abcdef0123456789abcdef0123456789abcdef0123456789ab"
	return func(ctx context.Context, ev events.SQSEvent) (events.SQSEventResponse, error) {
		resp, err := h(ctx, ev)
		if err != nil {
			return resp, err
		}
		ctx, inv := tr.Start(trace.ContextWithRemoteSpanContext(ctx, lambda), "lambda", trace.WithSpanKind(trace.SpanKindServer),
			trace.WithAttributes(semconv.CloudProviderAWS, semconv.FaaSTriggerPubSub, semconv.FaaSInvocationID("req-1"),
				semconv.AWSLambdaInvokedARN("arn:aws:lambda:eu-west-1:123456789012:function:orders"), semconv.CloudAccountID("123456789012")))
		links := make([]trace.Link, len(ev.Records))
		for i := range links {
			links[i] = link
		}
		bctx, bat := tr.Start(ctx, "orders process", trace.WithSpanKind(trace.SpanKindConsumer), trace.WithLinks(links...),
			trace.WithAttributes(append(sqs[:len(sqs):len(sqs)], semconv.MessagingBatchMessageCount(len(ev.Records)), semconv.MessagingDestinationName("orders"))...))
		for i := range ev.Records {
			rctx, rec := tr.Start(bctx, "orders process", trace.WithSpanKind(trace.SpanKindConsumer), trace.WithLinks(link),
				trace.WithAttributes(append(sqs[:len(sqs):len(sqs)], semconv.MessagingMessageID(ev.Records[i].MessageId), semconv.MessagingDestinationName("orders"))...))
			rec.SetAttributes(attribute.String("sqsonce.lease_until", lease))
			rec.AddEvent("sqsonce.store acquire", trace.WithAttributes(attribute.Bool("sqsonce.claimed", true), attribute.Bool("sqsonce.took_over", false), attribute.Float64("sqsonce.store.ms", 0.01)))
			_, op := tr.Start(rctx, "sqsonce.operation")
			op.End()
			rec.AddEvent("sqsonce.store complete", trace.WithAttributes(attribute.Int("sqsonce.result_bytes", 4), attribute.Float64("sqsonce.store.ms", 0.01)))
			rec.SetAttributes(attribute.String("sqsonce.outcome", "claimed"), attribute.Bool("sqsonce.ran", true), attribute.String("sqsonce.record_id", recordID))
			rec.End()
		}
		bat.SetAttributes(attribute.Int("sqsonce.failed_records", 0))
		bat.End()
		inv.End()
		return resp, tp.ForceFlush(ctx)
	}
}

func discardLogger() *slog.Logger { return slog.New(slog.DiscardHandler) }

// cpuTime is the CPU time (user and system) the process has used.
func cpuTime() time.Duration {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		return 0
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}
