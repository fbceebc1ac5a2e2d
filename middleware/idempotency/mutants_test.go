package idempotency_test

// Tests that pin the guard's arithmetic where the rest of the suite left
// gremlins' mutants alive (docs/verification.md, Mutation testing). Each
// asserts what the documentation promises, on synctest's clock.

import (
	"context"
	"encoding/json"
	"errors"
	"log/slog"
	"reflect"
	"sync"
	"testing"
	"testing/synctest"
	"time"

	"github.com/sqsonce/sqsonce/middleware/idempotency"
	"github.com/sqsonce/sqsonce/middleware/idempotency/driver"
	"github.com/sqsonce/sqsonce/middleware/idempotency/memstore"
)

var errThrottled = errors.New("throttled")

// extension is one Extend call a leaseStore saw: when, the lease end it
// was asked to write, and whether it was applied.
type extension struct {
	at      time.Time
	until   time.Time
	applied bool
}

// leaseStore is memstore whose extensions are recorded; fail decides,
// from the calls made before, whether the next one fails (with
// errThrottled).
type leaseStore struct {
	*memstore.Store
	fail func(n int) bool

	mu    sync.Mutex
	calls []extension
}

func (s *leaseStore) Extend(ctx context.Context, rec driver.Record, now time.Time) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	e := extension{at: time.Now(), until: rec.LeaseEnd()}
	if s.fail != nil && s.fail(len(s.calls)) {
		s.calls = append(s.calls, e)
		return errThrottled
	}
	err := s.Store.Extend(ctx, rec, now)
	e.applied = err == nil
	s.calls = append(s.calls, e)
	return err
}

func (s *leaseStore) extensions() []extension {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]extension(nil), s.calls...)
}

// TestKeepAliveEveryAboveHalf: a KeepAliveEvery above half the lease, but
// below the whole of it, counts as half ("at most half"): the lease is
// extended every 500 ms, not every 800 ms, and so never lapses.
func TestKeepAliveEveryAboveHalf(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		const lease = time.Second
		s := &leaseStore{Store: memstore.New()}
		start := time.Now()
		ended, rep, cause := keepAliveRun(t, idempotency.Config{Store: s, Lease: lease, SkewMargin: time.Millisecond, KeepAliveEvery: 800 * time.Millisecond}, 2100*time.Millisecond)
		if cause != nil || ended != 2100*time.Millisecond || rep.Outcome != idempotency.OutcomeClaimed {
			t.Fatalf("the operation ended after %v with cause %v, outcome %s; want it to run its 2.1 s and complete", ended, cause, rep.Outcome)
		}
		calls := s.extensions()
		if len(calls) != 4 {
			t.Fatalf("%d extensions, want 4 (every 500 ms)", len(calls))
		}
		for i, c := range calls {
			if want := start.Add(time.Duration(i+1) * lease / 2); !c.at.Equal(want) {
				t.Errorf("extension %d at %v, want %v", i, c.at.Sub(start), want.Sub(start))
			}
		}
	})
}

// TestKeepAliveExtendsByTheLease: each extension writes the claimed
// lease's length from its start plus SkewMargin (the margin other
// workers' clocks get, as at the claim), in strict mode too; the last one
// before KeepAliveLimit writes no lease past the limit (plus the margin).
func TestKeepAliveExtendsByTheLease(t *testing.T) {
	const (
		lease = time.Second
		skew  = 40 * time.Millisecond
		limit = 2500 * time.Millisecond
	)
	for _, strict := range []bool{false, true} {
		t.Run(map[bool]string{false: "default", true: "strict"}[strict], func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				s := &leaseStore{Store: memstore.New()}
				start := time.Now()
				_, rep, cause := keepAliveRun(t, idempotency.Config{Store: s, Lease: lease, SkewMargin: skew, KeepAliveLimit: limit, Strict: strict}, time.Hour)
				if !errors.Is(cause, idempotency.ErrLeaseNotExtended) {
					t.Fatalf("cause %v, want the limit's ErrLeaseNotExtended", cause)
				}
				calls := s.extensions()
				if len(calls) < 3 || rep.Extensions != len(calls) {
					t.Fatalf("%d extensions (%d reported), want at least 3, all applied and reported", len(calls), rep.Extensions)
				}
				horizon := start.Add(limit + skew)
				for i, c := range calls {
					want := c.at.Add(lease + skew)
					if want.After(horizon) {
						want = horizon
					}
					if !c.applied || !c.until.Equal(want) {
						t.Errorf("extension %d at %v wrote a lease to %v (applied %v), want to %v", i, c.at.Sub(start), c.until.Sub(start), c.applied, want.Sub(start))
					}
				}
			})
		})
	}
}

