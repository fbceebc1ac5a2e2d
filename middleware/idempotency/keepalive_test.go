package idempotency_test

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"strings"
	"sync"
	"testing"
	"testing/synctest"
	"time"

	"github.com/sqsonce/sqsonce/internal/invocation"
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
			synctest.Test(t, func(t *testing.T) {
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
				// On synctest's clock: the refusal ends it at the first
				// extension, the others a reserve (a tenth of the lease)
				// before the lease lapses.
				want := own.Add(-lease / 10)
				if tc.also != nil {
					want = own.Add(-lease).Add(lease / 3)
				}
				if !ended.Equal(want) {
					t.Errorf("the operation's context ended %v before the lease it relied on, want %v", own.Sub(ended), own.Sub(want))
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
		})
	}
}

// TestKeepAliveAtLambdaDeadline: at Lambda's default 3 s timeout, with
// zero options, an operation of 2.5 s has its lease extended (to the
// claimed lease's length from each extension) and its context still ends
// a reserve before the invocation's deadline, as without keep-alive.
func TestKeepAliveAtLambdaDeadline(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
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
		// The reserve is a tenth of the lease, counted from the claim: 300 ms
		// on synctest's clock, which stands still until the operation waits.
		if want := deadline.Add(-300 * time.Millisecond); !opDeadline.Equal(want) {
			t.Errorf("the operation's deadline is %v before the invocation's, want the reserve, 300 ms", deadline.Sub(opDeadline))
		}
		// Extensions every third of the lease: at 1 s and 2 s.
		if len(reports) != 1 || reports[0].Outcome != idempotency.OutcomeClaimed || reports[0].Extensions != 2 {
			t.Fatalf("reports %+v: want one, claimed, extended twice", reports)
		}
	})
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
			synctest.Test(t, func(t *testing.T) {
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
				if err != nil || !errors.Is(cause, context.DeadlineExceeded) || took != lease-lease/10 {
					t.Errorf("operation ended after %v with cause %v (call err %v); want %v, its deadline", took, cause, err, lease-lease/10)
				}
			})
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

// countingStore is memstore whose extensions are recorded (when each was
// applied) and, after ok of them, fail with a store error.
type countingStore struct {
	*memstore.Store
	ok int // extensions applied before they fail; negative: all applied

	mu      sync.Mutex
	applied []time.Time
}

func (s *countingStore) Extend(ctx context.Context, rec driver.Record, now time.Time) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.ok >= 0 && len(s.applied) >= s.ok {
		return errors.New("throttled")
	}
	if err := s.Store.Extend(ctx, rec, now); err != nil {
		return err
	}
	s.applied = append(s.applied, time.Now())
	return nil
}

// keepAliveRun runs an operation that waits for its context (or for d)
// under cfg on synctest's clock, and returns when its context ended
// after its start, the call's report, and the context's cause.
func keepAliveRun(t *testing.T, cfg idempotency.Config, d time.Duration) (ended time.Duration, rep idempotency.Report, cause error) {
	t.Helper()
	cfg.Namespace, cfg.Logger = "keepalive", slog.New(slog.DiscardHandler)
	cfg.OnOutcome = func(_ context.Context, r idempotency.Report) { rep = r }
	g, err := idempotency.New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	start := time.Now()
	_, _ = idempotency.Do(context.Background(), g, idempotency.Raw([]byte(`"k"`)), func(ctx context.Context) (int, error) {
		select {
		case <-ctx.Done():
			ended, cause = time.Since(start), context.Cause(ctx)
			return 0, cause
		case <-time.After(d):
			ended = time.Since(start)
			return 1, nil
		}
	})
	return ended, rep, cause
}

