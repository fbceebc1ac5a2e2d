package idempotency_test

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"math"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/aws/aws-lambda-go/events"

	"github.com/sqsonce/sqsonce/internal/testenv/poll"
	"github.com/sqsonce/sqsonce/middleware/batch"
	"github.com/sqsonce/sqsonce/middleware/idempotency"
	"github.com/sqsonce/sqsonce/middleware/idempotency/driver"
	"github.com/sqsonce/sqsonce/middleware/idempotency/memstore"
)

// The guard's clock is fixed at t0 in these tests; contexts use the real
// clock, so t0 is now and the deadline is in the future whenever they run.
var (
	t0       = time.Now().Truncate(time.Second)
	deadline = t0.Add(3 * time.Minute)
)

// faultStore wraps memstore, counts calls and injects faults.
type faultStore struct {
	*memstore.Store
	acquires, completes, releases atomic.Int32
	acquireErr                    error
	completeErr                   func(attempt int32) error // nil: no fault
	beforeComplete                func()                    // runs before the real Complete
}

func (s *faultStore) Acquire(ctx context.Context, rec driver.Record, now time.Time, mode driver.ClaimMode) (driver.Record, bool, error) {
	s.acquires.Add(1)
	if s.acquireErr != nil {
		return driver.Record{}, false, s.acquireErr
	}
	return s.Store.Acquire(ctx, rec, now, mode)
}

func (s *faultStore) Complete(ctx context.Context, rec driver.Record) ([]byte, error) {
	n := s.completes.Add(1)
	if s.beforeComplete != nil {
		s.beforeComplete()
	}
	if s.completeErr != nil {
		if err := s.completeErr(n); err != nil {
			return nil, err
		}
	}
	return s.Store.Complete(ctx, rec)
}

func (s *faultStore) Release(ctx context.Context, key, owner string) error {
	s.releases.Add(1)
	return s.Store.Release(ctx, key, owner)
}

type result struct {
	Summary string  `json:"summary"`
	Tokens  int     `json:"tokens"`
	Score   float64 `json:"score"`
}

type fixture struct {
	store  *faultStore
	guard  *idempotency.Guard
	events []idempotency.Report
	mu     sync.Mutex
	calls  atomic.Int32
}

func newFixture(t *testing.T, mod func(*idempotency.Config)) *fixture {
	t.Helper()
	f := &fixture{store: &faultStore{Store: memstore.New()}}
	cfg := idempotency.Config{
		Store:     f.store,
		Namespace: "test",
		Now:       func() time.Time { return t0 },
		Logger:    slog.New(slog.DiscardHandler),
		OnOutcome: func(_ context.Context, ev idempotency.Report) {
			f.mu.Lock()
			defer f.mu.Unlock()
			f.events = append(f.events, ev)
		},
	}
	if mod != nil {
		mod(&cfg)
	}
	g, err := idempotency.New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	f.guard = g
	return f
}

// mustID is g's record id of k.
func mustID(t testing.TB, g *idempotency.Guard, k idempotency.Selection) string {
	t.Helper()
	id, err := g.ID(k)
	if err != nil {
		t.Fatal(err)
	}
	return id
}

func (f *fixture) lastEvent(t *testing.T) idempotency.Report {
	t.Helper()
	f.mu.Lock()
	defer f.mu.Unlock()
	if len(f.events) == 0 {
		t.Fatal("no outcome reported")
	}
	return f.events[len(f.events)-1]
}

func ctxWithDeadline(t *testing.T) context.Context {
	ctx, cancel := context.WithDeadline(context.Background(), deadline)
	t.Cleanup(cancel)
	return ctx
}

var key = idempotency.Raw([]byte(`"doc-4471-v9"`))