// TestKeepAliveRecoversFromAFailedExtension: an extension that fails with
// an error that may pass is tried again soon (a quarter of the interval,
// at most 100 ms), and once one is applied the operation runs on as if
// nothing happened.
func TestKeepAliveRecoversFromAFailedExtension(t *testing.T) {
	for _, tc := range []struct {
		lease, retry time.Duration
	}{
		{time.Second, time.Second / 3 / 4},         // a quarter of the interval
		{10 * time.Second, 100 * time.Millisecond}, // at most 100 ms
	} {
		t.Run(tc.lease.String(), func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				s := &leaseStore{Store: memstore.New(), fail: func(n int) bool { return n == 0 }}
				run := 2*tc.lease + tc.lease/10
				ended, rep, cause := keepAliveRun(t, idempotency.Config{Store: s, Lease: tc.lease, SkewMargin: time.Millisecond}, run)
				if cause != nil || ended != run || rep.Outcome != idempotency.OutcomeClaimed {
					t.Fatalf("the operation ended after %v with cause %v, outcome %s; want it to run its %v and complete", ended, cause, rep.Outcome, run)
				}
				calls := s.extensions()
				if len(calls) < 2 || calls[0].applied || !calls[1].applied {
					t.Fatalf("extensions %+v: want a failed one, then one applied", calls)
				}
				if got, want := calls[1].at.Sub(calls[0].at), tc.retry; got != want {
					t.Errorf("the failed extension was tried again after %v, want %v", got, want)
				}
			})
		})
	}
}

// TestKeepAliveFailureCause: when extensions keep failing, the context's
// cause, and the call's error, wrap ErrLeaseNotExtended and the store's
// error, which says why.
func TestKeepAliveFailureCause(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		s := &leaseStore{Store: memstore.New(), fail: func(int) bool { return true }}
		_, rep, cause := keepAliveRun(t, idempotency.Config{Store: s, Lease: time.Second, SkewMargin: time.Millisecond}, time.Hour)
		var se *idempotency.StoreError
		if !errors.Is(cause, idempotency.ErrLeaseNotExtended) || !errors.Is(cause, errThrottled) || !errors.As(cause, &se) {
			t.Errorf("cause %v: want ErrLeaseNotExtended and the store's error", cause)
		}
		if !errors.Is(rep.Err, errThrottled) || rep.Outcome != idempotency.OutcomeReleased {
			t.Errorf("report %s, %v: want released, with the store's error", rep.Outcome, rep.Err)
		}
	})
}

// quarantineStore is memstore whose Quarantine cannot tell what became of
// the record (driver.ErrLeaseLost without it); before refusing, undo
// runs with the number of refusals so far.
type quarantineStore struct {
	*memstore.Store
	undo  func(found driver.Record, n int) error // nil error: refuse with ErrLeaseLost
	calls int
}

func (s *quarantineStore) Quarantine(ctx context.Context, found driver.Record, now time.Time) (driver.Record, error) {
	s.calls++
	if err := s.undo(found, s.calls); err != nil {
		return driver.Record{}, err
	}
	return driver.Record{}, driver.ErrLeaseLost
}

