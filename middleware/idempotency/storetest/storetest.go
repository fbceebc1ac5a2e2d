package storetest

import (
	"bytes"
	"context"
	"crypto/rand"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/sqsonce/sqsonce/middleware/idempotency"
	"github.com/sqsonce/sqsonce/middleware/idempotency/driver"
)

// Racers is the number of goroutines that race to claim one key.
const Racers = 200

// Run runs the conformance suite. newStore is called once per subtest; it
// may return a shared store, since every subtest uses keys of its own.
func Run(t *testing.T, newStore func(t *testing.T) driver.Store) {
	t.Helper()
	tests := []struct {
		name string
		fn   func(t *testing.T, s driver.Store)
	}{
		{"AcquireFree", testAcquireFree},
		{"AcquireHeld", testAcquireHeld},
		{"TakeoverAfterLease", testTakeoverAfterLease},
		{"TakeoverAfterExpiry", testTakeoverAfterExpiry},
		{"CompletedReplay", testCompletedReplay},
		{"CompletedOutlivesLease", testCompletedOutlivesLease},
		{"StaleOwnerCannotComplete", testStaleComplete},
		{"StaleOwnerCannotRelease", testStaleRelease},
		{"CompleteOnlyOnce", testCompleteOnce},
		{"CompleteRetriedByOwner", testCompleteRetriedByOwner},
		{"LateCompletionGetsStored", testLateCompletionGetsStored},
		{"ReleaseFreesKey", testReleaseFrees},
		{"CompleteAfterRelease", testCompleteAfterRelease},
		{"CompletedNotReleased", testCompletedNotReleased},
		{"CompleteAfterLeaseLapsed", testCompleteAfterLeaseLapsed},
		{"AcquireRetriedByOwner", testAcquireRetried},
		{"AcquireWithoutOwnerRefused", testAcquireWithoutOwner},
		{"UnknownAttachmentNotDropped", testUnknownAttachment},
		{"RaceOneWinner", testRace},
		{"ClockSkewMargin", testSkewedClocks},
		{"ResultsByteIdentical", testResultsByteIdentical},
		{"LargeResultStoredAsReported", testStoredAsReported},
		{"StrictNoTakeover", testStrictNoTakeover},
		{"QuarantineFenced", testQuarantineFenced},
		{"QuarantineThenReleaseRuns", testQuarantineThenRelease},
		{"QuarantineThenCompleteReplays", testQuarantineThenComplete},
		{"RaceQuarantine", testRaceQuarantine},
		{"StrictClaimOutlivesLease", testStrictClaimOutlivesLease},
		{"StrictLeaseNotLeftBehind", testStrictLeaseNotLeftBehind},
		{"QuarantineRefusedByCompletion", testQuarantineRefusedByCompletion},
		{"QuarantineRefusedByRelease", testQuarantineRefusedByRelease},
		{"RaceQuarantineAnswers", testRaceQuarantineAnswers},
		{"RaceClaimRelease", testRaceClaimRelease},
		{"MessageGroupTenants", testMessageGroupTenants},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			tc.fn(t, newStore(t))
		})
	}
	optional := []struct {
		name string
		fn   func(t *testing.T, s driver.Store, in driver.Inspector)
	}{
		{"Inspect", testInspect},
		{"List", testList},
		{"ListPages", testListPages},
		{"InspectedWrites", testInspectedWrites},
	}
	t.Run("AttachValidator/UnknownWriteRefused", func(t *testing.T) {
		s := newStore(t)
		v, ok := s.(driver.AttachValidator)
		if !ok {
			t.Skipf("%T does not implement driver.AttachValidator: it commits no attached writes", s)
		}
		if err := v.ValidateAttached(key(t), []any{unknownWrite{}}); !errors.Is(err, driver.ErrAttachUnsupported) {
			t.Errorf("ValidateAttached of a write the store cannot commit: %v, want ErrAttachUnsupported", err)
		}
		if err := v.ValidateAttached(key(t), nil); err != nil {
			t.Errorf("ValidateAttached of no writes: %v, want nil", err)
		}
	})
	extends := []struct {
		name string
		fn   func(t *testing.T, s driver.Store, e driver.Extender)
	}{
		{"MovesLease", testExtendMovesLease},
		{"LapsedNotTakenOver", testExtendLapsedNotTakenOver},
		{"Fenced", testExtendFenced},
		{"Refused", testExtendRefused},
		{"Strict", testExtendStrict},
		{"RaceTakeover", testRaceExtendTakeover},
	}
	for _, tc := range extends {
		t.Run("Extender/"+tc.name, func(t *testing.T) {
			s := newStore(t)
			e, ok := s.(driver.Extender)
			if !ok {
				t.Skipf("%T does not implement driver.Extender: a guard on it keeps no claim alive", s)
			}
			tc.fn(t, s, e)
		})
	}
	t.Run("Inspector/InspectedWritesAfterExtend", func(t *testing.T) {
		s := newStore(t)
		in, ok := s.(driver.Inspector)
		e, ok2 := s.(driver.Extender)
		if !ok || !ok2 {
			t.Skipf("%T does not implement both driver.Inspector and driver.Extender", s)
		}
		testInspectedWritesAfterExtend(t, s, e, in)
	})
	for _, tc := range optional {
		t.Run("Inspector/"+tc.name, func(t *testing.T) {
			s := newStore(t)
			in, ok := s.(driver.Inspector)
			if !ok {
				t.Skipf("%T does not implement driver.Inspector", s)
			}
			tc.fn(t, s, in)
		})
	}
}