// TestKeepAliveEveryPositive: a positive KeepAliveEvery is the interval of
// the extensions, and one above half the lease counts as half: an
// operation of 2.1 leases is extended on time, every 200 ms or every
// 500 ms, and never loses its lease.
func TestKeepAliveEveryPositive(t *testing.T) {
	const lease = time.Second
	for _, tc := range []struct {
		every, want time.Duration
	}{{200 * time.Millisecond, 200 * time.Millisecond}, {10 * time.Second, lease / 2}} {
		t.Run(tc.every.String(), func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				s := &countingStore{Store: memstore.New(), ok: -1}
				start := time.Now()
				ended, rep, cause := keepAliveRun(t, idempotency.Config{Store: s, Lease: lease, SkewMargin: time.Millisecond, KeepAliveEvery: tc.every}, 2100*time.Millisecond)
				if cause != nil || ended != 2100*time.Millisecond || rep.Outcome != idempotency.OutcomeClaimed {
					t.Fatalf("the operation ended after %v with cause %v, outcome %s; want it to run its 2.1 s and complete", ended, cause, rep.Outcome)
				}
				if n := int(2100 * time.Millisecond / tc.want); len(s.applied) != n || rep.Extensions != n {
					t.Errorf("%d extensions (%d reported), want %d", len(s.applied), rep.Extensions, n)
				}
				for i, at := range s.applied {
					if want := start.Add(time.Duration(i+1) * tc.want); !at.Equal(want) {
						t.Errorf("extension %d at %v, want %v", i, at.Sub(start), want.Sub(start))
					}
				}
			})
		})
	}
}

// TestKeepAliveLapsesAfterExtension: once an extension was applied and
// the next ones fail, the operation's context ends a reserve (a tenth of
// the lease) before the extended lease would lapse, not after.
func TestKeepAliveLapsesAfterExtension(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		const lease = time.Second
		s := &countingStore{Store: memstore.New(), ok: 1}
		start := time.Now()
		ended, _, cause := keepAliveRun(t, idempotency.Config{Store: s, Lease: lease, SkewMargin: time.Millisecond}, time.Hour)
		if len(s.applied) != 1 {
			t.Fatalf("%d extensions applied, want 1", len(s.applied))
		}
		leaseEnd := s.applied[0].Add(lease).Sub(start) // the extension started and was applied at once
		if want := leaseEnd - lease/10; ended != want || !errors.Is(cause, idempotency.ErrLeaseNotExtended) {
			t.Errorf("the operation's context ended after %v with cause %v; want %v (the extended lease %v less the reserve), ErrLeaseNotExtended", ended, cause, want, leaseEnd)
		}
	})
}

// TestKeepAliveLimit: the context ends a reserve before the keep-alive's
// limit, Config.KeepAliveLimit or the record's expiry less SkewMargin,
// whichever comes first, with a cause that names it.
func TestKeepAliveLimit(t *testing.T) {
	const lease = time.Second
	for _, tc := range []struct {
		name  string
		cfg   idempotency.Config
		limit time.Duration
		names string
	}{
		{"KeepAliveLimit", idempotency.Config{KeepAliveLimit: 2500 * time.Millisecond, SkewMargin: time.Millisecond}, 2500 * time.Millisecond, "KeepAliveLimit"},
		{"expiry", idempotency.Config{ExpiresAfter: 8 * time.Second}, 3 * time.Second, "expiry"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				cfg := tc.cfg
				cfg.Store, cfg.Lease = &countingStore{Store: memstore.New(), ok: -1}, lease
				ended, rep, cause := keepAliveRun(t, cfg, time.Hour)
				if want := tc.limit - lease/10; ended != want {
					t.Errorf("the operation's context ended after %v, want %v (the limit less the reserve)", ended, want)
				}
				if !errors.Is(cause, idempotency.ErrLeaseNotExtended) || !strings.Contains(cause.Error(), tc.names) {
					t.Errorf("cause %v: want ErrLeaseNotExtended naming the %s", cause, tc.names)
				}
				if rep.Extensions < 2 {
					t.Errorf("%d extensions, want the lease kept alive up to the limit", rep.Extensions)
				}
			})
		})
	}
}