// TestStrictQuarantineRetries: a strict call that finds a lapsed claim
// and cannot tell whether its quarantine lost a race claims again: when
// the record went away meanwhile, it claims and runs; when the store
// keeps saying so, it gives up after three rounds with the store's error,
// and never runs.
func TestStrictQuarantineRetries(t *testing.T) {
	k := idempotency.Raw([]byte(`"lapsed"`))
	setup := func(t *testing.T, undo func(s *quarantineStore, found driver.Record, n int) error) (*quarantineStore, *idempotency.Guard) {
		s := &quarantineStore{Store: memstore.New()}
		s.undo = func(found driver.Record, n int) error { return undo(s, found, n) }
		g, err := idempotency.New(idempotency.Config{Store: s, Namespace: "quarantine", Strict: true,
			Now: func() time.Time { return t0.Add(time.Hour) }, Logger: slog.New(slog.DiscardHandler)})
		if err != nil {
			t.Fatal(err)
		}
		s.Put(driver.Record{ID: mustID(t, g, k), Status: driver.StatusInProgress, Owner: "gone",
			ExpiresAt: t0.Add(24 * time.Hour), LeaseUntil: t0.Add(24 * time.Hour), StrictLease: t0.Add(time.Minute)})
		return s, g
	}
	t.Run("record gone", func(t *testing.T) {
		s, g := setup(t, func(s *quarantineStore, found driver.Record, _ int) error {
			return s.Release(context.Background(), found.ID, found.Owner)
		})
		got, err := idempotency.Do(context.Background(), g, k, func(context.Context) (int, error) { return 7, nil })
		if err != nil || got != 7 || s.calls != 1 {
			t.Errorf("Do: %v, %v after %d quarantines; want the operation run after one", got, err, s.calls)
		}
	})
	t.Run("store cannot tell", func(t *testing.T) {
		errMore := errors.New("a fourth round")
		s, g := setup(t, func(_ *quarantineStore, _ driver.Record, n int) error {
			if n > 3 {
				return errMore
			}
			return nil
		})
		ran := false
		_, err := idempotency.Do(context.Background(), g, k, func(context.Context) (int, error) { ran = true; return 7, nil })
		var se *idempotency.StoreError
		if ran || s.calls != 3 || !errors.Is(err, driver.ErrLeaseLost) || !errors.As(err, &se) {
			t.Errorf("after %d quarantines (ran %v): %v; want three, then the store's ErrLeaseLost", s.calls, ran, err)
		}
	})
}

// TestWaiterSeesClaimedLease: a call waiting in the same process for a run
// of its key, which stops at its own deadline before any extension, reports
// the lease the run claimed, the one stored (its record's pacing comes back
// when the key may be free), not an unknown one.
func TestWaiterSeesClaimedLease(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		store := memstore.New()
		g, err := idempotency.New(idempotency.Config{Store: store, Namespace: "waiter", Lease: time.Second,
			Logger: slog.New(slog.DiscardHandler)})
		if err != nil {
			t.Fatal(err)
		}
		k := idempotency.Raw([]byte(`"waited for"`))
		finish, done := make(chan struct{}), make(chan error, 1)
		go func() {
			_, err := idempotency.Do(context.Background(), g, k, func(ctx context.Context) (int, error) {
				<-finish
				return 1, nil
			})
			done <- err
		}()
		synctest.Wait() // the run holds its claim
		claimed, ok := store.Get(mustID(t, g, k))
		if !ok {
			t.Fatal("no record after the claim")
		}
		wctx, cancel := context.WithTimeout(context.Background(), 100*time.Millisecond) // before the first extension
		defer cancel()
		_, werr := idempotency.Do(wctx, g, k, func(context.Context) (int, error) { return 0, errors.New("ran twice") })
		close(finish)
		if err := <-done; err != nil {
			t.Fatalf("the run: %v", err)
		}
		var ip *idempotency.InProgressError
		if !errors.As(werr, &ip) || !ip.LeaseUntil.Equal(claimed.LeaseUntil) {
			t.Errorf("waiter: %v, want an *InProgressError with the claimed lease end %v", werr, claimed.LeaseUntil)
		}
	})
}

// keptStore is memstore that keeps another result than it is given (as a
// store keeps less of a result too large for it) and says so.
type keptStore struct {
	*memstore.Store
	kept []byte
}

func (s *keptStore) Complete(ctx context.Context, rec driver.Record) ([]byte, error) {
	rec.Data = s.kept
	return s.Store.Complete(ctx, rec)
}

