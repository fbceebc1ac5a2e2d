package idempotency_test

import (
	"context"
	"log/slog"
	"sync/atomic"
	"testing"
	"time"

	"github.com/sqsonce/sqsonce/middleware/idempotency"
	"github.com/sqsonce/sqsonce/middleware/idempotency/memstore"
)

func TestSkewMarginValidated(t *testing.T) {
	_, err := idempotency.New(idempotency.Config{Store: memstore.New(), Namespace: "n", SkewMargin: -time.Second})
	if err == nil {
		t.Fatal("New accepted a negative SkewMargin")
	}
}

// The lease end is the deadline plus the margin; the two-clock scenario is
// storetest's ClockSkewMargin, run on every store.
func TestSkewMarginCustom(t *testing.T) {
	store := memstore.New()
	now := time.Now()
	g, err := idempotency.New(idempotency.Config{Store: store, Namespace: "n", SkewMargin: 30 * time.Second,
		Now: func() time.Time { return now }, Logger: slog.New(slog.DiscardHandler)})
	if err != nil {
		t.Fatal(err)
	}
	deadline := now.Add(time.Minute)
	ctx, cancel := context.WithDeadline(t.Context(), deadline)
	defer cancel()
	var lease atomic.Value
	_, err = idempotency.Do(ctx, g, idempotency.Raw([]byte(`"k"`)), func(context.Context) (int, error) {
		rec, _ := store.Get(mustID(t, g, idempotency.Raw([]byte(`"k"`))))
		lease.Store(rec.LeaseUntil)
		return 1, nil
	})
	if err != nil {
		t.Fatal(err)
	}
	if got := lease.Load().(time.Time); !got.Equal(deadline.Add(30 * time.Second)) {
		t.Errorf("lease end %v, want the deadline plus 30s (%v)", got, deadline.Add(30*time.Second))
	}
}

// TestOperationBoundedByLease: without a deadline of its own, the operation
// runs under a context that ends a reserve (a tenth of the lease) before the
// lease does, so a live worker stops, and stores its result, before its
// claim can be taken over; with a deadline of its own, the same reserve
// before that deadline. Keep-alive is off (see TestKeepAlive* for it).
func TestOperationBoundedByLease(t *testing.T) {
	const lease = 2 * time.Second
	g, err := idempotency.New(idempotency.Config{Store: memstore.New(), Namespace: "lease", Lease: lease,
		KeepAliveEvery: -1, Logger: slog.New(slog.DiscardHandler)})
	if err != nil {
		t.Fatal(err)
	}
	start := time.Now()
	var deadline time.Time
	var hasDeadline bool
	_, err = idempotency.Do(context.Background(), g, idempotency.Raw([]byte(`"k"`)), func(ctx context.Context) (int, error) {
		deadline, hasDeadline = ctx.Deadline()
		return 1, nil
	})
	if err != nil {
		t.Fatal(err)
	}
	if !hasDeadline || deadline.Before(start.Add(lease-lease/10)) || deadline.After(time.Now().Add(lease-lease/10)) {
		t.Errorf("operation's deadline %v (set: %v), want about %v after its start", deadline, hasDeadline, lease-lease/10)
	}

	// With a deadline of its own, the caller's deadline less the reserve,
	// which is at most a second.
	ctx, cancel := context.WithTimeout(context.Background(), time.Hour)
	defer cancel()
	want, _ := ctx.Deadline()
	_, err = idempotency.Do(ctx, g, idempotency.Raw([]byte(`"k2"`)), func(ctx context.Context) (int, error) {
		deadline, hasDeadline = ctx.Deadline()
		return 1, nil
	})
	if err != nil || !hasDeadline || !deadline.Equal(want.Add(-time.Second)) {
		t.Errorf("with the caller's deadline %v: operation's %v (%v), err %v", want, deadline, hasDeadline, err)
	}
}
