package storetest

import (
	"context"
	"errors"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/sqsonce/sqsonce/middleware/idempotency/driver"
)

func mustAcquireStrict(t *testing.T, s driver.Store, rec driver.Record, now time.Time) (driver.Record, bool) {
	t.Helper()
	got, loaded, err := s.Acquire(context.Background(), rec, now, driver.NoTakeover)
	if err != nil {
		t.Fatalf("Acquire(%s, NoTakeover): %v", rec.ID, err)
	}
	return got, loaded
}

// lapsedClaim claims a new key of the test with a one-second lease and
// returns the record as Acquire with NoTakeover finds it two seconds later, lapsed.
func lapsedClaim(t *testing.T, s driver.Store) (first, found driver.Record, later time.Time) {
	t.Helper()
	_, first, now := claimed(t, s, time.Second)
	later = now.Add(2 * time.Second)
	found, loaded := mustAcquireStrict(t, s, claim(first.ID, later, time.Minute), later)
	if !loaded {
		t.Fatal("Acquire with NoTakeover took over a claim whose lease lapsed")
	}
	sameRecord(t, "lapsed claim", found, first)
	return first, found, later
}

// wantQuarantined checks a record just quarantined at at: still
// INPROGRESS with its owner, marked, its lease extended to its expiry.
func wantQuarantined(t *testing.T, what string, got, first driver.Record, at time.Time) {
	t.Helper()
	if got.Status != driver.StatusInProgress || got.Owner != first.Owner || got.Validation != first.Validation {
		t.Errorf("%s: status=%q owner=%q validation=%q, want %q, the claim's owner and validation", what,
			got.Status, got.Owner, got.Validation, driver.StatusInProgress)
	}
	if got.Quarantined.UnixMilli() != at.UnixMilli() {
		t.Errorf("%s: Quarantined = %v, want %v (epoch milliseconds)", what, got.Quarantined, at)
	}
	if got.ExpiresAt.Unix() != first.ExpiresAt.Unix() {
		t.Errorf("%s: ExpiresAt = %v, want %v (unchanged)", what, got.ExpiresAt, first.ExpiresAt)
	}
	if got.LeaseUntil.UnixMilli() != first.ExpiresAt.Unix()*1000 {
		t.Errorf("%s: LeaseUntil = %v, want the record's expiry %v", what, got.LeaseUntil, first.ExpiresAt)
	}
}

// testStrictNoTakeover: a strict claim takes a free key, an expired record
// and a released claim, as Acquire does, but never a lapsed lease.
func testStrictNoTakeover(t *testing.T, s driver.Store) {
	now := base()
	free := claim(key(t), now, time.Minute)
	if prev, loaded := mustAcquireStrict(t, s, free, now); loaded || prev.ID != "" {
		t.Fatalf("Acquire with NoTakeover of a free key: loaded=%v, replaced %+v; want a claim", loaded, prev)
	}
	if got, loaded := mustAcquireStrict(t, s, free, now); loaded {
		t.Fatalf("Acquire with NoTakeover retried by its owner found its own claim as another's: %+v", got)
	}

	first, _, later := lapsedClaim(t, s)
	if got, loaded := mustAcquireStrict(t, s, claim(first.ID, later.Add(time.Hour), time.Minute), later.Add(time.Hour)); !loaded {
		t.Fatal("Acquire with NoTakeover an hour after the lease lapsed took the claim over")
	} else {
		sameRecord(t, "lapsed claim an hour later", got, first)
	}
	// The same lapsed claim is taken over by a default claim (the control).
	if _, loaded := mustAcquire(t, s, claim(first.ID, later, time.Minute), later); loaded {
		t.Fatal("Acquire did not take over the lapsed claim: this test proves nothing")
	}

	k, rec, now := claimed(t, s, time.Minute)
	if err := s.Release(context.Background(), k, rec.Owner); err != nil {
		t.Fatalf("Release: %v", err)
	}
	if prev, loaded := mustAcquireStrict(t, s, claim(k, now, time.Minute), now); loaded || prev.ID != "" {
		t.Fatalf("Acquire with NoTakeover after Release: loaded=%v, replaced %+v; want a claim of no record", loaded, prev)
	}

	now = base()
	exp := claim(key(t), now, time.Minute)
	exp.ExpiresAt = now.Add(time.Hour)
	mustAcquire(t, s, exp, now)
	past := exp.ExpiresAt.Add(time.Second)
	if _, loaded := mustAcquireStrict(t, s, claim(exp.ID, past, time.Minute), past); loaded {
		t.Fatal("Acquire with NoTakeover did not claim an expired record")
	}
}

