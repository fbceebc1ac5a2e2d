package pgstore_test

import (
	"context"
	"crypto/rand"
	"testing"
	"time"

	"github.com/sqsonce/sqsonce/middleware/idempotency/driver"
)

// timestamptz accepts 'infinity' and '-infinity', which an operator may
// write by hand (to keep a record for good) and which no time.Time holds.
// The store reads them as these times, after and before any time it
// compares with, and writes these times back as the infinities.
var (
	readAsInfinity         = time.Date(9999, 12, 31, 23, 59, 59, 999999000, time.UTC)
	readAsNegativeInfinity = time.Date(1, 1, 1, 0, 0, 0, 1000, time.UTC)
)

// TestInfiniteExpiryKeptForGood: a completed record an operator keeps for
// good (expiration 'infinity') is listed beside the others, inspected in
// full, replayed to a duplicate and never deleted as expired. Scanning
// straight into a time.Time failed on it ("cannot scan Infinity"): the
// listing ended there, Inspect returned nothing, and every duplicate
// failed instead of replaying, until it went to the DLQ.
func TestInfiniteExpiryKeptForGood(t *testing.T) {
	pool := newPool(t, nil)
	s := newStore(t, pool)
	ctx := context.Background()
	now := time.Now()
	var recs []driver.Record
	for _, k := range []string{"kept#a" + rand.Text(), "kept#b" + rand.Text()} {
		rec := claim(k, now, time.Minute)
		if _, _, err := s.Acquire(ctx, rec, now, driver.Takeover); err != nil {
			t.Fatal(err)
		}
		if _, err := s.Complete(ctx, completed(rec, `"kept"`)); err != nil {
			t.Fatal(err)
		}
		recs = append(recs, rec)
	}
	mustExec(t, pool, `UPDATE idempotency SET expiration = 'infinity' WHERE id = $1`, recs[0].ID)

	seen := map[string]bool{}
	for r, err := range s.List(ctx, driver.ListOptions{Prefix: "kept#"}) {
		if err != nil {
			t.Errorf("List yielded %q with %v", r.ID, err)
			if r.ID == "" {
				break
			}
		}
		seen[r.ID] = true
	}
	for _, rec := range recs {
		if !seen[rec.ID] {
			t.Errorf("List never yielded %s", rec.ID)
		}
	}

	got, err := s.Inspect(ctx, recs[0].ID)
	if err != nil || got.ID != recs[0].ID || got.Status != driver.StatusCompleted || string(got.Data) != `"kept"` ||
		!got.ExpiresAt.Equal(readAsInfinity) {
		t.Errorf("Inspect: %+v, %v; want the completed record, expiring at %v", got, err, readAsInfinity)
	}

	later := now.Add(24 * time.Hour) // past the other record's expiry
	for _, mode := range []driver.ClaimMode{driver.Takeover, driver.NoTakeover} {
		rec, loaded, err := s.Acquire(ctx, claim(recs[0].ID, later, time.Minute), later, mode)
		if err != nil || !loaded || string(rec.Data) != `"kept"` {
			t.Errorf("a duplicate of the key kept for good (mode %d): %+v, loaded %v, %v; want its result", mode, rec, loaded, err)
		}
	}
	if _, err := s.DeleteExpired(ctx, 10); err != nil {
		t.Fatal(err)
	}
	if n := count(t, pool, `SELECT count(*) FROM idempotency WHERE id = $1`, recs[0].ID); n != 1 {
		t.Errorf("DeleteExpired deleted the record kept for good")
	}
}

// TestInfiniteLeaseNeverLapses: an INPROGRESS record whose lease ends at
// 'infinity' is never taken over (PostgreSQL's comparison and the store's
// agree): a claim finds it held, with its lease at readAsInfinity.
func TestInfiniteLeaseNeverLapses(t *testing.T) {
	pool := newPool(t, nil)
	s := newStore(t, pool)
	ctx := context.Background()
	now := time.Now()
	rec := claim("held#"+rand.Text(), now, time.Second)
	if _, _, err := s.Acquire(ctx, rec, now, driver.Takeover); err != nil {
		t.Fatal(err)
	}
	mustExec(t, pool, `UPDATE idempotency SET in_progress_expiration = 'infinity' WHERE id = $1`, rec.ID)
	later := now.Add(time.Minute)
	got, loaded, err := s.Acquire(ctx, claim(rec.ID, later, time.Minute), later, driver.Takeover)
	if err != nil || !loaded || got.Owner != rec.Owner || !got.LeaseUntil.Equal(readAsInfinity) {
		t.Errorf("a claim of the record held for good: %+v, loaded %v, %v; want it held, its lease at %v", got, loaded, err, readAsInfinity)
	}
	if _, err := s.Complete(ctx, completed(rec, `1`)); err != nil {
		t.Errorf("the owner's completion: %v", err)
	}
}