func TestDoStateMachine(t *testing.T) {
	ok := func(context.Context) (result, error) { return result{Summary: "fresh", Tokens: 7}, nil }
	stored := result{Summary: "stored", Tokens: 3}
	storedJSON := `{"summary":"stored","tokens":3,"score":0}`

	tests := []struct {
		name       string
		seed       func(f *fixture, id string) // records present before the call
		payload    string                      // non-empty: Do WithPayload of this payload
		fn         func(context.Context) (result, error)
		setup      func(f *fixture, id string)
		want       result
		wantErr    error // matched with errors.Is, or by type for *StoreError / *PanicError
		wantRan    bool
		outcome    idempotency.Outcome
		wantStatus driver.Status // record status after the call; "" = absent
		acquires   int32
	}{
		{
			name: "no record: claim, run, complete", fn: ok,
			want: result{Summary: "fresh", Tokens: 7}, wantRan: true, outcome: idempotency.OutcomeClaimed,
			wantStatus: driver.StatusCompleted, acquires: 1,
		},
		{
			name:    "operation fails: released, error returned",
			fn:      func(context.Context) (result, error) { return result{}, errors.New("model unavailable") },
			wantErr: errors.New("model unavailable"), wantRan: true, outcome: idempotency.OutcomeReleased,
			acquires: 1,
		},
		{
			name:    "operation panics: released, PanicError",
			fn:      func(context.Context) (result, error) { panic("boom") },
			wantErr: &batch.PanicError{}, wantRan: true, outcome: idempotency.OutcomeReleased,
			acquires: 1,
		},
		{
			name: "completed, not expired: replayed without running",
			seed: func(f *fixture, id string) {
				f.store.Put(driver.Record{ID: id, Status: driver.StatusCompleted, ExpiresAt: t0.Add(time.Hour), Data: []byte(storedJSON)})
			},
			fn: ok, want: stored, outcome: idempotency.OutcomeReplayed,
			wantStatus: driver.StatusCompleted, acquires: 1,
		},
		{
			name: "completed but expired: claimed and run again",
			seed: func(f *fixture, id string) {
				f.store.Put(driver.Record{ID: id, Status: driver.StatusCompleted, ExpiresAt: t0.Add(-time.Second), Data: []byte(storedJSON)})
			},
			fn: ok, want: result{Summary: "fresh", Tokens: 7}, wantRan: true, outcome: idempotency.OutcomeTakenOver,
			wantStatus: driver.StatusCompleted, acquires: 1,
		},
		{
			name: "in progress, lease alive: ErrInProgress, not run",
			seed: func(f *fixture, id string) {
				f.store.Put(driver.Record{ID: id, Status: driver.StatusInProgress, ExpiresAt: t0.Add(time.Hour), LeaseUntil: t0.Add(time.Minute), Owner: "other"})
			},
			fn: ok, wantErr: idempotency.ErrInProgress, outcome: idempotency.OutcomeInProgress,
			wantStatus: driver.StatusInProgress, acquires: 1,
		},
		{
			name: "in progress, lease passed: taken over and run",
			seed: func(f *fixture, id string) {
				f.store.Put(driver.Record{ID: id, Status: driver.StatusInProgress, ExpiresAt: t0.Add(time.Hour), LeaseUntil: t0.Add(-time.Millisecond), Owner: "crashed"})
			},
			fn: ok, want: result{Summary: "fresh", Tokens: 7}, wantRan: true, outcome: idempotency.OutcomeTakenOver,
			wantStatus: driver.StatusCompleted, acquires: 1,
		},
		{
			name: "payload differs from the stored one: mismatch, not run",
			seed: func(f *fixture, id string) {
				f.store.Put(driver.Record{ID: id, Status: driver.StatusCompleted, ExpiresAt: t0.Add(time.Hour), Data: []byte(storedJSON), Validation: "another-payload-digest"})
			},
			payload: `{"document":"4471","version":10}`,
			fn:      ok, wantErr: idempotency.ErrPayloadMismatch, outcome: idempotency.OutcomeMismatch,
			wantStatus: driver.StatusCompleted, acquires: 1,
		},
		{
			name:    "acquire fails: fail closed, not run",
			setup:   func(f *fixture, _ string) { f.store.acquireErr = errors.New("ThrottlingException") },
			fn:      ok,
			wantErr: &idempotency.StoreError{}, outcome: idempotency.OutcomeFailed, acquires: 1,
		},
		{
			name: "complete fails once: retried, result stored",
			setup: func(f *fixture, _ string) {
				f.store.completeErr = func(n int32) error {
					if n == 1 {
						return errors.New("InternalServerError")
					}
					return nil
				}
			},
			fn: ok, want: result{Summary: "fresh", Tokens: 7}, wantRan: true, outcome: idempotency.OutcomeClaimed,
			wantStatus: driver.StatusCompleted, acquires: 1,
		},
		{
			name: "complete keeps failing: StoreError, record stays in progress",
			setup: func(f *fixture, _ string) {
				f.store.completeErr = func(int32) error { return errors.New("InternalServerError") }
			},
			fn: ok, wantErr: &idempotency.StoreError{}, wantRan: true, outcome: idempotency.OutcomeFailed,
			wantStatus: driver.StatusInProgress, acquires: 1,
		},
		{
			name: "lease lost to a winner that completed: the winner's result",
			setup: func(f *fixture, id string) {
				f.store.beforeComplete = func() {
					if f.store.completes.Load() == 1 {
						f.store.Put(driver.Record{ID: id, Status: driver.StatusCompleted, ExpiresAt: t0.Add(time.Hour), Data: []byte(storedJSON), Owner: "winner"})
					}
				}
			},
			fn: ok, want: stored, wantRan: true, outcome: idempotency.OutcomeDoubleRun,
			wantStatus: driver.StatusCompleted, acquires: 2,
		},
		{
			name: "lease lost to a winner still running: ErrInProgress",
			setup: func(f *fixture, id string) {
				f.store.beforeComplete = func() {
					f.store.Put(driver.Record{ID: id, Status: driver.StatusInProgress, ExpiresAt: t0.Add(time.Hour), LeaseUntil: t0.Add(time.Minute), Owner: "winner"})
				}
			},
			fn: ok, wantErr: idempotency.ErrInProgress, wantRan: true, outcome: idempotency.OutcomeDoubleRun,
			wantStatus: driver.StatusInProgress, acquires: 2,
		},
		{
			name: "lease lost, record gone: reclaimed and completed with this result",
			setup: func(f *fixture, id string) {
				f.store.beforeComplete = func() {
					if f.store.completes.Load() == 1 {
						if rec, ok := f.store.Get(id); ok {
							_ = f.store.Store.Release(context.Background(), id, rec.Owner)
						}
					}
				}
			},
			fn: ok, want: result{Summary: "fresh", Tokens: 7}, wantRan: true, outcome: idempotency.OutcomeClaimed,
			wantStatus: driver.StatusCompleted, acquires: 2,
		},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			f := newFixture(t, nil)
			id := mustID(t, f.guard, key)
			if tc.seed != nil {
				tc.seed(f, id)
			}
			if tc.setup != nil {
				tc.setup(f, id)
			}
			fn := func(ctx context.Context) (result, error) {
				f.calls.Add(1)
				return tc.fn(ctx)
			}
			var got result
			var err error
			if tc.payload != "" {
				got, err = idempotency.Do(ctxWithDeadline(t), f.guard, key, fn, idempotency.WithPayload(idempotency.Raw([]byte(tc.payload))))
			} else {
				got, err = idempotency.Do(ctxWithDeadline(t), f.guard, key, fn)
			}
			checkErr(t, err, tc.wantErr)
			if got != tc.want {
				t.Errorf("result = %+v, want %+v", got, tc.want)
			}
			if ran := f.calls.Load() == 1; ran != tc.wantRan {
				t.Errorf("operation ran %d times, want ran=%v", f.calls.Load(), tc.wantRan)
			}
			ev := f.lastEvent(t)
			if ev.Outcome != tc.outcome || ev.Ran != tc.wantRan || ev.ID != id {
				t.Errorf("event = %+v, want outcome %q ran=%v key %q", ev, tc.outcome, tc.wantRan, id)
			}
			rec, exists := f.store.Get(id)
			if status := map[bool]driver.Status{true: rec.Status}[exists]; status != tc.wantStatus {
				t.Errorf("record status after the call = %q, want %q", status, tc.wantStatus)
			}
			if n := f.store.acquires.Load(); n != tc.acquires {
				t.Errorf("Acquire called %d times, want %d", n, tc.acquires)
			}
		})
	}
}