// base is a clock reading with the precision the records keep (the lease in
// milliseconds; the expiry is compared in seconds).
func base() time.Time { return time.Now().Truncate(time.Second) }

func key(t *testing.T) string {
	return fmt.Sprintf("storetest#%s-%s", t.Name(), rand.Text())
}

func claim(k string, now time.Time, lease time.Duration) driver.Record {
	return driver.Record{
		ID:         k,
		Status:     driver.StatusInProgress,
		ExpiresAt:  now.Add(24 * time.Hour),
		LeaseUntil: now.Add(lease),
		Validation: "v-" + k,
		Owner:      rand.Text(),
	}
}

func mustAcquire(t *testing.T, s driver.Store, rec driver.Record, now time.Time) (driver.Record, bool) {
	t.Helper()
	got, loaded, err := s.Acquire(context.Background(), rec, now, driver.Takeover)
	if err != nil {
		t.Fatalf("Acquire(%s): %v", rec.ID, err)
	}
	return got, loaded
}

func mustComplete(t *testing.T, s driver.Store, rec driver.Record, data string) driver.Record {
	t.Helper()
	rec.Status = driver.StatusCompleted
	rec.Data = []byte(data)
	if _, err := s.Complete(context.Background(), rec); err != nil {
		t.Fatalf("Complete(%s): %v", rec.ID, err)
	}
	return rec
}

// sameRecord compares the fields a store must keep, at their stored precision.
func sameRecord(t *testing.T, what string, got, want driver.Record) {
	t.Helper()
	if got.ID != want.ID || got.Status != want.Status || got.Owner != want.Owner || got.Validation != want.Validation {
		t.Errorf("%s: got id=%q status=%q owner=%q validation=%q, want id=%q status=%q owner=%q validation=%q",
			what, got.ID, got.Status, got.Owner, got.Validation, want.ID, want.Status, want.Owner, want.Validation)
	}
	if got.ExpiresAt.Unix() != want.ExpiresAt.Unix() {
		t.Errorf("%s: ExpiresAt = %v, want %v (epoch seconds)", what, got.ExpiresAt, want.ExpiresAt)
	}
	if want.Status == driver.StatusInProgress && got.LeaseUntil.UnixMilli() != want.LeaseUntil.UnixMilli() {
		t.Errorf("%s: LeaseUntil = %v, want %v (epoch milliseconds)", what, got.LeaseUntil, want.LeaseUntil)
	}
	if want.Status == driver.StatusInProgress && (got.StrictLease.IsZero() != want.StrictLease.IsZero() ||
		!want.StrictLease.IsZero() && got.StrictLease.UnixMilli() != want.StrictLease.UnixMilli()) {
		t.Errorf("%s: StrictLease = %v, want %v (epoch milliseconds)", what, got.StrictLease, want.StrictLease)
	}
	if !jsonEqual(got.Data, want.Data) {
		t.Errorf("%s: Data = %s, want %s", what, got.Data, want.Data)
	}
}