// testQuarantineFenced: Quarantine writes only on the lapsed claim it was
// given, once; the quarantined record stays INPROGRESS to every claim.
func testQuarantineFenced(t *testing.T, s driver.Store) {
	ctx := context.Background()
	first, found, later := lapsedClaim(t, s)

	other := found
	other.Owner = "not-" + found.Owner
	if _, err := s.Quarantine(ctx, other, later); !errors.Is(err, driver.ErrLeaseLost) {
		t.Fatalf("Quarantine with another owner: err = %v, want ErrLeaseLost", err)
	}
	early := found.LeaseUntil.Add(-time.Millisecond)
	if _, err := s.Quarantine(ctx, found, early); !errors.Is(err, driver.ErrLeaseLost) {
		t.Fatalf("Quarantine before the lease ended: err = %v, want ErrLeaseLost", err)
	}

	got, err := s.Quarantine(ctx, found, later)
	if err != nil {
		t.Fatalf("Quarantine of the lapsed claim: %v", err)
	}
	wantQuarantined(t, "Quarantine's record", got, first, later)

	again, err := s.Quarantine(ctx, found, later.Add(time.Second))
	if !errors.Is(err, driver.ErrLeaseLost) {
		t.Fatalf("second Quarantine: err = %v, want ErrLeaseLost", err)
	}
	if again.ID != "" {
		wantQuarantined(t, "record returned by the second Quarantine", again, first, later)
	}

	// Every claim, default or strict, finds it in progress, long after the
	// lease the claim had.
	at := later.Add(time.Hour)
	rec, loaded := mustAcquire(t, s, claim(first.ID, at, time.Minute), at)
	if !loaded {
		t.Fatal("Acquire took over a quarantined record")
	}
	wantQuarantined(t, "quarantined record read by Acquire", rec, first, later)
	rec, loaded = mustAcquireStrict(t, s, claim(first.ID, at, time.Minute), at)
	if !loaded {
		t.Fatal("Acquire with NoTakeover took over a quarantined record")
	}
	wantQuarantined(t, "quarantined record read by Acquire with NoTakeover", rec, first, later)

	// A completed record is not quarantined.
	k, c, now := claimed(t, s, time.Second)
	done := mustComplete(t, s, c, `1`)
	c.LeaseUntil = now.Add(time.Second)
	if _, err := s.Quarantine(ctx, c, now.Add(2*time.Second)); !errors.Is(err, driver.ErrLeaseLost) {
		t.Fatalf("Quarantine of a completed record: err = %v, want ErrLeaseLost", err)
	}
	got, _ = mustAcquire(t, s, claim(k, now, time.Minute), now.Add(2*time.Second))
	sameRecord(t, "completed record after Quarantine", got, done)
	if !got.Quarantined.IsZero() {
		t.Errorf("completed record quarantined at %v", got.Quarantined)
	}
}

// testQuarantineThenRelease: the owner's (or an operator's) Release of a
// quarantined record frees its key and clears the mark.
func testQuarantineThenRelease(t *testing.T, s driver.Store) {
	first, found, later := lapsedClaim(t, s)
	if _, err := s.Quarantine(context.Background(), found, later); err != nil {
		t.Fatalf("Quarantine: %v", err)
	}
	if err := s.Release(context.Background(), first.ID, "not-"+first.Owner); !errors.Is(err, driver.ErrLeaseLost) {
		t.Fatalf("Release of a quarantined record by another owner: err = %v, want ErrLeaseLost", err)
	}
	if err := s.Release(context.Background(), first.ID, first.Owner); err != nil {
		t.Fatalf("Release of a quarantined record by its owner: %v", err)
	}
	next := claim(first.ID, later, time.Minute)
	if prev, loaded := mustAcquireStrict(t, s, next, later); loaded || prev.ID != "" {
		t.Fatalf("Acquire with NoTakeover after the release: loaded=%v, replaced %+v; want the key free to run again", loaded, prev)
	}
	got, loaded := mustAcquire(t, s, claim(first.ID, later, time.Minute), later)
	if !loaded {
		t.Fatal("the new claim was not kept")
	}
	sameRecord(t, "claim after the release", got, next)
	if !got.Quarantined.IsZero() {
		t.Errorf("a new claim after the release is quarantined (at %v)", got.Quarantined)
	}
}