func checkErr(t *testing.T, err, want error) {
	t.Helper()
	switch w := want.(type) {
	case nil:
		if err != nil {
			t.Fatalf("err = %v, want nil", err)
		}
	case *idempotency.StoreError:
		if !errors.As(err, &w) {
			t.Fatalf("err = %v (%T), want a *StoreError", err, err)
		}
	case *batch.PanicError:
		if !errors.As(err, &w) || w.Value != "boom" || len(w.Stack) == 0 {
			t.Fatalf("err = %v (%T), want a *PanicError with value and stack", err, err)
		}
	default:
		if !errors.Is(err, want) && (err == nil || err.Error() != want.Error()) {
			t.Fatalf("err = %v, want %v", err, want)
		}
	}
}

func TestLeaseEndsAtDeadline(t *testing.T) {
	for _, tc := range []struct {
		name string
		ctx  func(t *testing.T) context.Context
		want time.Time
	}{
		{"context deadline", ctxWithDeadline, deadline.Add(idempotency.DefaultSkewMargin)},
		{"no deadline: Config.Lease", func(*testing.T) context.Context { return context.Background() }, t0.Add(idempotency.DefaultLease + idempotency.DefaultSkewMargin)},
	} {
		t.Run(tc.name, func(t *testing.T) {
			f := newFixture(t, nil)
			id := mustID(t, f.guard, key)
			var during driver.Record
			_, err := idempotency.Do(tc.ctx(t), f.guard, key, func(context.Context) (int, error) {
				during, _ = f.store.Get(id)
				return 1, nil
			})
			if err != nil {
				t.Fatal(err)
			}
			if during.Status != driver.StatusInProgress || !during.LeaseUntil.Equal(tc.want) || during.Owner == "" {
				t.Errorf("record while running = %+v, want INPROGRESS with an owner and lease until %v", during, tc.want)
			}
			if want := t0.Add(idempotency.DefaultExpiresAfter); !during.ExpiresAt.Equal(want) {
				t.Errorf("ExpiresAt = %v, want %v", during.ExpiresAt, want)
			}
		})
	}
}

