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

// extended is rec with its lease, or a strict claim's StrictLease, moved
// to until.
func extended(rec driver.Record, until time.Time) driver.Record {
	if rec.Strict() {
		rec.StrictLease = until
	} else {
		rec.LeaseUntil = until
	}
	return rec
}

func mustExtend(t *testing.T, e driver.Extender, rec driver.Record, now time.Time) {
	t.Helper()
	if err := e.Extend(context.Background(), rec, now); err != nil {
		t.Fatalf("Extend(%s) by its owner: %v", rec.ID, err)
	}
}

// testExtendMovesLease: the owner's Extend of its live claim moves the
// lease and nothing else; a claim after the old lease's end finds the
// claim held with the new lease, and the owner still completes it. An
// extension sent again after it was applied succeeds.
func testExtendMovesLease(t *testing.T, s driver.Store, e driver.Extender) {
	k, first, now := claimed(t, s, time.Second)
	ext := extended(first, now.Add(time.Hour))
	mustExtend(t, e, ext, now.Add(500*time.Millisecond))
	mustExtend(t, e, ext, now.Add(600*time.Millisecond)) // the same request again
	later := now.Add(2 * time.Second)                    // past the first lease
	got, loaded := mustAcquire(t, s, claim(k, later, time.Minute), later)
	if !loaded {
		t.Fatal("Acquire after the first lease's end took over a claim its owner had extended")
	}
	sameRecord(t, "extended claim", got, ext)
	done := mustComplete(t, s, first, `{"n":1}`)
	got, _ = mustAcquire(t, s, claim(k, later, time.Minute), later)
	sameRecord(t, "extended claim completed", got, done)
}

// testExtendLapsedNotTakenOver: a lease that lapsed without a takeover is
// still its owner's: Extend keeps it, and a claim then finds it held.
func testExtendLapsedNotTakenOver(t *testing.T, s driver.Store, e driver.Extender) {
	k, first, now := claimed(t, s, time.Second)
	late := now.Add(3 * time.Second)
	ext := extended(first, late.Add(time.Minute))
	mustExtend(t, e, ext, late)
	got, loaded := mustAcquire(t, s, claim(k, late, time.Minute), late)
	if !loaded {
		t.Fatal("Acquire took over a lapsed claim its owner had extended")
	}
	sameRecord(t, "claim extended after its lease lapsed", got, ext)
}

// testExtendFenced: an extension by a stale owner, whose claim was taken
// over, is refused and moves nothing: the winner's lease stays as it was,
// and once it lapses a third claim takes the key over.
func testExtendFenced(t *testing.T, s driver.Store, e driver.Extender) {
	k, stale, winner := takenOverShort(t, s)
	at := winner.LeaseUntil.Add(-500 * time.Millisecond)
	err := e.Extend(context.Background(), extended(stale, at.Add(time.Hour)), at)
	if !errors.Is(err, driver.ErrLeaseLost) {
		t.Fatalf("Extend by a stale owner: err = %v, want ErrLeaseLost", err)
	}
	got, loaded := mustAcquire(t, s, claim(k, at, time.Minute), at)
	if !loaded {
		t.Fatal("the winner's live claim was taken over after a stale Extend")
	}
	sameRecord(t, "winner's claim after a stale Extend", got, winner)

	after := winner.LeaseUntil.Add(time.Second)
	third := claim(k, after, time.Minute)
	if prev, loaded := mustAcquire(t, s, third, after); loaded {
		t.Fatalf("Acquire after the winner's lease lapsed was refused by %+v: the refused Extend moved a lease", prev)
	}
	if err := e.Extend(context.Background(), extended(winner, after.Add(time.Hour)), after); !errors.Is(err, driver.ErrLeaseLost) {
		t.Errorf("Extend by the winner after the third claim took over: err = %v, want ErrLeaseLost", err)
	}
}

// takenOverShort is takenOver with the winner's lease a second long.
func takenOverShort(t *testing.T, s driver.Store) (k string, stale, winner driver.Record) {
	t.Helper()
	k, stale, now := claimed(t, s, time.Second)
	later := now.Add(2 * time.Second)
	winner = claim(k, later, time.Second)
	if _, loaded := mustAcquire(t, s, winner, later); loaded {
		t.Fatal("Acquire after the lease passed did not take the record over")
	}
	return k, stale, winner
}

