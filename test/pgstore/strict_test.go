package pgstore_test

import (
	"context"
	"crypto/rand"
	"errors"
	"log/slog"
	"os"
	"testing"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/sqsonce/sqsonce/middleware/idempotency"
	"github.com/sqsonce/sqsonce/middleware/idempotency/driver"
	"github.com/sqsonce/sqsonce/middleware/idempotency/pgstore"
	"github.com/sqsonce/sqsonce/middleware/idempotency/storetest"
)

// TestSchemaAddsQuarantined: a table created before strict mode (without
// the column quarantined) fails claims with a store error, never a run,
// until CreateSchema adds the column; then the records it held are read,
// and strict mode works on it.
func TestSchemaAddsQuarantined(t *testing.T) {
	pool := newPool(t, nil)
	const table = "before_strict"
	mustExec(t, pool, `CREATE TABLE before_strict (
    id                     text        PRIMARY KEY,
    status                 text        NOT NULL CHECK (status IN ('INPROGRESS', 'COMPLETED')),
    expiration             timestamptz NOT NULL,
    in_progress_expiration timestamptz NOT NULL,
    data                   bytea,
    validation             text,
    lease_owner            text        NOT NULL
)`)
	ctx := context.Background()
	now := time.Now().Truncate(time.Second)
	mustExec(t, pool, `INSERT INTO before_strict VALUES ('old#1', 'INPROGRESS', now() + interval '1 hour', now() - interval '1 minute', NULL, NULL, 'dead-worker')`)
	s, err := pgstore.New(pool, pgstore.WithTable(table))
	if err != nil {
		t.Fatal(err)
	}
	claim := func(id string) driver.Record {
		return driver.Record{ID: id, Status: driver.StatusInProgress, ExpiresAt: now.Add(time.Hour),
			LeaseUntil: now.Add(time.Minute), Owner: rand.Text()}
	}
	var se *idempotency.StoreError
	if _, _, err := s.Acquire(ctx, claim("new#1"), now, driver.Takeover); !errors.As(err, &se) {
		t.Fatalf("claim on a table without the column: %v, want a *StoreError", err)
	}
	if err := s.CreateSchema(ctx); err != nil {
		t.Fatal(err)
	}
	found, loaded, err := s.Acquire(ctx, claim("old#1"), now, driver.NoTakeover)
	if err != nil || !loaded || found.Owner != "dead-worker" {
		t.Fatalf("strict claim of the old lapsed record: %+v, loaded %v, %v; want it found, not taken over", found, loaded, err)
	}
	q, err := s.Quarantine(ctx, found, now)
	if err != nil || !q.Quarantined.Equal(now) || !q.LeaseUntil.Equal(q.ExpiresAt) {
		t.Fatalf("Quarantine of the old record: %+v, %v", q, err)
	}
}

