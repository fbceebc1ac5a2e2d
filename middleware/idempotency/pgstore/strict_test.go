package pgstore_test

import (
	"context"
	"crypto/rand"
	"errors"
	"testing"
	"time"

	"github.com/sqsonce/sqsonce/middleware/idempotency"
	"github.com/sqsonce/sqsonce/middleware/idempotency/pgstore"
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
	claim := func(id string) idempotency.Record {
		return idempotency.Record{ID: id, Status: idempotency.StatusInProgress, ExpiresAt: now.Add(time.Hour),
			LeaseUntil: now.Add(time.Minute), Owner: rand.Text()}
	}
	var se *idempotency.StoreError
	if _, _, err := s.Acquire(ctx, claim("new#1"), now); !errors.As(err, &se) {
		t.Fatalf("claim on a table without the column: %v, want a *StoreError", err)
	}
	if err := s.CreateSchema(ctx); err != nil {
		t.Fatal(err)
	}
	found, loaded, err := s.AcquireStrict(ctx, claim("old#1"), now)
	if err != nil || !loaded || found.Owner != "dead-worker" {
		t.Fatalf("strict claim of the old lapsed record: %+v, loaded %v, %v; want it found, not taken over", found, loaded, err)
	}
	q, err := s.Quarantine(ctx, found, now)
	if err != nil || !q.Quarantined.Equal(now) || !q.LeaseUntil.Equal(q.ExpiresAt) {
		t.Fatalf("Quarantine of the old record: %+v, %v", q, err)
	}
}
