package pgstore_test

import (
	"context"
	"testing"

	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/sqsonce/sqsonce/middleware/idempotency"
	"github.com/sqsonce/sqsonce/middleware/idempotency/storetest"
)

// quarantine writes a quarantined claim directly, as strict mode leaves
// one, adding the column quarantined to the table if it has none.
func quarantine(pool *pgxpool.Pool, column string) func(t *testing.T, rec idempotency.Record) {
	return func(t *testing.T, rec idempotency.Record) {
		t.Helper()
		ctx := context.Background()
		if _, err := pool.Exec(ctx, `ALTER TABLE idempotency ADD COLUMN IF NOT EXISTS quarantined `+column); err != nil {
			t.Fatal(err)
		}
		var mark any = rec.Quarantined
		if column == "bigint" {
			mark = rec.Quarantined.UnixMilli()
		}
		_, err := pool.Exec(ctx, `INSERT INTO idempotency (id, status, expiration, in_progress_expiration, lease_owner, quarantined)
			VALUES ($1, $2, $3, $4, $5, $6)`, rec.ID, string(rec.Status), rec.ExpiresAt, rec.LeaseUntil, rec.Owner, mark)
		if err != nil {
			t.Fatal(err)
		}
	}
}

func TestInspector(t *testing.T) {
	for _, column := range []string{"timestamptz", "bigint"} {
		t.Run(column, func(t *testing.T) {
			pool := newPool(t, nil)
			storetest.RunInspector(t, newStore(t, pool), quarantine(pool, column), 1100)
		})
	}
}

// TestInspectWithoutQuarantineColumn: a table of the first schema, without
// the quarantine column, is read too.
func TestInspectWithoutQuarantineColumn(t *testing.T) {
	pool := newPool(t, nil)
	s := newStore(t, pool)
	ctx := context.Background()
	if _, err := pool.Exec(ctx, `INSERT INTO idempotency (id, status, expiration, in_progress_expiration, lease_owner)
		VALUES ('old#1', 'INPROGRESS', now() + interval '1 hour', now() - interval '1 minute', 'o')`); err != nil {
		t.Fatal(err)
	}
	got, err := s.Inspect(ctx, "old#1")
	if err != nil || got.Owner != "o" || !got.Quarantined.IsZero() {
		t.Fatalf("inspect: %+v, %v", got, err)
	}
	n := 0
	for rec, err := range s.List(ctx, idempotency.ListOptions{}) {
		if err != nil || rec.ID != "old#1" {
			t.Errorf("list: %+v, %v", rec, err)
		}
		n++
	}
	if n != 1 {
		t.Errorf("listed %d, want 1", n)
	}
}