func TestFailedOperationCanRunAgain(t *testing.T) {
	f := newFixture(t, nil)
	fail := true
	fn := func(context.Context) (string, error) {
		f.calls.Add(1)
		if fail {
			return "", errors.New("transient")
		}
		return "ok", nil
	}
	if _, err := idempotency.Do(ctxWithDeadline(t), f.guard, key, fn); err == nil {
		t.Fatal("want the operation's error")
	}
	fail = false
	got, err := idempotency.Do(ctxWithDeadline(t), f.guard, key, fn)
	if err != nil || got != "ok" || f.calls.Load() != 2 {
		t.Fatalf("retry after a failure: got %q, %v after %d calls; want ok after 2", got, err, f.calls.Load())
	}
}

func TestSameKeyAtOnceRunsOnce(t *testing.T) {
	f := newFixture(t, nil)
	release := make(chan struct{})
	started := make(chan struct{})
	fn := func(context.Context) (string, error) {
		if f.calls.Add(1) == 1 {
			close(started)
		}
		<-release
		return "one", nil
	}
	const callers = 8
	var wg sync.WaitGroup
	results := make([]string, callers)
	errs := make([]error, callers)
	wg.Add(1)
	go func() {
		defer wg.Done()
		results[0], errs[0] = idempotency.Do(ctxWithDeadline(t), f.guard, key, fn)
	}()
	select {
	case <-started:
	case <-time.After(time.Minute): // a failsafe, not a timing assertion
		t.Fatal("the first call never started the operation")
	}
	for i := 1; i < callers; i++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			results[i], errs[i] = idempotency.Do(ctxWithDeadline(t), f.guard, key, fn)
		}()
	}
	// Let the waiters join the running call before it returns.
	poll.Goroutines(t, callers, guardRun)
	close(release)
	wg.Wait()
	for i := range callers {
		if errs[i] != nil || results[i] != "one" {
			t.Errorf("caller %d: %q, %v", i, results[i], errs[i])
		}
	}
	if n := f.calls.Load(); n != 1 {
		t.Errorf("operation ran %d times, want 1", n)
	}
	if n := f.store.acquires.Load(); n != 1 {
		t.Errorf("store Acquire called %d times, want 1 (waiters share the outcome)", n)
	}
}