// TestCompletionKeepsWhatTheStoreKept: when the store keeps another result
// than the operation returned, the call that ran gets what was kept, as
// every later delivery will, and reports its run as claimed.
func TestCompletionKeepsWhatTheStoreKept(t *testing.T) {
	var rep idempotency.Report
	g, err := idempotency.New(idempotency.Config{Store: &keptStore{Store: memstore.New(), kept: []byte(`"kept"`)}, Namespace: "kept",
		Logger: slog.New(slog.DiscardHandler), OnOutcome: func(_ context.Context, r idempotency.Report) { rep = r }})
	if err != nil {
		t.Fatal(err)
	}
	k := idempotency.Raw([]byte(`"k"`))
	for i, want := range []idempotency.Outcome{idempotency.OutcomeClaimed, idempotency.OutcomeReplayed} {
		got, err := idempotency.Do(context.Background(), g, k, func(context.Context) (string, error) { return "the whole result", nil })
		if err != nil || got != "kept" || rep.Outcome != want {
			t.Errorf("call %d: %q, %v, outcome %s; want %q, %s", i, got, err, rep.Outcome, "kept", want)
		}
	}
}

type quotedReq struct {
	Key string            `json:"key"`
	S   string            `json:"s,string"`
	U   map[uint16]string `json:"u"`
	I   map[int8]string   `json:"i"`
}

// TestWrapJSONQuotedStringsAndIntegerKeys: WrapJSON takes what
// encoding/json takes without a loss and refuses the rest (gremlins'
// exact.go mutants): a ",string" string field holds a quoted JSON string
// or null; a map with unsigned or signed integer keys takes keys spelled as
// strconv spells them, and refuses "07", which would be 7's key.
func TestWrapJSONQuotedStringsAndIntegerKeys(t *testing.T) {
	takesLikeEncodingJSON[quotedReq](t, []bodyCase{
		{`{"key":"k","s":"\"x\""}`, true},
		{`{"key":"k","s":"null"}`, true},
		{`{"key":"k","s":"12"}`, false},
		{`{"key":"k","s":"x"}`, false},
		{`{"key":"k","u":{"7":"a","65535":"b"}}`, true},
		{`{"key":"k","u":{"07":"a"}}`, false},
		{`{"key":"k","u":{"65536":"a"}}`, false},
		{`{"key":"k","i":{"-7":"a","0":"b"}}`, true},
		{`{"key":"k","i":{"-07":"a"}}`, false},
		{`{"key":"k","i":{"+7":"a"}}`, false},
	})
}

type cyclic struct {
	N    json.Number `json:"n"`
	Next *cyclic     `json:"next"`
}

type dashed struct {
	Key    string      `json:"key"`
	Hidden json.Number `json:"-"`
	//lint:ignore SA5008 encoding/json's documented spelling of a field named "-" is the case under test
	Dash json.Number `json:"-,"`
}

type omitInner struct {
	N json.Number `json:"n"`
}

type omitting struct {
	Key string      `json:"key"`
	E   json.Number `json:"e,omitempty"`
	Z   json.Number `json:"z,omitzero"`
	In  omitInner   `json:"in,omitempty"`
	InZ omitInner   `json:"inz,omitzero"`
}

// TestSelectionOfCyclesAndDashes: SelectionOf returns json.Marshal's error
// for a value that holds itself, through a pointer, a map or a slice,
// rather than looking into it without end; it refuses an empty
// json.Number that json.Marshal writes (under the name "-" too) and
// ignores one it does not (json:"-", omitempty on a string, omitzero on a
// zero value), but not one in a struct under omitempty, which json.Marshal
// writes (gremlins' key.go mutants in emptyNumber; the last two were read
// as left out, and such a field encoded as 0).
func TestSelectionOfCyclesAndDashes(t *testing.T) {
	p := &cyclic{N: "1"}
	p.Next = p
	m := map[string]any{"n": json.Number("1")}
	m["self"] = m
	s := []any{json.Number("1"), nil}
	s[1] = s
	for name, v := range map[string]any{"pointer": p, "map": m, "slice": s} {
		var ue *json.UnsupportedValueError
		if _, err := idempotency.SelectionOf("s", v); !errors.As(err, &ue) {
			t.Errorf("a %s that holds itself: %v; want json.Marshal's *json.UnsupportedValueError", name, err)
		}
	}
	if sel, err := idempotency.SelectionOf("s", dashed{Key: "k", Dash: "1"}); err != nil || string(sel.Value) != `{"key":"k","-":1}` {
		t.Errorf(`an empty json.Number under json:"-": %s, %v; want it left out`, sel.Value, err)
	}
	if _, err := idempotency.SelectionOf("s", dashed{Key: "k"}); !errors.Is(err, idempotency.ErrNoKey) {
		t.Errorf(`an empty json.Number under json:"-,": %v; want ErrNoKey`, err)
	}
	if sel, err := idempotency.SelectionOf("s", omitting{Key: "k", In: omitInner{N: "1"}}); err != nil || string(sel.Value) != `{"key":"k","in":{"n":1}}` {
		t.Errorf("empty json.Numbers left out by omitempty and omitzero: %s, %v", sel.Value, err)
	}
	if b, _ := json.Marshal(omitting{Key: "k"}); string(b) != `{"key":"k","in":{"n":0}}` {
		t.Fatalf("json.Marshal wrote %s; the case below assumes it writes the struct under omitempty", b)
	}
	if _, err := idempotency.SelectionOf("s", omitting{Key: "k"}); !errors.Is(err, idempotency.ErrNoKey) {
		t.Errorf("an empty json.Number in a struct under omitempty: %v; want ErrNoKey", err)
	}
}