func jsonEqual(a, b []byte) bool {
	if len(a) == 0 || len(b) == 0 {
		return len(a) == len(b)
	}
	var x, y any
	if json.Unmarshal(a, &x) != nil || json.Unmarshal(b, &y) != nil {
		return bytes.Equal(a, b)
	}
	xa, _ := json.Marshal(x)
	ya, _ := json.Marshal(y)
	return bytes.Equal(xa, ya)
}

func testAcquireFree(t *testing.T, s driver.Store) {
	now := base()
	rec := claim(key(t), now, time.Minute)
	prev, loaded := mustAcquire(t, s, rec, now)
	if loaded {
		t.Fatalf("Acquire of a free key: loaded = true (record %+v)", prev)
	}
	if prev.ID != "" {
		t.Errorf("Acquire of a free key returned a replaced record %+v, want the zero Record", prev)
	}
}

func testAcquireHeld(t *testing.T, s driver.Store) {
	k, first, now := claimed(t, s, time.Minute)
	got, loaded := mustAcquire(t, s, claim(k, now, time.Minute), now.Add(time.Second))
	if !loaded {
		t.Fatal("second Acquire of a held key claimed it")
	}
	sameRecord(t, "held record", got, first)
}

func testTakeoverAfterLease(t *testing.T, s driver.Store) {
	k, first, now := claimed(t, s, time.Second)
	later := now.Add(2 * time.Second)
	second := claim(k, later, time.Minute)
	prev, loaded := mustAcquire(t, s, second, later)
	if loaded {
		t.Fatal("Acquire after the lease passed did not take the record over")
	}
	if prev.Owner != first.Owner {
		t.Errorf("takeover returned replaced owner %q, want %q", prev.Owner, first.Owner)
	}
	got, loaded := mustAcquire(t, s, claim(k, later, time.Minute), later)
	if !loaded {
		t.Fatal("third Acquire claimed a key just taken over")
	}
	sameRecord(t, "taken-over record", got, second)
}

func testTakeoverAfterExpiry(t *testing.T, s driver.Store) {
	now := base()
	k := key(t)
	first := claim(k, now, time.Minute)
	first.ExpiresAt = now.Add(time.Hour)
	mustAcquire(t, s, first, now)
	done := mustComplete(t, s, first, `{"n":1}`)
	later := done.ExpiresAt.Add(time.Second)
	prev, loaded := mustAcquire(t, s, claim(k, later, time.Minute), later)
	if loaded {
		t.Fatal("Acquire after the record expired did not claim it")
	}
	if prev.Status != driver.StatusCompleted {
		t.Errorf("replaced record status = %q, want %q", prev.Status, driver.StatusCompleted)
	}
}

func testCompletedReplay(t *testing.T, s driver.Store) {
	k, first, now := claimed(t, s, time.Minute)
	done := mustComplete(t, s, first, `{"summary":"ok","tokens":[1,2,3]}`)
	got, loaded := mustAcquire(t, s, claim(k, now, time.Minute), now.Add(time.Second))
	if !loaded {
		t.Fatal("Acquire of a completed key claimed it")
	}
	sameRecord(t, "completed record", got, done)
}

func testCompletedOutlivesLease(t *testing.T, s driver.Store) {
	k, first, now := claimed(t, s, time.Second)
	mustComplete(t, s, first, `"done"`)
	later := now.Add(time.Hour) // long after the lease, well before the expiry
	got, loaded := mustAcquire(t, s, claim(k, later, time.Minute), later)
	if !loaded || got.Status != driver.StatusCompleted {
		t.Fatalf("a completed record was taken over once its lease had passed (loaded=%v, status=%q)", loaded, got.Status)
	}
}

// claimed claims a new key of the test with the given lease, as of now.
func claimed(t *testing.T, s driver.Store, lease time.Duration) (k string, rec driver.Record, now time.Time) {
	t.Helper()
	now = base()
	k = key(t)
	rec = claim(k, now, lease)
	mustAcquire(t, s, rec, now)
	return k, rec, now
}

