package idempotency_test

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"sync"
	"testing"
	"testing/synctest"
	"time"

	"github.com/sqsonce/sqsonce/middleware/idempotency"
	"github.com/sqsonce/sqsonce/middleware/idempotency/driver"
	"github.com/sqsonce/sqsonce/middleware/idempotency/memstore"
	"github.com/sqsonce/sqsonce/middleware/idempotency/storetest"
)

// TestKeepAliveLiveOwner: with zero keep-alive options, a live owner whose
// operation runs three times its initial lease is never taken over by a
// second guard, default or strict (the same check runs on redis-server
// and PostgreSQL in their packages).
func TestKeepAliveLiveOwner(t *testing.T) {
	storetest.KeepAliveLiveOwner(t, memstore.New())
}

// TestKeepAliveSkewedReader: the keep-alive ends an owner's context
// before a reader whose clock runs 3 s ahead (inside the default 5 s
// SkewMargin) takes its record as expired, on memstore and synctest's
// clock (dynamostore runs the same on moto).
func TestKeepAliveSkewedReader(t *testing.T) {
	for _, strict := range []bool{false, true} {
		t.Run(fmt.Sprintf("strict=%v", strict), func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) { storetest.KeepAliveSkewedReader(t, memstore.New(), strict) })
		})
	}
}

// extendStore is memstore whose Extend fails with err, or blocks until
// its context ends when block is set, and records the claim.
type extendStore struct {
	*memstore.Store
	err   error
	block bool

	mu      sync.Mutex
	claimed driver.Record
	calls   int
}

func (s *extendStore) Acquire(ctx context.Context, rec driver.Record, now time.Time, mode driver.ClaimMode) (driver.Record, bool, error) {
	prev, loaded, err := s.Store.Acquire(ctx, rec, now, mode)
	if err == nil && !loaded {
		s.mu.Lock()
		s.claimed = rec
		s.mu.Unlock()
	}
	return prev, loaded, err
}

func (s *extendStore) Extend(ctx context.Context, rec driver.Record, now time.Time) error {
	s.mu.Lock()
	s.calls++
	s.mu.Unlock()
	if s.block {
		<-ctx.Done()
		return ctx.Err()
	}
	return s.err
}

// TestKeepAliveEndsContextBeforeLease: when an extension is refused (the
// claim lost), the operation's context ends at once; when none can be
// made (a store that fails, or hangs), it ends before the claimed lease
// would lapse. Either way its cause, and the call's error, wrap
// ErrLeaseNotExtended, and the outcome is logged with it.
func TestKeepAliveEndsContextBeforeLease(t *testing.T) {
	const (
		lease = 600 * time.Millisecond
		skew  = 50 * time.Millisecond
	)
	for _, tc := range []struct {
		name  string
		store *extendStore
		also  error // what the cause wraps besides ErrLeaseNotExtended
	}{
		{"refused", &extendStore{Store: memstore.New(), err: driver.ErrLeaseLost}, driver.ErrLeaseLost},
		{"failing", &extendStore{Store: memstore.New(), err: errors.New("throttled")}, nil},
		{"hanging", &extendStore{Store: memstore.New(), block: true}, nil},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var reports []idempotency.Report
			g, err := idempotency.New(idempotency.Config{Store: tc.store, Namespace: "keepalive", Lease: lease, SkewMargin: skew,
				Logger: slog.New(slog.DiscardHandler), OnOutcome: func(_ context.Context, r idempotency.Report) { reports = append(reports, r) }})
			if err != nil {
				t.Fatal(err)
			}
			var cause error
			var ended time.Time
			_, err = idempotency.Do(context.Background(), g, idempotency.Raw([]byte(`"k"`)), func(ctx context.Context) (int, error) {
				select {
				case <-ctx.Done():
				case <-time.After(time.Minute):
				}
				ended, cause = time.Now(), context.Cause(ctx)
				return 0, ctx.Err()
			})
			tc.store.mu.Lock()
			own, calls := tc.store.claimed.LeaseUntil.Add(-skew), tc.store.calls
			tc.store.mu.Unlock()
			if !errors.Is(cause, idempotency.ErrLeaseNotExtended) || (tc.also != nil && !errors.Is(cause, tc.also)) {
				t.Fatalf("the operation's context ended with cause %v, want ErrLeaseNotExtended (and %v)", cause, tc.also)
			}
			if !ended.Before(own) {
				t.Errorf("the operation's context ended %v after the lease it relied on", ended.Sub(own))
			}
			if calls == 0 {
				t.Error("no extension was tried")
			}
			if !errors.Is(err, idempotency.ErrLeaseNotExtended) {
				t.Errorf("the call's error %v does not wrap ErrLeaseNotExtended", err)
			}
			if len(reports) != 1 || reports[0].Outcome != idempotency.OutcomeReleased || !errors.Is(reports[0].Err, idempotency.ErrLeaseNotExtended) {
				t.Errorf("reports %+v: want one, released, with ErrLeaseNotExtended", reports)
			}
		})
	}
}

