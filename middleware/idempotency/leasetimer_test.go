package idempotency_test

import (
	"context"
	"log/slog"
	"sync"
	"testing"
	"testing/synctest"
	"time"

	"github.com/sqsonce/sqsonce/middleware/idempotency"
	"github.com/sqsonce/sqsonce/middleware/idempotency/driver"
	"github.com/sqsonce/sqsonce/middleware/idempotency/memstore"
)

// slowStore is memstore with a slow Acquire, and the moment of each
// Complete: a store far away, or throttled.
type slowStore struct {
	*memstore.Store
	acquireDelay time.Duration
	mu           sync.Mutex
	claimed      driver.Record // the last claim written
	completedAt  time.Time
}

func (s *slowStore) Acquire(ctx context.Context, rec driver.Record, now time.Time, mode driver.ClaimMode) (driver.Record, bool, error) {
	time.Sleep(s.acquireDelay)
	prev, loaded, err := s.Store.Acquire(ctx, rec, now, mode)
	if err == nil && !loaded {
		s.mu.Lock()
		s.claimed = rec
		s.mu.Unlock()
	}
	return prev, loaded, err
}

func (s *slowStore) Complete(ctx context.Context, rec driver.Record) ([]byte, error) {
	s.mu.Lock()
	s.completedAt = time.Now()
	s.mu.Unlock()
	return s.Store.Complete(ctx, rec)
}

// TestOperationEndsBeforeItsLease: the operation's context ends a reserve
// before its own lease end, however long the claim took, so that a result
// that arrives at the last moment is still stored before another worker can
// take the key over. The lease is counted from before the claim's write, so
// the timer must be too (issue 15, finding 12: with a 300 ms Acquire the
// operation's context ended 200 ms after its own lease end). Keep-alive
// is off: this is the lease of a store without driver.Extender.
func TestOperationEndsBeforeItsLease(t *testing.T) {
	const (
		delay = 300 * time.Millisecond
		lease = time.Second
		skew  = 100 * time.Millisecond
	)
	for _, tc := range []struct {
		name string
		ctx  func() (context.Context, context.CancelFunc)
	}{
		{"no deadline: Config.Lease", func() (context.Context, context.CancelFunc) { return context.WithCancel(context.Background()) }},
		{"the caller's deadline", func() (context.Context, context.CancelFunc) { return context.WithTimeout(context.Background(), lease) }},
	} {
		t.Run(tc.name, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				store := &slowStore{Store: memstore.New(), acquireDelay: delay}
				g, err := idempotency.New(idempotency.Config{Store: store, Namespace: "timer", Lease: lease, SkewMargin: skew,
					KeepAliveEvery: -1, Logger: slog.New(slog.DiscardHandler)})
				if err != nil {
					t.Fatal(err)
				}
				ctx, cancel := tc.ctx()
				defer cancel()
				var ends time.Time
				before := time.Now()
				_, err = idempotency.Do(ctx, g, idempotency.Raw([]byte(`"k"`)), func(ctx context.Context) (int, error) {
					ends, _ = ctx.Deadline()
					<-ctx.Done() // an operation that takes as long as it is given
					return 1, nil
				})
				if err != nil {
					t.Fatal(err)
				}
				store.mu.Lock()
				claimed, completedAt := store.claimed, store.completedAt
				store.mu.Unlock()
				// The lease this worker may rely on ends SkewMargin before the
				// stored one (another worker's clock may run that much ahead),
				// a lease after before (synctest's clock stands still until
				// the store sleeps); the reserve for completing is a tenth of
				// the lease.
				own := claimed.LeaseUntil.Add(-skew)
				if !own.Equal(before.Add(lease)) {
					t.Errorf("the lease relied on ends %v after the call, want %v", own.Sub(before), lease)
				}
				if limit := own.Add(-lease / 10); !ends.Equal(limit) {
					t.Errorf("the operation's context ends %v after its lease end minus the reserve (lease until %v, ends %v)",
						ends.Sub(limit), own.Format(time.StampMilli), ends.Format(time.StampMilli))
				}
				if !completedAt.Before(own) {
					t.Errorf("completed at %v, after the lease end %v", completedAt.Format(time.StampMilli), own.Format(time.StampMilli))
				}
			})
		})
	}
}