// TestSchemaAddsStrictLease: a table of the schema before strict claims
// kept their lease apart (without the column strict_lease_expiration)
// fails claims, default and strict, with a store error, and the guard runs
// nothing, until CreateSchema adds the column; then a strict call writes
// its claim as a strict claim.
func TestSchemaAddsStrictLease(t *testing.T) {
	pool := newPool(t, nil)
	mustExec(t, pool, `ALTER TABLE idempotency DROP COLUMN strict_lease_expiration`)
	s := newStore(t, pool)
	ctx := context.Background()
	now := time.Now().Truncate(time.Second)
	claim := driver.Record{ID: "new#1", Status: driver.StatusInProgress, ExpiresAt: now.Add(time.Hour),
		LeaseUntil: now.Add(time.Minute), Owner: rand.Text()}
	var se *idempotency.StoreError
	if _, _, err := s.Acquire(ctx, claim, now, driver.Takeover); !errors.As(err, &se) {
		t.Fatalf("claim on a table without the column: %v, want a *StoreError", err)
	}
	if _, _, err := s.Acquire(ctx, claim, now, driver.NoTakeover); !errors.As(err, &se) {
		t.Fatalf("strict claim on a table without the column: %v, want a *StoreError", err)
	}
	g, err := idempotency.New(idempotency.Config{Store: s, Namespace: "schema", Strict: true, Logger: slog.New(slog.DiscardHandler)})
	if err != nil {
		t.Fatal(err)
	}
	ran := 0
	op := func(context.Context) (int, error) { ran++; return 1, nil }
	key := idempotency.Raw([]byte(`"k"`))
	if _, err := idempotency.Do(ctx, g, key, op); !errors.As(err, &se) || ran != 0 {
		t.Fatalf("strict call on a table without the column: %v, ran %d; want a *StoreError, not run", err, ran)
	}
	if err := s.CreateSchema(ctx); err != nil {
		t.Fatal(err)
	}
	if _, err := idempotency.Do(ctx, g, key, op); err != nil || ran != 1 {
		t.Fatalf("strict call after CreateSchema: %v, ran %d", err, ran)
	}
	id, err := g.ID(key)
	if err != nil {
		t.Fatal(err)
	}
	var strictLease *time.Time
	if err := pool.QueryRow(ctx, `SELECT strict_lease_expiration FROM idempotency WHERE id = $1`, id).Scan(&strictLease); err != nil || strictLease == nil {
		t.Errorf("the strict claim's strict_lease_expiration: %v, %v; want it set", strictLease, err)
	}
}

// TestStrictAcrossProcesses: a strict guard and a default guard in two
// processes on one table (storetest.StrictAcrossProcesses): the strict
// call outlives its lease, the default call does not run the operation.
func TestStrictAcrossProcesses(t *testing.T) {
	const envURL = "SQSONCE_TEST_STRICT_DATABASE"
	storetest.StrictAcrossProcesses(t, func(t *testing.T) (driver.Store, []string) {
		url := os.Getenv(envURL)
		if url == "" {
			url = server.NewDatabase(t)
		}
		pool, err := pgxpool.New(context.Background(), url)
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(pool.Close)
		s := newStore(t, pool)
		if err := s.CreateSchema(context.Background()); err != nil {
			t.Fatal(err)
		}
		return s, []string{envURL + "=" + url}
	})
}

// claimSQL2e43541 is pgstore's claim statement as of commit 2e43541, for
// the default table, before strict claims were written as they are now:
// what an older release, still running beside this one, sends. Its ON
// CONFLICT DO UPDATE does not know the column strict_lease_expiration.
const claimSQL2e43541 = `
WITH old AS (
    SELECT status, expiration, in_progress_expiration, data, validation, lease_owner, quarantined
    FROM "idempotency" WHERE id = $1
), claim AS (
    INSERT INTO "idempotency" AS r (id, status, expiration, in_progress_expiration, data, validation, lease_owner)
    VALUES ($1, 'INPROGRESS', $2, $3, NULL, NULLIF($4, ''), $5)
    ON CONFLICT (id) DO UPDATE SET
        status = excluded.status, expiration = excluded.expiration,
        in_progress_expiration = excluded.in_progress_expiration, data = NULL,
        validation = excluded.validation, lease_owner = excluded.lease_owner, quarantined = NULL
    WHERE r.expiration < $6 OR (NOT $7::boolean AND r.status = 'INPROGRESS' AND r.in_progress_expiration < $6)
    RETURNING 1
)
SELECT EXISTS (SELECT FROM claim), o.status, o.expiration, o.in_progress_expiration, o.data, o.validation, o.lease_owner, o.quarantined
FROM (SELECT) AS one LEFT JOIN old AS o ON true`

// olderClaim sends an older release's claim (claimSQL2e43541) of id at
// now, with a lease of a minute, and reports whether it claimed it.
func olderClaim(t *testing.T, pool *pgxpool.Pool, id string, now time.Time) bool {
	t.Helper()
	var claimed bool
	var rest [7]any
	dest := []any{&claimed}
	for i := range rest {
		dest = append(dest, &rest[i])
	}
	if err := pool.QueryRow(context.Background(), claimSQL2e43541, id, now.Add(time.Hour), now.Add(time.Minute), "", "older-release", now, false).Scan(dest...); err != nil {
		t.Fatal(err)
	}
	return claimed
}

