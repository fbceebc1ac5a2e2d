package pgstore_test

import (
	"context"
	"testing"

	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/sqsonce/sqsonce/middleware/idempotency"
	"github.com/sqsonce/sqsonce/middleware/idempotency/storetest"
)

// quarantine writes a quarantined claim directly, as strict mode leaves
// one.
func quarantine(pool *pgxpool.Pool) func(t *testing.T, rec idempotency.Record) {
	return func(t *testing.T, rec idempotency.Record) {
		t.Helper()
		_, err := pool.Exec(context.Background(), `INSERT INTO idempotency (id, status, expiration, in_progress_expiration, lease_owner, quarantined)
			VALUES ($1, $2, $3, $4, $5, $6)`, rec.ID, string(rec.Status), rec.ExpiresAt, rec.LeaseUntil, rec.Owner, rec.Quarantined)
		if err != nil {
			t.Fatal(err)
		}
	}
}

func TestInspector(t *testing.T) {
	pool := newPool(t, nil)
	storetest.RunInspector(t, newStore(t, pool), quarantine(pool), 1100)
}