// takenOver sets up a key claimed by stale whose lease passed and was taken
// over by winner, as seen at later.
func takenOver(t *testing.T, s driver.Store) (k string, stale, winner driver.Record, later time.Time) {
	t.Helper()
	k, stale, now := claimed(t, s, time.Second)
	later = now.Add(2 * time.Second)
	winner = claim(k, later, time.Minute)
	if _, loaded := mustAcquire(t, s, winner, later); loaded {
		t.Fatal("Acquire after the lease passed did not take the record over")
	}
	return k, stale, winner, later
}

func testStaleComplete(t *testing.T, s driver.Store) {
	k, stale, winner, later := takenOver(t, s)
	stale.Status, stale.Data = driver.StatusCompleted, []byte(`"stale"`)
	_, err := s.Complete(context.Background(), stale)
	if !errors.Is(err, driver.ErrLeaseLost) {
		t.Fatalf("Complete by a stale owner: err = %v, want ErrLeaseLost", err)
	}
	got, _ := mustAcquire(t, s, claim(k, later, time.Minute), later)
	sameRecord(t, "record after a stale Complete", got, winner)
}

func testStaleRelease(t *testing.T, s driver.Store) {
	k, stale, winner, later := takenOver(t, s)
	if err := s.Release(context.Background(), k, stale.Owner); !errors.Is(err, driver.ErrLeaseLost) {
		t.Fatalf("Release by a stale owner: err = %v, want ErrLeaseLost", err)
	}
	got, loaded := mustAcquire(t, s, claim(k, later, time.Minute), later)
	if !loaded {
		t.Fatal("a stale owner's Release deleted the winner's record")
	}
	sameRecord(t, "record after a stale Release", got, winner)
}

func testCompleteOnce(t *testing.T, s driver.Store) {
	// A second completion by another owner (whose claim the key never had)
	// is refused and changes nothing.
	k, rec, now := claimed(t, s, time.Minute)
	done := mustComplete(t, s, rec, `1`)
	other := claim(k, now, time.Minute)
	other.Status, other.Data = driver.StatusCompleted, []byte(`2`)
	if _, err := s.Complete(context.Background(), other); !errors.Is(err, driver.ErrLeaseLost) {
		t.Fatalf("Complete by another owner: err = %v, want ErrLeaseLost", err)
	}
	got, _ := mustAcquire(t, s, claim(k, now, time.Minute), now)
	sameRecord(t, "record after another owner's Complete", got, done)
}

func testCompleteRetriedByOwner(t *testing.T, s driver.Store) {
	// A completion sent again by its owner (a retried request whose first
	// attempt was applied and its response lost) is a success, and keeps
	// what the first attempt stored.
	k, rec, now := claimed(t, s, time.Minute)
	done := mustComplete(t, s, rec, `{"n":1}`)
	if stored, err := s.Complete(context.Background(), done); err != nil || !jsonEqual(stored, done.Data) {
		t.Fatalf("Complete retried by its owner = %s, %v; want success with the stored result %s", stored, err, done.Data)
	}
	got, loaded := mustAcquire(t, s, claim(k, now, time.Minute), now)
	if !loaded {
		t.Fatal("a retried Complete freed the key")
	}
	sameRecord(t, "record after a retried Complete", got, done)
}

// testLateCompletionGetsStored: a completion that finds the record
// COMPLETED under its own owner with another result (an operator resolved
// the claim under its owner while the worker still ran) succeeds, and
// returns the result stored, not its own: every delivery that succeeds
// gets the one stored result.
func testLateCompletionGetsStored(t *testing.T, s driver.Store) {
	k, rec, now := claimed(t, s, time.Minute)
	resolved := mustComplete(t, s, rec, `{"resolved":true}`)
	late := rec
	late.Status, late.Data = driver.StatusCompleted, []byte(`{"worker":1}`)
	stored, err := s.Complete(context.Background(), late)
	if err != nil {
		t.Fatalf("late Complete by the owner: %v, want success", err)
	}
	if !jsonEqual(stored, resolved.Data) {
		t.Errorf("late Complete by the owner reported %s stored, want the stored result %s", stored, resolved.Data)
	}
	got, _ := mustAcquire(t, s, claim(k, now, time.Minute), now)
	sameRecord(t, "record after a late Complete", got, resolved)
}