// TestOlderReleaseKeepsOffStrictClaim: the claim an older release sends
// (claimSQL2e43541) does not take over a strict claim whose lease lapsed
// (storetest.OlderReleaseKeepsOff).
func TestOlderReleaseKeepsOffStrictClaim(t *testing.T) {
	pool := newPool(t, nil)
	storetest.OlderReleaseKeepsOff(t, newStore(t, pool), func(t *testing.T, id string, now time.Time) bool {
		return olderClaim(t, pool, id, now)
	})
}

// TestOlderClaimOverStrictRecord: an older release's claim of an expired
// strict record (claimSQL2e43541's ON CONFLICT DO UPDATE) leaves the old
// strict_lease_expiration behind beside its own lease. This release reads
// the record as the older release's claim, not a strict one: its lease
// end is the claim's own, and while that is live no guard quarantines it,
// nor does Quarantine.
func TestOlderClaimOverStrictRecord(t *testing.T) {
	pool := newPool(t, nil)
	s := newStore(t, pool)
	ctx := context.Background()
	now := time.Now().Truncate(time.Millisecond)
	g, err := idempotency.New(idempotency.Config{Store: s, Namespace: "older", Logger: slog.New(slog.DiscardHandler)})
	if err != nil {
		t.Fatal(err)
	}
	key := idempotency.Raw([]byte(`"k"`))
	id, err := g.ID(key)
	if err != nil {
		t.Fatal(err)
	}
	past := now.Add(-2 * time.Hour) // a strict claim, made two hours ago, expired an hour ago
	old := driver.Record{ID: id, Status: driver.StatusInProgress, ExpiresAt: past.Add(time.Hour),
		StrictLease: past.Add(time.Minute), Owner: rand.Text()}
	old.LeaseUntil = old.ExpiresAt
	if _, loaded, err := s.Acquire(ctx, old, past, driver.NoTakeover); err != nil || loaded {
		t.Fatalf("seed the strict claim: loaded %v, %v", loaded, err)
	}
	if !olderClaim(t, pool, id, now) {
		t.Fatal("the older release did not claim the expired strict record")
	}
	var left *time.Time
	if err := pool.QueryRow(ctx, `SELECT strict_lease_expiration FROM idempotency WHERE id = $1`, id).Scan(&left); err != nil || left == nil {
		t.Fatalf("strict_lease_expiration after the older claim: %v, %v; want it left behind (else this test proves nothing)", left, err)
	}
	got, loaded, err := s.Acquire(ctx, driver.Record{ID: id, Status: driver.StatusInProgress, ExpiresAt: now.Add(time.Hour),
		LeaseUntil: now.Add(time.Minute), Owner: rand.Text()}, now, driver.Takeover)
	if err != nil || !loaded {
		t.Fatalf("claim of the older release's live claim: loaded %v, %v; want it refused", loaded, err)
	}
	if want := now.Add(time.Minute); !got.LeaseEnd().Equal(want) {
		t.Errorf("LeaseEnd of the older release's claim = %v, want its own lease %v, not the strict lease left behind", got.LeaseEnd(), want)
	}
	if _, err := s.Quarantine(ctx, got, now); !errors.Is(err, driver.ErrLeaseLost) {
		t.Errorf("Quarantine of the older release's live claim: %v, want ErrLeaseLost", err)
	}
	for _, opts := range [][]idempotency.Option{nil, {idempotency.Strict()}} {
		_, err := idempotency.Do(ctx, g, key, func(context.Context) (int, error) { t.Error("ran"); return 0, nil }, opts...)
		if !errors.Is(err, idempotency.ErrInProgress) {
			t.Errorf("call on the older release's live claim: %v, want ErrInProgress", err)
		}
	}
}