// TestNegativeInfinityExpired: a record expiring at '-infinity' is
// expired: a claim takes it over, reporting it expiring at
// readAsNegativeInfinity, and DeleteExpired deletes it and goes on past it.
func TestNegativeInfinityExpired(t *testing.T) {
	pool := newPool(t, nil)
	s := newStore(t, pool)
	ctx := context.Background()
	now := time.Now()
	ids := make([]string, 3)
	for i := range ids {
		rec := claim("gone#"+rand.Text(), now, time.Minute)
		if _, _, err := s.Acquire(ctx, rec, now, driver.Takeover); err != nil {
			t.Fatal(err)
		}
		ids[i] = rec.ID
	}
	mustExec(t, pool, `UPDATE idempotency SET expiration = '-infinity', in_progress_expiration = '-infinity' WHERE id = ANY ($1)`, ids[:2])
	mustExec(t, pool, `UPDATE idempotency SET expiration = now() - interval '1 hour' WHERE id = $1`, ids[2])

	prev, loaded, err := s.Acquire(ctx, claim(ids[0], now, time.Minute), now, driver.Takeover)
	if err != nil || loaded || !prev.ExpiresAt.Equal(readAsNegativeInfinity) || !prev.LeaseUntil.Equal(readAsNegativeInfinity) {
		t.Errorf("a claim of the record expired for good: %+v, loaded %v, %v; want it taken over, the record replaced expiring at %v",
			prev, loaded, err, readAsNegativeInfinity)
	}
	n, err := s.DeleteExpired(ctx, 1) // one row a batch: the next batch starts at -infinity
	if err != nil || n != 2 {
		t.Errorf("DeleteExpired: %d, %v; want 2 (the record at -infinity and the one expired an hour ago)", n, err)
	}
}

// TestInspectedWritesOnInfiniteRecord: an operator's fenced writes and a
// strict claim's quarantine match a record with infinite times as read:
// the store writes the times it read them as back as the infinities, and a
// completion that keeps the record's expiry keeps 'infinity'.
func TestInspectedWritesOnInfiniteRecord(t *testing.T) {
	pool := newPool(t, nil)
	s := newStore(t, pool)
	ctx := context.Background()
	now := time.Now()
	held := func() driver.Record {
		rec := claim("forever#"+rand.Text(), now, time.Second)
		if _, _, err := s.Acquire(ctx, rec, now, driver.Takeover); err != nil {
			t.Fatal(err)
		}
		mustExec(t, pool, `UPDATE idempotency SET expiration = 'infinity' WHERE id = $1`, rec.ID)
		return rec
	}

	rec := held()
	found, err := s.Inspect(ctx, rec.ID)
	if err != nil {
		t.Fatal(err)
	}
	if err := s.ReleaseInspected(ctx, found.Record); err != nil {
		t.Errorf("ReleaseInspected of the record as inspected: %v", err)
	}

	rec = held()
	found, err = s.Inspect(ctx, rec.ID)
	if err != nil {
		t.Fatal(err)
	}
	done := completed(rec, `"resolved"`)
	done.ExpiresAt = found.ExpiresAt
	if err := s.CompleteInspected(ctx, found.Record, done); err != nil {
		t.Errorf("CompleteInspected of the record as inspected: %v", err)
	}
	if n := count(t, pool, `SELECT count(*) FROM idempotency WHERE id = $1 AND expiration = 'infinity'`, rec.ID); n != 1 {
		t.Errorf("the completion that kept the record's expiry did not keep 'infinity'")
	}

	rec = held()
	later := now.Add(time.Minute) // the lease lapsed
	lapsed, loaded, err := s.Acquire(ctx, claim(rec.ID, later, time.Minute), later, driver.NoTakeover)
	if err != nil || !loaded {
		t.Fatalf("a strict claim of the lapsed claim: %+v, loaded %v, %v", lapsed, loaded, err)
	}
	q, err := s.Quarantine(ctx, lapsed, later)
	if err != nil || q.Quarantined.IsZero() || !q.LeaseUntil.Equal(readAsInfinity) {
		t.Errorf("Quarantine of the lapsed claim as found: %+v, %v; want it quarantined, its lease at %v", q, err, readAsInfinity)
	}
}