// testExtendRefused: a completed, released, quarantined or expired claim
// is not extended, and stays as it was.
func testExtendRefused(t *testing.T, s driver.Store, e driver.Extender) {
	ctx := context.Background()
	t.Run("completed", func(t *testing.T) {
		k, rec, now := claimed(t, s, time.Minute)
		done := mustComplete(t, s, rec, `"kept"`)
		if err := e.Extend(ctx, extended(rec, now.Add(time.Hour)), now); !errors.Is(err, driver.ErrLeaseLost) {
			t.Fatalf("Extend of a completed record: err = %v, want ErrLeaseLost", err)
		}
		got, _ := mustAcquire(t, s, claim(k, now, time.Minute), now)
		sameRecord(t, "completed record after Extend", got, done)
	})
	t.Run("released", func(t *testing.T) {
		k, rec, now := claimed(t, s, time.Minute)
		if err := s.Release(ctx, k, rec.Owner); err != nil {
			t.Fatalf("Release: %v", err)
		}
		if err := e.Extend(ctx, extended(rec, now.Add(time.Hour)), now); !errors.Is(err, driver.ErrLeaseLost) {
			t.Fatalf("Extend of a released claim: err = %v, want ErrLeaseLost", err)
		}
		if prev, loaded := mustAcquire(t, s, claim(k, now, time.Minute), now); loaded || prev.ID != "" {
			t.Fatalf("Acquire after a refused Extend of a released claim: loaded=%v, replaced %+v; want the key free", loaded, prev)
		}
	})
	t.Run("quarantined", func(t *testing.T) {
		first, found, later := lapsedClaim(t, s)
		q, err := s.Quarantine(ctx, found, later)
		if err != nil {
			t.Fatalf("Quarantine: %v", err)
		}
		if err := e.Extend(ctx, extended(first, later.Add(time.Hour)), later); !errors.Is(err, driver.ErrLeaseLost) {
			t.Fatalf("Extend of a quarantined claim by its owner: err = %v, want ErrLeaseLost", err)
		}
		got, loaded := mustAcquireStrict(t, s, claim(first.ID, later, time.Minute), later)
		if !loaded {
			t.Fatal("a quarantined claim was claimed after a refused Extend")
		}
		wantQuarantined(t, "quarantined claim after Extend", got, first, q.Quarantined)
	})
	t.Run("strict quarantined", func(t *testing.T) {
		now := base()
		first := strictClaim(key(t), now, time.Second)
		mustAcquireStrict(t, s, first, now)
		later := now.Add(2 * time.Second)
		found, _ := mustAcquireStrict(t, s, claim(first.ID, later, time.Minute), later)
		if _, err := s.Quarantine(ctx, found, later); err != nil {
			t.Fatalf("Quarantine: %v", err)
		}
		if err := e.Extend(ctx, extended(first, later.Add(time.Hour)), later); !errors.Is(err, driver.ErrLeaseLost) {
			t.Fatalf("Extend of a quarantined strict claim by its owner: err = %v, want ErrLeaseLost", err)
		}
		got, _ := mustAcquireStrict(t, s, claim(first.ID, later, time.Minute), later)
		if got.Quarantined.IsZero() || got.StrictLease.UnixMilli() != first.StrictLease.UnixMilli() {
			t.Errorf("quarantined strict claim after a refused Extend: Quarantined %v, StrictLease %v; want marked, with its StrictLease %v",
				got.Quarantined, got.StrictLease, first.StrictLease)
		}
	})
	t.Run("expired", func(t *testing.T) {
		now := base()
		rec := claim(key(t), now, time.Minute)
		rec.ExpiresAt = now.Add(time.Hour)
		mustAcquire(t, s, rec, now)
		past := rec.ExpiresAt.Add(time.Second)
		if err := e.Extend(ctx, extended(rec, past.Add(time.Hour)), past); !errors.Is(err, driver.ErrLeaseLost) {
			t.Fatalf("Extend of an expired claim: err = %v, want ErrLeaseLost", err)
		}
		if _, loaded := mustAcquire(t, s, claim(rec.ID, past, time.Minute), past); loaded {
			t.Fatal("an expired claim was not claimed after a refused Extend")
		}
	})
}

