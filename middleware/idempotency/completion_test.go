package idempotency_test

import (
	"context"
	"errors"
	"log/slog"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/sqsonce/sqsonce/middleware/idempotency"
	"github.com/sqsonce/sqsonce/middleware/idempotency/driver"
	"github.com/sqsonce/sqsonce/middleware/idempotency/memstore"
)

// lostResponses is a store whose first drop Completes are applied and then
// answered with an error, as when the response to a write that was applied
// is lost (a reset connection, a 5xx after the commit).
type lostResponses struct {
	*memstore.Store
	drop                atomic.Int32
	acquires, completes atomic.Int32
}

var errResponseLost = errors.New("connection reset after the write was applied")

func (s *lostResponses) Acquire(ctx context.Context, rec driver.Record, now time.Time, mode driver.ClaimMode) (driver.Record, bool, error) {
	s.acquires.Add(1)
	return s.Store.Acquire(ctx, rec, now, mode)
}

func (s *lostResponses) Complete(ctx context.Context, rec driver.Record) ([]byte, error) {
	s.completes.Add(1)
	stored, err := s.Store.Complete(ctx, rec)
	if err != nil {
		return nil, err
	}
	if s.drop.Add(-1) >= 0 {
		return nil, errResponseLost
	}
	return stored, nil
}

// TestCompletionResponseLost: the retry of a completion whose first attempt
// was applied finds its own COMPLETED record. That is this call's success:
// reported as claimed (not replayed), no extra claim, the operation's own
// result returned.
func TestCompletionResponseLost(t *testing.T) {
	store := &lostResponses{Store: memstore.New()}
	store.drop.Store(1)
	var mu sync.Mutex
	var events []idempotency.Report
	g, err := idempotency.New(idempotency.Config{
		Store: store, Namespace: "lost", Logger: slog.New(slog.DiscardHandler),
		OnOutcome: func(_ context.Context, ev idempotency.Report) {
			mu.Lock()
			defer mu.Unlock()
			events = append(events, ev)
		},
	})
	if err != nil {
		t.Fatal(err)
	}
	var runs atomic.Int32
	got, err := idempotency.Do(t.Context(), g, idempotency.Raw([]byte(`"k"`)), func(context.Context) (string, error) {
		runs.Add(1)
		return "summary", nil
	})
	if err != nil || got != "summary" || runs.Load() != 1 {
		t.Fatalf("Do = %q, %v (runs %d); want the operation's result, once", got, err, runs.Load())
	}
	if len(events) != 1 || events[0].Outcome != idempotency.OutcomeClaimed || !events[0].Ran || events[0].Source != "" {
		t.Errorf("events = %+v, want one: claimed, ran, not replayed", events)
	}
	if a, c := store.acquires.Load(), store.completes.Load(); a != 1 || c != 2 {
		t.Errorf("store calls: %d Acquire, %d Complete; want 1 and 2 (the retried completion, and no new claim)", a, c)
	}
	rec, _ := store.Get(mustID(t, g, idempotency.Raw([]byte(`"k"`))))
	if rec.Status != driver.StatusCompleted || string(rec.Data) != `"summary"` {
		t.Errorf("record = %+v, want COMPLETED with the result", rec)
	}
}