type permanentErr struct{}

func (permanentErr) Error() string   { return "attached write's condition failed" }
func (permanentErr) Permanent() bool { return true }

var _ batch.PermanentError = permanentErr{}

func TestCompleteNotRetriedWhenPermanent(t *testing.T) {
	f := newFixture(t, nil)
	f.store.completeErr = func(int32) error { return permanentErr{} }
	_, err := idempotency.Do(ctxWithDeadline(t), f.guard, key, func(context.Context) (int, error) { return 1, nil })
	var se *idempotency.StoreError
	if !errors.As(err, &se) || !errors.As(err, new(permanentErr)) {
		t.Fatalf("err = %v, want a *StoreError wrapping the permanent error", err)
	}
	if n := f.store.completes.Load(); n != 1 {
		t.Errorf("Complete tried %d times, want 1: a permanent error is not retried", n)
	}
}

func TestWaiterStopsAtItsOwnDeadline(t *testing.T) {
	f := newFixture(t, nil)
	release, started := make(chan struct{}), make(chan struct{})
	leaderDone := make(chan error, 1)
	go func() {
		_, err := idempotency.Do(ctxWithDeadline(t), f.guard, key, func(context.Context) (string, error) {
			close(started)
			<-release
			return "done", nil
		})
		leaderDone <- err
	}()
	<-started
	ctx, cancel := context.WithCancel(context.Background())
	waiterDone := make(chan error, 1)
	go func() {
		_, err := idempotency.Do(ctx, f.guard, key, func(context.Context) (string, error) { return "second run", nil })
		waiterDone <- err
	}()
	poll.Goroutines(t, 2, guardRun)
	cancel()
	// The key is in progress for the waiter, until the run's lease ends, as
	// another process would find it in the store: pacing brings it back then.
	err := <-waiterDone
	var ip *idempotency.InProgressError
	if !errors.As(err, &ip) || !ip.LeaseUntil.Equal(deadline.Add(idempotency.DefaultSkewMargin)) {
		t.Fatalf("waiter whose context ended: err = %v, want an InProgressError with the run's lease", err)
	}
	if ev := f.lastEvent(t); ev.Outcome != idempotency.OutcomeInProgress || ev.Source != "shared" || ev.Ran {
		t.Errorf("waiter's event %+v, want in_progress/shared without running", ev)
	}
	close(release) // the run the waiter left goes on and completes
	if err := <-leaderDone; err != nil {
		t.Fatalf("the running call: %v", err)
	}
	if rec, _ := f.store.Get(mustID(t, f.guard, key)); rec.Status != driver.StatusCompleted {
		t.Errorf("record after the run = %+v, want COMPLETED", rec)
	}
}

func TestWaiterOfFailedRunFails(t *testing.T) {
	f := newFixture(t, nil)
	release, started := make(chan struct{}), make(chan struct{})
	errs := make(chan error, 2)
	go func() {
		_, err := idempotency.Do(ctxWithDeadline(t), f.guard, key, func(context.Context) (string, error) {
			close(started)
			<-release
			return "", errors.New("model unavailable")
		})
		errs <- err
	}()
	<-started
	go func() {
		_, err := idempotency.Do(ctxWithDeadline(t), f.guard, key, func(context.Context) (string, error) { return "x", nil })
		errs <- err
	}()
	poll.Goroutines(t, 2, guardRun)
	close(release)
	for range 2 {
		if err := <-errs; err == nil || err.Error() != "model unavailable" {
			t.Errorf("err = %v, want the run's error for both calls", err)
		}
	}
	outcomes := map[idempotency.Outcome]int{}
	f.mu.Lock()
	for _, ev := range f.events {
		outcomes[ev.Outcome]++
	}
	f.mu.Unlock()
	if outcomes[idempotency.OutcomeReleased] != 1 || outcomes[idempotency.OutcomeFailed] != 1 {
		t.Errorf("outcomes %v, want one released (the run) and one failed (the waiter)", outcomes)
	}
}

