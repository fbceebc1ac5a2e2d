package pgstore_test

import (
	"context"
	"testing"
	"time"

	"github.com/sqsonce/sqsonce/middleware/idempotency/driver"
	"github.com/sqsonce/sqsonce/middleware/idempotency/pgstore"
)

// TestCreateSchemaTakesNoLockWhenComplete: CreateSchema on a table that
// has every column and the index (what lambdaenv's pgenv runs at each cold
// start) does not wait for a transaction that read the table, nor make
// claims wait behind it. Before, its ALTER TABLE … ADD COLUMN IF NOT
// EXISTS asked for an ACCESS EXCLUSIVE lock whether or not the column
// existed: it waited for the reader (here until its context ended, a cold
// start's 5 s), and every claim queued behind it. A table that lacks a
// column still gains it.
func TestCreateSchemaTakesNoLockWhenComplete(t *testing.T) {
	ctx := context.Background()
	pool := newPool(t, nil) // the schema, created
	for _, table := range []string{pgstore.DefaultTable, "Other Records"} {
		s, err := pgstore.New(pool, pgstore.WithTable(table))
		if err != nil {
			t.Fatal(err)
		}
		if err := s.CreateSchema(ctx); err != nil {
			t.Fatal(err)
		}
		reader := connect(t, pool)
		tx, err := reader.Begin(ctx)
		if err != nil {
			t.Fatal(err)
		}
		if _, err := tx.Exec(ctx, `SELECT count(*) FROM `+quoted(table)); err != nil {
			t.Fatal(err)
		}
		sctx, cancel := context.WithTimeout(ctx, 2*time.Second)
		start := time.Now()
		err = s.CreateSchema(sctx)
		took := time.Since(start)
		cancel()
		if err != nil || took > time.Second {
			t.Errorf("%s: CreateSchema with a reader open: %v after %v, want nil at once", table, err, took.Round(time.Millisecond))
		}
		cctx, cancel := context.WithTimeout(ctx, 2*time.Second)
		now := time.Now()
		_, refused, err := s.Acquire(cctx, driver.Record{ID: "lock#" + table, Owner: "o", ExpiresAt: now.Add(time.Hour), LeaseUntil: now.Add(time.Minute)}, now, driver.Takeover)
		cancel()
		if err != nil || refused {
			t.Errorf("%s: a claim after it: refused %v, %v", table, refused, err)
		}
		if err := tx.Rollback(ctx); err != nil {
			t.Fatal(err)
		}
	}
	// A table from before strict mode gains its columns, and the index
	// comes back.
	if _, err := pool.Exec(ctx, `ALTER TABLE idempotency DROP COLUMN strict_lease_expiration; DROP INDEX idempotency_expiration_idx`); err != nil {
		t.Fatal(err)
	}
	if err := newStore(t, pool).CreateSchema(ctx); err != nil {
		t.Fatal(err)
	}
	var columns, indexes int
	if err := pool.QueryRow(ctx, `SELECT
		(SELECT count(*) FROM information_schema.columns WHERE table_name = 'idempotency' AND column_name = 'strict_lease_expiration'),
		(SELECT count(*) FROM pg_indexes WHERE indexname = 'idempotency_expiration_idx')`).Scan(&columns, &indexes); err != nil {
		t.Fatal(err)
	}
	if columns != 1 || indexes != 1 {
		t.Errorf("after CreateSchema on an older table: %d strict_lease_expiration columns, %d indexes; want 1, 1", columns, indexes)
	}
}

func quoted(name string) string { return `"` + name + `"` }