// testQuarantineThenComplete: the owner's late completion (or an operator's
// resolve) of a quarantined record completes it and clears the mark; later
// claims replay its result.
func testQuarantineThenComplete(t *testing.T, s driver.Store) {
	first, found, later := lapsedClaim(t, s)
	if _, err := s.Quarantine(context.Background(), found, later); err != nil {
		t.Fatalf("Quarantine: %v", err)
	}
	stale := first
	stale.Owner = "not-" + first.Owner
	stale.Status, stale.Data = driver.StatusCompleted, []byte(`"other"`)
	if _, err := s.Complete(context.Background(), stale); !errors.Is(err, driver.ErrLeaseLost) {
		t.Fatalf("Complete of a quarantined record by another owner: err = %v, want ErrLeaseLost", err)
	}
	done := mustComplete(t, s, first, `{"late":true}`)
	for _, strict := range []bool{false, true} {
		var (
			got    driver.Record
			loaded bool
		)
		if strict {
			got, loaded = mustAcquireStrict(t, s, claim(first.ID, later, time.Minute), later)
		} else {
			got, loaded = mustAcquire(t, s, claim(first.ID, later, time.Minute), later)
		}
		if !loaded {
			t.Fatalf("claim (strict %v) after the completion claimed the key", strict)
		}
		sameRecord(t, "completed record", got, done)
		if !got.Quarantined.IsZero() {
			t.Errorf("claim (strict %v): the completed record is still marked quarantined (at %v)", strict, got.Quarantined)
		}
	}
}

// testRaceQuarantine: of Racers strict claims of one lapsed key at once,
// none claims it and exactly one quarantines it.
func testRaceQuarantine(t *testing.T, s driver.Store) {
	_, first, now := claimed(t, s, time.Second)
	later := now.Add(2 * time.Second)
	var (
		runs, quarantines, lost atomic.Int32
		errs                    = make(chan error, Racers)
		start                   = make(chan struct{})
		wg                      sync.WaitGroup
	)
	for range Racers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			<-start
			found, loaded, err := s.Acquire(context.Background(), claim(first.ID, later, time.Minute), later, driver.NoTakeover)
			switch {
			case err != nil:
				errs <- err
				return
			case !loaded:
				runs.Add(1)
				return
			case !found.Quarantined.IsZero():
				lost.Add(1)
				return
			}
			_, err = s.Quarantine(context.Background(), found, later)
			switch {
			case err == nil:
				quarantines.Add(1)
			case errors.Is(err, driver.ErrLeaseLost):
				lost.Add(1)
			default:
				errs <- err
			}
		}()
	}
	close(start)
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Errorf("racer: %v", err)
	}
	if runs.Load() != 0 || quarantines.Load() != 1 {
		t.Fatalf("%d racing strict claims of a lapsed key: %d claimed it (want 0), %d quarantined it (want 1), %d found it quarantined",
			Racers, runs.Load(), quarantines.Load(), lost.Load())
	}
}

// strictClaim is a claim of k as a strict guard writes one: its lease at
// the record's expiry, so that no claim takes it over, and its own lease
// end in StrictLease.
func strictClaim(k string, now time.Time, lease time.Duration) driver.Record {
	rec := claim(k, now, lease)
	rec.StrictLease, rec.LeaseUntil = rec.LeaseUntil, rec.ExpiresAt
	return rec
}