func TestNestedCallOfSameKeyFails(t *testing.T) {
	f := newFixture(t, nil)
	var inner error
	_, err := idempotency.Do(ctxWithDeadline(t), f.guard, key, func(ctx context.Context) (int, error) {
		_, inner = idempotency.Do(ctx, f.guard, key, func(context.Context) (int, error) { return 2, nil })
		return 1, nil
	})
	if err != nil {
		t.Fatalf("outer call: %v", err)
	}
	if inner == nil || !strings.Contains(inner.Error(), "inside its own operation") {
		t.Errorf("inner call of the same key: %v, want an immediate error", inner)
	}
}

func TestWaiterRetriesWhenTheRunFailedForItsOwnContext(t *testing.T) {
	f := newFixture(t, nil)
	leaderCtx, cancelLeader := context.WithCancel(ctxWithDeadline(t))
	started, release := make(chan struct{}), make(chan struct{})
	leaderErr := make(chan error, 1)
	go func() {
		_, err := idempotency.Do(leaderCtx, f.guard, key, func(ctx context.Context) (string, error) {
			close(started)
			<-release
			return "", ctx.Err() // the first caller's own context ended
		})
		leaderErr <- err
	}()
	<-started
	waiterDone := make(chan error, 1)
	var got string
	go func() {
		var err error
		got, err = idempotency.Do(ctxWithDeadline(t), f.guard, key, func(context.Context) (string, error) { return "waiter ran", nil })
		waiterDone <- err
	}()
	poll.Goroutines(t, 2, guardRun)
	cancelLeader()
	close(release)
	if err := <-leaderErr; !errors.Is(err, context.Canceled) {
		t.Fatalf("first call: %v, want context.Canceled", err)
	}
	if err := <-waiterDone; err != nil || got != "waiter ran" {
		t.Fatalf("waiter whose context is fine: %q, %v; want it to run the released key", got, err)
	}
}

// TestWaiterSharesTheOperationsTimeout: a run that fails with the
// operation's own timeout (an error wrapping context.DeadlineExceeded from
// a client's timeout, its caller's context still live) is shared as any
// failure: the waiter fails with it, and the operation ran once.
func TestWaiterSharesTheOperationsTimeout(t *testing.T) {
	f := newFixture(t, nil)
	started, release := make(chan struct{}), make(chan struct{})
	timeout := fmt.Errorf("model call: %w", context.DeadlineExceeded)
	var runs atomic.Int32
	op := func(context.Context) (string, error) {
		if runs.Add(1) == 1 {
			close(started)
			<-release
		}
		return "", timeout
	}
	errs := make(chan error, 2)
	go func() {
		_, err := idempotency.Do(ctxWithDeadline(t), f.guard, key, op)
		errs <- err
	}()
	<-started
	go func() {
		_, err := idempotency.Do(ctxWithDeadline(t), f.guard, key, op)
		errs <- err
	}()
	poll.Goroutines(t, 2, guardRun)
	close(release)
	for range 2 {
		if err := <-errs; !errors.Is(err, context.DeadlineExceeded) {
			t.Errorf("err = %v, want the run's timeout for both calls", err)
		}
	}
	if n := runs.Load(); n != 1 {
		t.Errorf("the operation ran %d times, want once: the waiter shares the run's failure", n)
	}
}