// TestKeepAliveAtLambdaDeadline: at Lambda's default 3 s timeout, with
// zero options, an operation of 2.5 s has its lease extended (to the
// claimed lease's length from each extension) and its context still ends
// a reserve before the invocation's deadline, as without keep-alive.
func TestKeepAliveAtLambdaDeadline(t *testing.T) {
	var reports []idempotency.Report
	g, err := idempotency.New(idempotency.Config{Store: memstore.New(), Namespace: "keepalive",
		Logger: slog.New(slog.DiscardHandler), OnOutcome: func(_ context.Context, r idempotency.Report) { reports = append(reports, r) }})
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Second)
	defer cancel()
	deadline, _ := ctx.Deadline()
	var opDeadline time.Time
	got, err := idempotency.Do(ctx, g, idempotency.Raw([]byte(`"k"`)), func(ctx context.Context) (int, error) {
		opDeadline, _ = ctx.Deadline()
		select {
		case <-time.After(2500 * time.Millisecond):
			return 1, nil
		case <-ctx.Done():
			return 0, context.Cause(ctx)
		}
	})
	if err != nil || got != 1 {
		t.Fatalf("Do: %v, %v", got, err)
	}
	// The reserve is a tenth of the lease, counted from the claim: just
	// under 300 ms.
	if lo, hi := deadline.Add(-300*time.Millisecond), deadline.Add(-290*time.Millisecond); opDeadline.Before(lo) || opDeadline.After(hi) {
		t.Errorf("the operation's deadline is %v before the invocation's, want the reserve (about 300 ms)", deadline.Sub(opDeadline))
	}
	if len(reports) != 1 || reports[0].Outcome != idempotency.OutcomeClaimed || reports[0].Extensions < 1 {
		t.Fatalf("reports %+v: want one, claimed, extended", reports)
	}
	t.Logf("2.5 s operation at a 3 s deadline: %d extensions", reports[0].Extensions)
}

// TestKeepAliveOff: on a store without driver.Extender, or with a
// negative KeepAliveEvery, nothing is extended and the operation's
// context ends a reserve before the claimed lease, as before keep-alive.
func TestKeepAliveOff(t *testing.T) {
	const lease = time.Second
	for _, tc := range []struct {
		name  string
		store driver.Store
		every time.Duration
	}{
		{"store without Extender", noExtender{memstore.New()}, 0},
		{"KeepAliveEvery negative", memstore.New(), -1},
	} {
		t.Run(tc.name, func(t *testing.T) {
			g, err := idempotency.New(idempotency.Config{Store: tc.store, Namespace: "keepalive", Lease: lease, KeepAliveEvery: tc.every,
				Logger: slog.New(slog.DiscardHandler)})
			if err != nil {
				t.Fatal(err)
			}
			start := time.Now()
			var cause error
			_, err = idempotency.Do(context.Background(), g, idempotency.Raw([]byte(`"k"`)), func(ctx context.Context) (int, error) {
				<-ctx.Done()
				cause = context.Cause(ctx)
				return 1, nil
			})
			took := time.Since(start)
			if err != nil || !errors.Is(cause, context.DeadlineExceeded) || took < lease-lease/10-50*time.Millisecond || took > lease {
				t.Errorf("operation ended after %v with cause %v (call err %v); want about %v, its deadline", took, cause, err, lease-lease/10)
			}
		})
	}
}