// testStrictClaimOutlivesLease: a strict claim keeps its StrictLease; once
// that lapsed, no claim, default or strict, takes it over while the record
// lives; Quarantine judges the lapse by StrictLease (not before it ends)
// and keeps it; the owner's completion still completes it.
func testStrictClaimOutlivesLease(t *testing.T, s driver.Store) {
	ctx := context.Background()
	now := base()
	first := strictClaim(key(t), now, time.Second)
	if prev, loaded := mustAcquireStrict(t, s, first, now); loaded || prev.ID != "" {
		t.Fatalf("Acquire with NoTakeover of a free key: loaded=%v, replaced %+v; want a claim", loaded, prev)
	}
	later := now.Add(2 * time.Second) // past StrictLease
	var found driver.Record
	for _, at := range []time.Time{later, later.Add(time.Hour)} {
		got, loaded := mustAcquire(t, s, claim(first.ID, at, time.Minute), at)
		if !loaded {
			t.Fatalf("Acquire %v after a strict claim's lease lapsed took it over", at.Sub(now))
		}
		sameRecord(t, "strict claim read by Acquire", got, first)
		if got.LeaseEnd().UnixMilli() != first.StrictLease.UnixMilli() {
			t.Errorf("LeaseEnd of the strict claim = %v, want its StrictLease %v", got.LeaseEnd(), first.StrictLease)
		}
		if found, loaded = mustAcquireStrict(t, s, claim(first.ID, at, time.Minute), at); !loaded {
			t.Fatalf("Acquire with NoTakeover %v after a strict claim's lease lapsed took it over", at.Sub(now))
		}
		sameRecord(t, "strict claim read by Acquire with NoTakeover", found, first)
	}

	if _, err := s.Quarantine(ctx, found, now.Add(500*time.Millisecond)); !errors.Is(err, driver.ErrLeaseLost) {
		t.Fatalf("Quarantine of a strict claim before its StrictLease ended: err = %v, want ErrLeaseLost", err)
	}
	got, err := s.Quarantine(ctx, found, later)
	if err != nil {
		t.Fatalf("Quarantine of a strict claim whose StrictLease lapsed: %v", err)
	}
	wantQuarantined(t, "quarantined strict claim", got, first, later)
	if got.StrictLease.UnixMilli() != first.StrictLease.UnixMilli() {
		t.Errorf("quarantined strict claim: StrictLease = %v, want it kept, %v", got.StrictLease, first.StrictLease)
	}
	done := mustComplete(t, s, first, `{"late":true}`)
	rec, loaded := mustAcquire(t, s, claim(first.ID, later, time.Minute), later)
	if !loaded {
		t.Fatal("a claim after the owner's completion claimed the key")
	}
	sameRecord(t, "completed strict claim", rec, done)
}

// testStrictLeaseNotLeftBehind: a claim over a released or expired strict
// claim is a claim of its own, without the old StrictLease.
func testStrictLeaseNotLeftBehind(t *testing.T, s driver.Store) {
	now := base()
	released := strictClaim(key(t), now, time.Minute)
	mustAcquireStrict(t, s, released, now)
	if err := s.Release(context.Background(), released.ID, released.Owner); err != nil {
		t.Fatalf("Release of a strict claim by its owner: %v", err)
	}
	expired := strictClaim(key(t), now, time.Minute)
	expired.ExpiresAt = now.Add(time.Hour)
	expired.LeaseUntil = expired.ExpiresAt
	mustAcquireStrict(t, s, expired, now)
	for _, tc := range []struct {
		what string
		old  driver.Record
		at   time.Time
	}{{"released", released, now}, {"expired", expired, expired.ExpiresAt.Add(time.Second)}} {
		next := claim(tc.old.ID, tc.at, time.Minute)
		if prev, loaded := mustAcquire(t, s, next, tc.at); loaded {
			t.Fatalf("Acquire of a %s strict claim: refused by %+v", tc.what, prev)
		}
		got, loaded := mustAcquire(t, s, claim(tc.old.ID, tc.at, time.Minute), tc.at)
		if !loaded {
			t.Fatalf("the claim over a %s strict claim was not kept", tc.what)
		}
		sameRecord(t, "claim over a "+tc.what+" strict claim", got, next)
		if !got.StrictLease.IsZero() || !got.LeaseEnd().Equal(got.LeaseUntil) {
			t.Errorf("claim over a %s strict claim: StrictLease %v, LeaseEnd %v; want none, and its own lease %v",
				tc.what, got.StrictLease, got.LeaseEnd(), got.LeaseUntil)
		}
	}
}