// TestWaiterOutlastsTheRunnersDeadline: two invocations in one process
// (Lambda Managed Instances) call one key, the running one with the earlier
// deadline. Its operation's context ends a reserve before that deadline,
// and the operation returns its error, its caller's context still live: a
// waiter whose own deadline is later runs the released key in its own time
// rather than fail with the other invocation's deadline. A waiter with the
// same deadline (a duplicate in the same batch) shares the failure: it would
// meet the same end.
func TestWaiterOutlastsTheRunnersDeadline(t *testing.T) {
	for _, tc := range []struct {
		name        string
		waiter      time.Duration // the waiter's deadline, after the runner's 400 ms
		wantRuns    int32
		wantWaiterV string
	}{
		{"later deadline: runs", 20 * time.Second, 2, "waiter ran"},
		{"same deadline: shares", 0, 1, ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			f := newFixture(t, nil)
			var runs atomic.Int32
			started := make(chan struct{})
			op := func(ctx context.Context) (string, error) {
				if runs.Add(1) == 1 {
					close(started)
					<-ctx.Done() // a long model call that honours its context
					return "", ctx.Err()
				}
				return "waiter ran", nil
			}
			d := time.Now().Add(400 * time.Millisecond)
			runnerCtx, cancel := context.WithDeadline(t.Context(), d)
			defer cancel()
			waiterCtx, cancelW := context.WithDeadline(t.Context(), d.Add(tc.waiter))
			defer cancelW()
			runner := make(chan error, 1)
			go func() { _, err := idempotency.Do(runnerCtx, f.guard, key, op); runner <- err }()
			<-started
			waiter := make(chan error, 1)
			var got string
			go func() {
				var err error
				got, err = idempotency.Do(waiterCtx, f.guard, key, op)
				waiter <- err
			}()
			poll.Goroutines(t, 2, guardRun)
			if err := <-runner; !errors.Is(err, context.DeadlineExceeded) {
				t.Fatalf("the running call: %v, want its deadline", err)
			}
			err := <-waiter
			if tc.wantWaiterV != "" && (err != nil || got != tc.wantWaiterV) {
				t.Errorf("the waiter, its deadline later: %q, %v; want it to run the released key", got, err)
			}
			if tc.wantWaiterV == "" && !errors.Is(err, context.DeadlineExceeded) {
				t.Errorf("the waiter, its deadline the same: %q, %v; want the run's failure shared", got, err)
			}
			if n := runs.Load(); n != tc.wantRuns {
				t.Errorf("the operation ran %d times, want %d", n, tc.wantRuns)
			}
		})
	}
}

func TestWrapRefusesNilConfiguration(t *testing.T) {
	g := newFixture(t, nil).guard
	fn := func(context.Context, events.SQSMessage) (int, error) { return 0, nil }
	for name, build := range map[string]func(){
		"nil guard":    func() { idempotency.Wrap(nil, idempotency.BodyField("k"), fn) },
		"zero key":     func() { idempotency.Wrap(g, idempotency.Selector{}, fn) },
		"nil function": func() { idempotency.Wrap[events.SQSMessage, int](g, idempotency.BodyField("k"), nil) },
		"no fields":    func() { idempotency.BodySubset() },
		"no key funcs": func() { idempotency.FirstOf() },
		"empty field":  func() { idempotency.BodyField("") },
	} {
		t.Run(name, func(t *testing.T) {
			defer func() {
				if recover() == nil {
					t.Error("no panic at construction")
				}
			}()
			build()
		})
	}
}

type panickingStore struct{ *faultStore }

func (panickingStore) Complete(context.Context, driver.Record) ([]byte, error) { panic("store bug") }

func TestPanickingStoreFailsTheCall(t *testing.T) {
	store := panickingStore{&faultStore{Store: memstore.New()}}
	var ev idempotency.Report
	g, err := idempotency.New(idempotency.Config{Store: store, Namespace: "p", Logger: slog.New(slog.DiscardHandler),
		OnOutcome: func(_ context.Context, e idempotency.Report) { ev = e }})
	if err != nil {
		t.Fatal(err)
	}
	_, err = idempotency.Do(ctxWithDeadline(t), g, key, func(context.Context) (int, error) { return 1, nil })
	var se *idempotency.StoreError
	var pe *batch.PanicError
	if !errors.As(err, &se) || se.Op != "complete" || !errors.As(err, &pe) {
		t.Fatalf("err = %v, want a *StoreError{Op: complete} wrapping a *PanicError", err)
	}
	if !ev.Ran || ev.Outcome != idempotency.OutcomeFailed {
		t.Errorf("event %+v, want failed with Ran (the operation did run)", ev)
	}
}