// TestCompleteRetriesOnItsSchedule: a completion the store refuses with an
// error that may pass is tried Config.CompleteAttempts times in all, 20 ms,
// then 40 ms, then 80 ms apart, on synctest's clock (gremlins' store.go
// mutants: the first backoff, the bound on attempts).
func TestCompleteRetriesOnItsSchedule(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		var mu sync.Mutex
		var at []time.Time
		store := &faultStore{Store: memstore.New(),
			beforeComplete: func() { mu.Lock(); at = append(at, time.Now()); mu.Unlock() },
			completeErr:    func(int32) error { return errThrottled }}
		g, err := idempotency.New(idempotency.Config{Store: store, Namespace: "n", CompleteAttempts: 4, Logger: slog.New(slog.DiscardHandler)})
		if err != nil {
			t.Fatal(err)
		}
		_, err = idempotency.Do(t.Context(), g, idempotency.Raw([]byte(`"k"`)), func(context.Context) (int, error) { return 1, nil })
		if !errors.Is(err, errThrottled) {
			t.Errorf("Do = %v, want the store's error", err)
		}
		mu.Lock()
		defer mu.Unlock()
		var gaps []time.Duration
		for i := 1; i < len(at); i++ {
			gaps = append(gaps, at[i].Sub(at[i-1]))
		}
		if want := []time.Duration{20 * time.Millisecond, 40 * time.Millisecond, 80 * time.Millisecond}; !reflect.DeepEqual(gaps, want) {
			t.Errorf("%d attempts, %v apart; want 4, %v apart", len(at), gaps, want)
		}
	})
}

// TestKeyErrorNamesTheSelector: a key whose record id cannot be made (a
// number the native format refuses, Raw material a Powertools format does
// not read as JSON) fails with a *KeyError whose Source is the Selection's
// selector when it has one, else where the key came from ("Do")
// (gremlins' wrap.go:228 survivor).
func TestKeyErrorNamesTheSelector(t *testing.T) {
	for _, tc := range []struct {
		format idempotency.Format
		key    idempotency.Selection
		want   string
	}{
		{idempotency.FormatNative, idempotency.Selection{Selector: "order number", Value: []byte(`9007199254740993`)}, "order number"},
		{idempotency.FormatPowertoolsPython, idempotency.Raw([]byte(`not JSON`)), "Do"},
	} {
		g, err := idempotency.New(idempotency.Config{Store: memstore.New(), Namespace: "n", Format: tc.format, Logger: slog.New(slog.DiscardHandler)})
		if err != nil {
			t.Fatal(err)
		}
		ran := false
		_, err = idempotency.Do(t.Context(), g, tc.key, func(context.Context) (int, error) { ran = true; return 1, nil })
		ke, ok := errors.AsType[*idempotency.KeyError](err)
		if !ok || ke.Source != tc.want || ran {
			t.Errorf("selector %q: %v (ran %t); want a *KeyError from %q and no run", tc.key.Selector, err, ran, tc.want)
		}
	}
}