func testReleaseFrees(t *testing.T, s driver.Store) {
	k, rec, now := claimed(t, s, time.Minute)
	if err := s.Release(context.Background(), k, rec.Owner); err != nil {
		t.Fatalf("Release by the owner: %v", err)
	}
	prev, loaded := mustAcquire(t, s, claim(k, now, time.Minute), now)
	if loaded {
		t.Fatal("Acquire after Release found the record still there")
	}
	if prev.ID != "" {
		t.Errorf("Acquire after Release reported replacing a record %+v, want none: a released claim is no record", prev)
	}
}

func testCompleteAfterRelease(t *testing.T, s driver.Store) {
	k, rec, _ := claimed(t, s, time.Minute)
	if err := s.Release(context.Background(), k, rec.Owner); err != nil {
		t.Fatalf("Release: %v", err)
	}
	rec.Status, rec.Data = driver.StatusCompleted, []byte(`1`)
	if _, err := s.Complete(context.Background(), rec); !errors.Is(err, driver.ErrLeaseLost) {
		t.Fatalf("Complete of a released record: err = %v, want ErrLeaseLost", err)
	}
	if err := s.Release(context.Background(), k, rec.Owner); !errors.Is(err, driver.ErrLeaseLost) {
		t.Fatalf("Release of a missing record: err = %v, want ErrLeaseLost", err)
	}
}

func testCompletedNotReleased(t *testing.T, s driver.Store) {
	k, rec, now := claimed(t, s, time.Minute)
	done := mustComplete(t, s, rec, `"kept"`)
	if err := s.Release(context.Background(), k, rec.Owner); !errors.Is(err, driver.ErrLeaseLost) {
		t.Fatalf("Release of a completed record: err = %v, want ErrLeaseLost", err)
	}
	got, loaded := mustAcquire(t, s, claim(k, now, time.Minute), now)
	if !loaded {
		t.Fatal("Release deleted a completed record")
	}
	sameRecord(t, "completed record after Release", got, done)
}

func testCompleteAfterLeaseLapsed(t *testing.T, s driver.Store) {
	// The lease passed but nobody took the key over: the owner may still
	// complete it (the guard relies on this for slow operations).
	k, rec, now := claimed(t, s, time.Second)
	done := mustComplete(t, s, rec, `"late but ours"`)
	later := now.Add(time.Minute)
	got, loaded := mustAcquire(t, s, claim(k, later, time.Minute), later)
	if !loaded {
		t.Fatal("a record completed after its lease lapsed was claimed again")
	}
	sameRecord(t, "record completed after its lease", got, done)
}

func testAcquireRetried(t *testing.T, s driver.Store) {
	// A claim sent again (a retried request whose first attempt was applied)
	// is still this caller's claim, not someone else's.
	_, rec, now := claimed(t, s, time.Minute)
	if got, loaded := mustAcquire(t, s, rec, now); loaded {
		t.Fatalf("Acquire retried by the owner found its own claim as another's: %+v", got)
	}
	mustComplete(t, s, rec, `1`)
}

func testAcquireWithoutOwner(t *testing.T, s driver.Store) {
	// A claim without an owner token could not be fenced, and would match
	// any ownerless record (such as one Powertools wrote) as its own.
	now := base()
	k := key(t)
	rec := claim(k, now, time.Minute)
	rec.Owner = ""
	if _, _, err := s.Acquire(context.Background(), rec, now, driver.Takeover); err == nil {
		t.Fatal("Acquire without an owner token succeeded")
	}
	if _, loaded := mustAcquire(t, s, claim(k, now, time.Minute), now); loaded {
		t.Fatal("a refused Acquire left a record behind")
	}
}

type unknownWrite struct{}

