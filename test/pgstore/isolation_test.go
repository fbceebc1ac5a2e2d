package pgstore_test

import (
	"context"
	"crypto/rand"
	"testing"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/sqsonce/sqsonce/middleware/idempotency/driver"
	"github.com/sqsonce/sqsonce/middleware/idempotency/pgstore"
	"github.com/sqsonce/sqsonce/middleware/idempotency/storetest"
)

// isolatedPool returns a pool on base's database whose sessions run their
// transactions at level by default (default_transaction_isolation, as a
// team sets it database-wide with ALTER DATABASE … SET), closed when t
// ends; base itself when level is empty.
func isolatedPool(t *testing.T, base *pgxpool.Pool, level string) *pgxpool.Pool {
	t.Helper()
	if level == "" {
		return base
	}
	cfg := base.Config().Copy()
	cfg.ConnConfig.RuntimeParams["default_transaction_isolation"] = level
	pool, err := pgxpool.NewWithConfig(context.Background(), cfg)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(pool.Close)
	var got string
	if err := pool.QueryRow(context.Background(), `SHOW transaction_isolation`).Scan(&got); err != nil || got != level {
		t.Fatalf("the pool's sessions run at %q (%v), want %q", got, err, level)
	}
	return pool
}

// TestConformanceUnderStricterIsolation: the conformance suite passes on
// sessions whose transactions default to REPEATABLE READ or SERIALIZABLE.
// The store's statements are written for READ COMMITTED, where a statement
// that waited for a row re-reads it; at the stricter levels PostgreSQL
// fails it instead (SQLSTATE 40001), and claims and quarantines under
// contention failed: the store sends such a statement again.
func TestConformanceUnderStricterIsolation(t *testing.T) {
	base := newPool(t, nil)
	for _, level := range isolationLevels[1:] {
		t.Run(levelName(level), func(t *testing.T) {
			s := newStore(t, isolatedPool(t, base, level))
			storetest.Run(t, func(t *testing.T) driver.Store { return s })
		})
	}
}

// TestAttachedRunAtSessionIsolation: the statements attached to a
// completion run at the isolation level of the session's transactions:
// the store does not weaken a team's SERIALIZABLE for its own writes.
func TestAttachedRunAtSessionIsolation(t *testing.T) {
	base := newPool(t, nil)
	mustExec(t, base, `CREATE TABLE levels (id text PRIMARY KEY, level text NOT NULL)`)
	for _, level := range isolationLevels[1:] {
		t.Run(levelName(level), func(t *testing.T) {
			s := newStore(t, isolatedPool(t, base, level))
			ctx := context.Background()
			now := time.Now()
			rec := claim("level#"+rand.Text(), now, time.Minute)
			if _, _, err := s.Acquire(ctx, rec, now, driver.Takeover); err != nil {
				t.Fatal(err)
			}
			done := completed(rec, `1`)
			done.Attached = []any{pgstore.Statement{
				SQL:  `INSERT INTO levels (id, level) VALUES ($1, current_setting('transaction_isolation'))`,
				Args: []any{rec.ID},
			}}
			if _, err := s.Complete(ctx, done); err != nil {
				t.Fatal(err)
			}
			var got string
			if err := base.QueryRow(ctx, `SELECT level FROM levels WHERE id = $1`, rec.ID).Scan(&got); err != nil {
				t.Fatal(err)
			}
			if got != level {
				t.Errorf("the attached statement ran at %q, want the session's %q", got, level)
			}
		})
	}
}