// noExtender is a store with the four methods of driver.Store only.
type noExtender struct{ s *memstore.Store }

func (n noExtender) Acquire(ctx context.Context, rec driver.Record, now time.Time, mode driver.ClaimMode) (driver.Record, bool, error) {
	return n.s.Acquire(ctx, rec, now, mode)
}
func (n noExtender) Complete(ctx context.Context, rec driver.Record) ([]byte, error) {
	return n.s.Complete(ctx, rec)
}
func (n noExtender) Release(ctx context.Context, id, owner string) error {
	return n.s.Release(ctx, id, owner)
}
func (n noExtender) Quarantine(ctx context.Context, found driver.Record, now time.Time) (driver.Record, error) {
	return n.s.Quarantine(ctx, found, now)
}

// TestKeepAliveWaiterSeesExtendedLease: a call waiting in the same process
// for a run of its key that stops at its own deadline reports the lease as
// the run's keep-alive last extended it, the one stored, not the lease
// claimed: its record's pacing comes back when the key may be free.
func TestKeepAliveWaiterSeesExtendedLease(t *testing.T) {
	const lease = 300 * time.Millisecond
	store := memstore.New()
	var extensions int
	g, err := idempotency.New(idempotency.Config{Store: store, Namespace: "waiter", Lease: lease,
		Logger: slog.New(slog.DiscardHandler), OnOutcome: func(_ context.Context, r idempotency.Report) {
			if r.Source == "" {
				extensions = r.Extensions
			}
		}})
	if err != nil {
		t.Fatal(err)
	}
	k := idempotency.Raw([]byte(`"waited for"`))
	id := mustID(t, g, k)
	started, finish, done := make(chan struct{}), make(chan struct{}), make(chan error, 1)
	go func() {
		_, err := idempotency.Do(context.Background(), g, k, func(ctx context.Context) (int, error) {
			close(started)
			select {
			case <-finish:
				return 1, nil
			case <-ctx.Done():
				return 0, context.Cause(ctx)
			}
		})
		done <- err
	}()
	<-started
	claimed, ok := store.Get(id)
	if !ok {
		t.Fatal("no record after the claim")
	}
	// The waiter stops after three times the lease: several extensions.
	wctx, cancel := context.WithTimeout(context.Background(), 3*lease)
	defer cancel()
	_, werr := idempotency.Do(wctx, g, k, func(context.Context) (int, error) {
		return 0, errors.New("ran while its key was running in this process")
	})
	stored, _ := store.Get(id)
	close(finish)
	if err := <-done; err != nil {
		t.Fatalf("the run: %v", err)
	}
	var ip *idempotency.InProgressError
	if !errors.As(werr, &ip) {
		t.Fatalf("waiter: %v, want an *InProgressError", werr)
	}
	if !ip.LeaseUntil.After(claimed.LeaseUntil.Add(lease)) {
		t.Errorf("waiter's lease end %v: want the extended lease, well after the claimed %v", ip.LeaseUntil, claimed.LeaseUntil)
	}
	// An extension may land between the waiter's end and the read.
	if ip.LeaseUntil.After(stored.LeaseUntil) || ip.LeaseUntil.Before(stored.LeaseUntil.Add(-lease)) {
		t.Errorf("waiter's lease end %v: want the stored one, %v, or the one before it", ip.LeaseUntil, stored.LeaseUntil)
	}
	if extensions < 2 {
		t.Errorf("the run made %d extensions, want at least 2", extensions)
	}
}
