package idempotency_test

import (
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"strconv"
	"testing"
	"time"

	"github.com/aws/aws-lambda-go/events"

	"github.com/sqsonce/sqsonce/middleware/batch"
	"github.com/sqsonce/sqsonce/middleware/idempotency"
	"github.com/sqsonce/sqsonce/middleware/idempotency/driver"
	"github.com/sqsonce/sqsonce/middleware/idempotency/memstore"
)

var update = flag.Bool("update", false, "rewrite testdata/*.golden from the current output")

// TestBatchMixedGolden drives Wrap through batch.SQS with one record of each
// kind and compares the partial batch response with a golden file.
func TestBatchMixedGolden(t *testing.T) {
	store := memstore.New()
	g, err := idempotency.New(idempotency.Config{Store: store, Namespace: "golden", Logger: slog.New(slog.DiscardHandler)})
	if err != nil {
		t.Fatal(err)
	}
	keyFn := idempotency.BodyField("idempotency_key")
	var calls []string
	handler := batch.SQS(idempotency.Wrap(g, keyFn, func(_ context.Context, m events.SQSMessage) (string, error) {
		calls = append(calls, m.MessageId)
		var body struct{ Action string }
		_ = json.Unmarshal([]byte(m.Body), &body)
		switch body.Action {
		case "fail":
			return "", errors.New("model unavailable")
		case "panic":
			panic("bad document")
		}
		return "summary", nil
	}), batch.Options{Concurrency: 1, Logger: slog.New(slog.DiscardHandler)})

	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	// Earlier deliveries: one completed key, one held by another worker.
	m := func(s string) events.SQSMessage { return events.SQSMessage{Body: `{"idempotency_key":"` + s + `"}`} }
	earlier := idempotency.Wrap(g, keyFn, func(context.Context, events.SQSMessage) (string, error) { return "stored summary", nil })
	if _, err := earlier(ctx, m("done")); err != nil {
		t.Fatal(err)
	}
	busy, _ := idempotency.Select(keyFn, m("busy"))
	busyID, err := g.ID(busy)
	if err != nil {
		t.Fatal(err)
	}
	store.Put(driver.Record{ID: busyID, Status: driver.StatusInProgress,
		ExpiresAt: time.Now().Add(time.Hour), LeaseUntil: time.Now().Add(time.Hour), Owner: "another-instance"})

	var event events.SQSEvent
	readJSON(t, "testdata/mixed-batch.json", &event)
	resp, err := handler(ctx, event)
	if err != nil {
		t.Fatalf("batch-level error %v: per-record failures must not fail the batch", err)
	}
	got, _ := json.MarshalIndent(resp, "", "  ")
	golden(t, "testdata/mixed-batch.golden", append(got, '\n'))
	if fmt.Sprint(calls) != "[fresh fails panics]" {
		t.Errorf("operation ran for %v, want [fresh fails panics]: never for a replay, an in-progress key or a missing key", calls)
	}
}

func readJSON(t *testing.T, path string, v any) {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	if err := json.Unmarshal(b, v); err != nil {
		t.Fatalf("%s: %v", path, err)
	}
}

func golden(t *testing.T, path string, got []byte) {
	t.Helper()
	if *update {
		if err := os.WriteFile(path, got, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	want, err := os.ReadFile(filepath.Clean(path))
	if err != nil {
		t.Fatalf("%v (run go test -update to create it)", err)
	}
	if string(got) != string(want) {
		t.Errorf("%s differs:\ngot:\n%s\nwant:\n%s", path, got, want)
	}
}

// benchEvent is a batch of n records with keys unique to iteration i.
func benchEvent(ev *events.SQSEvent, i, n int) {
	ev.Records = ev.Records[:0]
	var buf []byte
	for r := range n {
		buf = append(buf[:0], `{"idempotency_key":"k-`...)
		buf = strconv.AppendInt(buf, int64(i), 10)
		buf = append(buf, '-')
		buf = strconv.AppendInt(buf, int64(r), 10)
		buf = append(buf, `"}`...)
		ev.Records = append(ev.Records, events.SQSMessage{MessageId: strconv.Itoa(r), Body: string(buf)})
	}
}

const benchRecords = 10

func work(context.Context, events.SQSMessage) (string, error) { return "summary", nil }

// runBench runs batches through the handler that newHandler returns. With
// fresh, every batch carries new keys; the handler (and its store) is then
// replaced every storeSpan batches, outside the timer, so that the figure is
// the decorator's and not that of an ever-growing in-memory map.
func runBench(b *testing.B, newHandler func() func(context.Context, events.SQSEvent) (events.SQSEventResponse, error), fresh bool) {
	const storeSpan = 1000
	ctx, cancel := context.WithTimeout(context.Background(), time.Hour)
	defer cancel()
	h := newHandler()
	ev := events.SQSEvent{Records: make([]events.SQSMessage, 0, benchRecords)}
	benchEvent(&ev, 0, benchRecords)
	b.ReportAllocs()
	b.ResetTimer()
	for i := 0; b.Loop(); i++ {
		if fresh {
			if i > 0 && i%storeSpan == 0 {
				b.StopTimer()
				h = newHandler()
				b.StartTimer()
			}
			benchEvent(&ev, i, benchRecords)
		}
		resp, err := h(ctx, ev)
		if err != nil || len(resp.BatchItemFailures) != 0 {
			b.Fatalf("batch failed: %v %v", err, resp.BatchItemFailures)
		}
	}
	b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N*benchRecords), "ns/record")
}

func benchGuard(b *testing.B, cacheBytes int) *idempotency.Guard {
	g, err := idempotency.New(idempotency.Config{
		Store: memstore.New(), Namespace: "bench", CacheBytes: cacheBytes,
		Logger: slog.New(slog.DiscardHandler),
	})
	if err != nil {
		b.Fatal(err)
	}
	return g
}

var benchOpts = batch.Options{Concurrency: 1, Logger: slog.New(slog.DiscardHandler)}

// BenchmarkBare is batch.SQS without idempotency: the baseline.
func BenchmarkBare(b *testing.B) {
	runBench(b, func() func(context.Context, events.SQSEvent) (events.SQSEventResponse, error) {
		return batch.SQS(work, benchOpts)
	}, true)
}

// BenchmarkIdempotent is the same batch through Wrap on memstore. Its
// sub-benchmarks are a first delivery of every record (claim, run,
// complete), a redelivery (replayed from the store) and a redelivery with
// the local cache on.
func BenchmarkIdempotent(b *testing.B) {
	key := idempotency.BodyField("idempotency_key")
	handler := func(cacheBytes int) func() func(context.Context, events.SQSEvent) (events.SQSEventResponse, error) {
		return func() func(context.Context, events.SQSEvent) (events.SQSEventResponse, error) {
			return batch.SQS(idempotency.Wrap(benchGuard(b, cacheBytes), key, work), benchOpts)
		}
	}
	b.Run("first", func(b *testing.B) { runBench(b, handler(0), true) })
	b.Run("replay", func(b *testing.B) { runBench(b, handler(0), false) })
	b.Run("replay-cached", func(b *testing.B) { runBench(b, handler(1<<20), false) })
}