// testExtendStrict: the owner's Extend of a strict claim moves its
// StrictLease and keeps its LeaseUntil at its expiry: a quarantine at the
// first lease's end is refused, one after the new end succeeds.
func testExtendStrict(t *testing.T, s driver.Store, e driver.Extender) {
	ctx := context.Background()
	now := base()
	first := strictClaim(key(t), now, time.Second)
	mustAcquireStrict(t, s, first, now)
	ext := extended(first, now.Add(10*time.Second))
	mustExtend(t, e, ext, now.Add(500*time.Millisecond))
	mustExtend(t, e, ext, now.Add(600*time.Millisecond)) // the same request again

	later := now.Add(2 * time.Second) // past the first StrictLease, before the new one
	found, loaded := mustAcquireStrict(t, s, claim(first.ID, later, time.Minute), later)
	if !loaded {
		t.Fatal("Acquire with NoTakeover claimed an extended strict claim")
	}
	sameRecord(t, "extended strict claim", found, ext)
	if !found.Strict() || found.LeaseEnd().UnixMilli() != ext.StrictLease.UnixMilli() {
		t.Errorf("extended strict claim: Strict %v, LeaseEnd %v; want a strict claim ending %v", found.Strict(), found.LeaseEnd(), ext.StrictLease)
	}
	if _, err := s.Quarantine(ctx, found, later); !errors.Is(err, driver.ErrLeaseLost) {
		t.Fatalf("Quarantine of an extended strict claim before its new StrictLease: err = %v, want ErrLeaseLost", err)
	}
	after := ext.StrictLease.Add(time.Second)
	if _, err := s.Quarantine(ctx, found, after); err != nil {
		t.Fatalf("Quarantine of an extended strict claim after its new StrictLease: %v", err)
	}
}

// testRaceExtendTakeover: the owner extends a lapsed claim while Racers
// claims try to take it over: either the extension is applied and every
// claim is refused, or exactly one claim wins and the extension is refused.
func testRaceExtendTakeover(t *testing.T, s driver.Store, e driver.Extender) {
	_, first, now := claimed(t, s, time.Second)
	later := now.Add(2 * time.Second)
	var (
		wins    atomic.Int32
		extErr  error
		errs    = make(chan error, Racers)
		start   = make(chan struct{})
		wg      sync.WaitGroup
		ctx     = context.Background()
		extDone = make(chan struct{})
	)
	go func() {
		defer close(extDone)
		<-start
		extErr = e.Extend(ctx, extended(first, later.Add(time.Hour)), later)
	}()
	for range Racers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			<-start
			_, loaded, err := s.Acquire(ctx, claim(first.ID, later, time.Minute), later, driver.Takeover)
			switch {
			case err != nil:
				errs <- err
			case !loaded:
				wins.Add(1)
			}
		}()
	}
	close(start)
	wg.Wait()
	<-extDone
	close(errs)
	for err := range errs {
		t.Errorf("Acquire: %v", err)
	}
	switch {
	case extErr == nil && wins.Load() == 0:
	case errors.Is(extErr, driver.ErrLeaseLost) && wins.Load() == 1:
	default:
		t.Fatalf("Extend racing %d claims of its lapsed lease: Extend %v, %d claims won; want (nil, 0) or (ErrLeaseLost, 1)",
			Racers, extErr, wins.Load())
	}
}

// testInspectedWritesAfterExtend: an extension between an operator's
// Inspect and its write fails the write's fence, for a default claim (its
// lease moved) and a strict one (its StrictLease moved, its lease kept at
// the expiry); the record read again is written.
func testInspectedWritesAfterExtend(t *testing.T, s driver.Store, e driver.Extender, in driver.Inspector) {
	ctx := context.Background()
	for _, strict := range []bool{false, true} {
		now := base()
		rec := claim(key(t), now, time.Minute)
		if strict {
			rec = strictClaim(rec.ID, now, time.Minute)
		}
		if _, loaded, err := s.Acquire(ctx, rec, now, driver.NoTakeover); err != nil || loaded {
			t.Fatalf("claim (strict %v): loaded %v, %v", strict, loaded, err)
		}
		found, err := in.Inspect(ctx, rec.ID)
		if err != nil {
			t.Fatal(err)
		}
		mustExtend(t, e, extended(rec, now.Add(2*time.Minute)), now)
		done := driver.Record{ID: rec.ID, Status: driver.StatusCompleted, Owner: rec.Owner, ExpiresAt: rec.ExpiresAt, Data: []byte(`"by hand"`)}
		if err := in.CompleteInspected(ctx, found.Record, done); !errors.Is(err, driver.ErrLeaseLost) {
			t.Errorf("strict %v: complete a record extended since it was read: %v, want ErrLeaseLost", strict, err)
		}
		if err := in.ReleaseInspected(ctx, found.Record); !errors.Is(err, driver.ErrLeaseLost) {
			t.Errorf("strict %v: release a record extended since it was read: %v, want ErrLeaseLost", strict, err)
		}
		again, err := in.Inspect(ctx, rec.ID)
		if err != nil || again.Status != driver.StatusInProgress {
			t.Fatalf("strict %v: after the refused writes: %+v, %v", strict, again, err)
		}
		if err := in.ReleaseInspected(ctx, again.Record); err != nil {
			t.Errorf("strict %v: release the record as read again: %v", strict, err)
		}
	}
}