func testUnknownAttachment(t *testing.T, s driver.Store) {
	k, rec, now := claimed(t, s, time.Minute)
	done := rec
	done.Status, done.Data, done.Attached = driver.StatusCompleted, []byte(`1`), []any{unknownWrite{}}
	if _, err := s.Complete(context.Background(), done); err == nil {
		t.Fatal("Complete with an attachment the store cannot commit succeeded: the write was dropped")
	}
	got, _ := mustAcquire(t, s, claim(k, now, time.Minute), now)
	sameRecord(t, "record after a refused Complete", got, rec)
}

func testRace(t *testing.T, s driver.Store) {
	now := base()
	k := key(t)
	var (
		wins, loads atomic.Int32
		errs        = make(chan error, Racers)
		start       = make(chan struct{})
		wg          sync.WaitGroup
	)
	for range Racers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			<-start
			_, loaded, err := s.Acquire(context.Background(), claim(k, now, time.Minute), now, driver.Takeover)
			switch {
			case err != nil:
				errs <- err
			case loaded:
				loads.Add(1)
			default:
				wins.Add(1)
			}
		}()
	}
	close(start)
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Errorf("Acquire: %v", err)
	}
	if wins.Load() != 1 {
		t.Fatalf("%d of %d racing Acquires won the key, want exactly 1 (loaded: %d)", wins.Load(), Racers, loads.Load())
	}
}

// testSkewedClocks: a holder claims a key with a deadline a minute away; a
// second worker, whose clock runs 2 s ahead, asks for the key 1 s before
// that deadline (its clock reads 1 s past it). With the default margin it
// finds the key in progress, until the lease end the holder stored; with
// none (the control case), it takes the live claim over and runs the
// operation a second time.
func testSkewedClocks(t *testing.T, s driver.Store) {
	for _, tc := range []struct {
		name      string
		margin    time.Duration
		wantTwice bool
	}{
		{"default margin", 0, false},
		{"no margin (control)", time.Nanosecond, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			base := time.Now().Truncate(time.Millisecond)
			deadline := base.Add(time.Minute)
			ns := fmt.Sprintf("storetest-skew-%s", rand.Text())
			guard := func(now time.Time) *idempotency.Guard {
				g, err := idempotency.New(idempotency.Config{
					Store: s, Namespace: ns, SkewMargin: tc.margin,
					Now: func() time.Time { return now }, Logger: slog.New(slog.DiscardHandler),
				})
				if err != nil {
					t.Fatal(err)
				}
				return g
			}
			holder := guard(base)
			ahead := guard(deadline.Add(-time.Second).Add(2 * time.Second))
			k := idempotency.Raw([]byte(`"skewed"`))
			ctx, cancel := context.WithDeadline(context.Background(), deadline)
			defer cancel()

			var runs atomic.Int32
			claimed, finish, done := make(chan struct{}), make(chan struct{}), make(chan struct{})
			go func() {
				defer close(done)
				_, _ = idempotency.Do(ctx, holder, k, func(context.Context) (string, error) {
					runs.Add(1)
					close(claimed)
					<-finish
					return "holder", nil
				})
			}()
			select {
			case <-claimed:
			case <-done:
				t.Fatal("the holder returned without claiming the key")
			case <-time.After(30 * time.Second):
				t.Fatal("the holder did not claim the key within 30s")
			}
			_, err := idempotency.Do(ctx, ahead, k, func(context.Context) (string, error) {
				runs.Add(1)
				return "claimant", nil
			})
			close(finish)
			<-done

			if tc.wantTwice {
				if err != nil || runs.Load() != 2 {
					t.Fatalf("without a margin: err = %v, runs = %d; want the claim taken over and a second run (else this scenario proves nothing)", err, runs.Load())
				}
				return
			}
			var ip *idempotency.InProgressError
			if !errors.As(err, &ip) || runs.Load() != 1 {
				t.Fatalf("claimant 2 s ahead, 1 s before the holder's deadline: err = %v, runs = %d; want ErrInProgress and one run", err, runs.Load())
			}
			if want := deadline.Add(defaultSkewMargin); !ip.LeaseUntil.Equal(want) {
				t.Errorf("lease end %v, want the holder's deadline plus the margin, %v", ip.LeaseUntil, want)
			}
		})
	}
}

// defaultSkewMargin is the guard's default Config.SkewMargin.
const defaultSkewMargin = 5 * time.Second