// TestKeepAliveKeepsInvocationLease: under package batch a claim's lease
// runs to the invocation's deadline, past the record's own (its context's):
// an operation that outlives its context may run until Lambda stops it.
// An extension made from the record's shorter window never shortens that
// lease: when the extensions after it fail (throttled), no other worker
// takes the key over while the invocation may still run the operation.
func TestKeepAliveKeepsInvocationLease(t *testing.T) {
	for _, strict := range []bool{false, true} {
		t.Run(fmt.Sprintf("strict=%v", strict), func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) { keepsInvocationLease(t, strict) })
		})
	}
}

func keepsInvocationLease(t *testing.T, strict bool) {
	const skew = 50 * time.Millisecond
	s := &countingStore{Store: memstore.New(), ok: 1}
	cfg := idempotency.Config{Store: s, Namespace: "keepalive", SkewMargin: skew, Strict: strict, Logger: slog.New(slog.DiscardHandler)}
	g, err := idempotency.New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	other, err := idempotency.New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	start := time.Now()
	// A record that starts late in a 3 s invocation: 1.2 s of its window
	// left, the invocation 1.8 s after it (the proportions are what
	// matter: a record's window a third of which is shorter than the
	// batch's reserve).
	ictx := invocation.WithDeadline(context.Background(), start.Add(3*time.Second))
	ctx, cancel := context.WithDeadline(ictx, start.Add(1200*time.Millisecond))
	defer cancel()
	k := idempotency.Raw([]byte(`"k"`))
	var second error
	_, _ = idempotency.Do(ctx, g, k, func(context.Context) (int, error) {
		time.Sleep(2 * time.Second) // ignores its context, as Lambda allows
		_, second = idempotency.Do(context.Background(), other, k, func(context.Context) (int, error) {
			return 2, nil
		})
		time.Sleep(800 * time.Millisecond)
		return 1, nil
	})
	if len(s.applied) != 1 {
		t.Fatalf("%d extensions applied, want 1 (the rest fail)", len(s.applied))
	}
	var ip *idempotency.InProgressError
	if !errors.As(second, &ip) {
		t.Fatalf("a second worker 2 s after the claim, 1 s before the invocation's deadline: %v, want an *InProgressError (the key was taken over or quarantined while its first run could still run)", second)
	}
	if want := start.Add(3 * time.Second).Add(skew); ip.LeaseUntil.Before(want) {
		t.Errorf("the lease is %v after the claim, want at least the invocation's deadline plus SkewMargin, %v", ip.LeaseUntil.Sub(start), want.Sub(start))
	}
}

// TestKeepAliveLimitNamesExpiry: when the record's expiry less SkewMargin
// cuts the claimed lease itself, before a shorter KeepAliveLimit could
// bind, the context's cause names the expiry, where it ends, not the
// limit.
func TestKeepAliveLimitNamesExpiry(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		// Lease 4 s, expiry 8 s less the default 5 s SkewMargin: 3 s;
		// the limit, 2 s, is below the claimed lease and does not bind.
		cfg := idempotency.Config{Store: &countingStore{Store: memstore.New(), ok: -1}, Lease: 4 * time.Second,
			ExpiresAfter: 8 * time.Second, KeepAliveLimit: 2 * time.Second}
		ended, _, cause := keepAliveRun(t, cfg, time.Hour)
		if want := 3*time.Second - 400*time.Millisecond; ended != want {
			t.Errorf("the operation's context ended after %v, want %v (the expiry less SkewMargin, less the reserve)", ended, want)
		}
		if !errors.Is(cause, idempotency.ErrLeaseNotExtended) || !strings.Contains(cause.Error(), "expiry") {
			t.Errorf("cause %v: want ErrLeaseNotExtended naming the record's expiry", cause)
		}
	})
}