func TestUnencodableResultCompletesWithoutIt(t *testing.T) {
	f := newFixture(t, nil)
	_, err := idempotency.Do(ctxWithDeadline(t), f.guard, key, func(context.Context) (float64, error) {
		f.calls.Add(1)
		return math.NaN(), nil
	})
	if err == nil || f.lastEvent(t).Outcome != idempotency.OutcomeFailed {
		t.Fatalf("err = %v, event %+v; want a failed call", err, f.lastEvent(t))
	}
	// The operation ran: a redelivery must not run it again.
	got, err := idempotency.Do(ctxWithDeadline(t), f.guard, key, func(context.Context) (float64, error) {
		f.calls.Add(1)
		return 1, nil
	})
	if err != nil || got != 0 || f.calls.Load() != 1 {
		t.Fatalf("redelivery: %v, %v after %d runs; want the empty stored result after 1 run", got, err, f.calls.Load())
	}
}

// trimmingStore keeps no result over 8 bytes, as a store with a size limit.
type trimmingStore struct{ *memstore.Store }

func (s trimmingStore) Complete(ctx context.Context, rec driver.Record) ([]byte, error) {
	if len(rec.Data) > 8 {
		rec.Data = nil
	}
	return s.Store.Complete(ctx, rec)
}

func TestDeliveriesSeeWhatTheStoreKept(t *testing.T) {
	g, err := idempotency.New(idempotency.Config{Store: trimmingStore{memstore.New()}, Namespace: "t",
		CacheBytes: 1 << 20, Logger: slog.New(slog.DiscardHandler)})
	if err != nil {
		t.Fatal(err)
	}
	long := func(context.Context) (string, error) { return "a result too long to keep", nil }
	for i := range 2 {
		got, err := idempotency.Do(ctxWithDeadline(t), g, key, long)
		if err != nil || got != "" {
			t.Errorf("delivery %d: %q, %v; want the empty result the store kept, for every delivery", i, got, err)
		}
	}
}

// guardRun is the guard's run of a call as a stack dump names it: the
// goroutines in it run a call or wait for one.
const guardRun = "idempotency.(*Guard).run("

// oddStatusStore returns every record as found, with a status no runtime
// writes.
type oddStatusStore struct{ *memstore.Store }

func (s oddStatusStore) Acquire(ctx context.Context, rec driver.Record, now time.Time, mode driver.ClaimMode) (driver.Record, bool, error) {
	return driver.Record{ID: rec.ID, Status: driver.Status(strings.Repeat("SECRET-STATUS ", 100)), ExpiresAt: now.Add(time.Hour)}, true, nil
}

// TestUnknownStatusNotQuoted: a stored status the guard does not know fails
// the call with a *StoreError that describes the value (a prefix, its length
// and a digest) without quoting it whole, and the operation does not run.
func TestUnknownStatusNotQuoted(t *testing.T) {
	g, err := idempotency.New(idempotency.Config{Store: oddStatusStore{memstore.New()}, Namespace: "t"})
	if err != nil {
		t.Fatal(err)
	}
	ran := false
	_, err = idempotency.Do(context.Background(), g, idempotency.Raw([]byte("k")), func(context.Context) (int, error) {
		ran = true
		return 1, nil
	})
	var se *idempotency.StoreError
	if !errors.As(err, &se) || ran {
		t.Fatalf("err %v, ran %v: want a *StoreError and no run", err, ran)
	}
	if strings.Contains(err.Error(), "SECRET-STATUS SECRET") || !strings.Contains(err.Error(), "1400 bytes") {
		t.Errorf("error quotes the stored status or does not describe it: %v", err)
	}
}
