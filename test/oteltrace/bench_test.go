package oteltrace_test

import (
	"context"
	"log/slog"
	"strconv"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/aws/aws-lambda-go/events"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"

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
// tracing, traced but not sampled, and traced and sampled (the SDK's batch
// processor, to an exporter that drops the spans).
//
//	cd test/oteltrace && go test -run '^$' -bench BenchmarkRecord -benchmem -count 6 .
func BenchmarkRecord(b *testing.B) {
	benchmarkRecord(b, func(testing.TB) driver.Store { return memstore.New() })
}

// BenchmarkRecordDynamoDB is BenchmarkRecord on dynamostore, on a moto
// server: the CPU a function spends per record on a real store's client.
//
//	cd test/oteltrace && go test -run '^$' -bench BenchmarkRecordDynamoDB -benchmem -count 6 -cpu 1 .
func BenchmarkRecordDynamoDB(b *testing.B) {
	db := moto.DynamoDB(b)
	table := motoserver.NewTable(b, db)
	benchmarkRecord(b, func(t testing.TB) driver.Store {
		s, err := dynamostore.New(db, table)
		if err != nil {
			t.Fatal(err)
		}
		return s
	})
}

func benchmarkRecord(b *testing.B, newStore func(testing.TB) driver.Store) {
	for _, mode := range []string{"off", "unsampled", "sampled"} {
		b.Run(mode, func(b *testing.B) {
			st := &freshStore{}
			st.set(newStore(b))
			cfg := idempotency.Config{Store: st, Namespace: "orders", Logger: discardLogger()}
			var opts []oteltrace.Option
			if mode != "off" {
				sampler := sdktrace.NeverSample()
				if mode == "sampled" {
					sampler = sdktrace.AlwaysSample()
				}
				tp := sdktrace.NewTracerProvider(sdktrace.WithBatcher(discard{}), sdktrace.WithSampler(sampler))
				b.Cleanup(func() { _ = tp.Shutdown(context.Background()) })
				opts = append(opts, oteltrace.WithTracerProvider(tp))
				cfg = oteltrace.Instrument(cfg, opts...)
			}
			g, err := idempotency.New(cfg)
			if err != nil {
				b.Fatal(err)
			}
			fn := idempotency.WrapJSON(g, idempotency.BodyField("key"), func(context.Context, order, events.SQSMessage) (string, error) { return "ok", nil })
			h := batch.SQS(fn, batch.Options{})
			if mode != "off" {
				h = oteltrace.SQS(fn, batch.Options{}, opts...)
			}
			const n = 10
			ev := events.SQSEvent{Records: make([]events.SQSMessage, n)}
			seq := 0
			b.ReportAllocs()
			cpu0 := cpuTime()
			for b.Loop() {
				if seq%1000 == 0 {
					st.set(newStore(b)) // keep the live heap a function's, not the benchmark's
				}
				for i := range ev.Records {
					seq++
					m := message("m"+strconv.Itoa(i), `{"key":"k`+strconv.Itoa(seq)+`"}`)
					m.Attributes["AWSTraceHeader"] = xrayProducer
					ev.Records[i] = m
				}
				if _, err := h(context.Background(), ev); err != nil {
					b.Fatal(err)
				}
			}
			b.ReportMetric(float64((cpuTime()-cpu0).Nanoseconds())/float64(b.N*n), "cpu-ns/record")
			b.ReportMetric(0, "ns/op")
		})
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
