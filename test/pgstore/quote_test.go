package pgstore_test

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/sqsonce/sqsonce/middleware/idempotency/driver"
)

// TestRefusalQuotesNoStatus: on a table without the schema's CHECK on
// status (one made by hand), a fenced write refused by a record whose
// status another writer set to anything says so without quoting it. Before,
// every refusal put the whole column in its error: "the record is
// <status>".
func TestRefusalQuotesNoStatus(t *testing.T) {
	ctx := context.Background()
	pool := newPool(t, nil)
	s := newStore(t, pool)
	if _, err := pool.Exec(ctx, `ALTER TABLE idempotency DROP CONSTRAINT idempotency_status_check`); err != nil {
		t.Fatal(err)
	}
	const secret = "SECRET-message-content"
	now := time.Now()
	for _, op := range []string{"release-inspected", "complete-inspected", "release", "complete", "extend", "quarantine"} {
		id := "quote-ns#" + op
		rec := driver.Record{ID: id, Owner: "owner-" + op, ExpiresAt: now.Add(time.Hour), LeaseUntil: now.Add(time.Minute)}
		if op == "quarantine" {
			rec.LeaseUntil = now.Add(-time.Minute)
		}
		if _, refused, err := s.Acquire(ctx, rec, now.Add(-2*time.Minute), driver.Takeover); err != nil || refused {
			t.Fatalf("%s: acquire: refused %v, %v", op, refused, err)
		}
		found, err := s.Inspect(ctx, id)
		if err != nil {
			t.Fatalf("%s: inspect: %v", op, err)
		}
		if _, err := pool.Exec(ctx, `UPDATE idempotency SET status = $2 WHERE id = $1`, id, secret); err != nil {
			t.Fatal(err)
		}
		switch op {
		case "release-inspected":
			err = s.ReleaseInspected(ctx, found.Record)
		case "complete-inspected":
			err = s.CompleteInspected(ctx, found.Record, driver.Record{ID: id, Owner: found.Owner, ExpiresAt: now.Add(time.Hour), Data: []byte(`"r"`)})
		case "release":
			err = s.Release(ctx, id, rec.Owner)
		case "complete":
			_, err = s.Complete(ctx, driver.Record{ID: id, Owner: rec.Owner, ExpiresAt: now.Add(time.Hour), Data: []byte(`"r"`)})
		case "extend":
			err = s.Extend(ctx, driver.Record{ID: id, Owner: rec.Owner, ExpiresAt: now.Add(time.Hour), LeaseUntil: now.Add(2 * time.Minute)}, now)
		case "quarantine":
			_, err = s.Quarantine(ctx, found.Record, now)
		}
		switch {
		case !errors.Is(err, driver.ErrLeaseLost):
			t.Errorf("%s: %v, want ErrLeaseLost", op, err)
		case strings.Contains(err.Error(), secret):
			t.Errorf("%s: the error quotes the stored status: %v", op, err)
		}
		var got string
		if err := pool.QueryRow(ctx, `SELECT status FROM idempotency WHERE id = $1`, id).Scan(&got); err != nil || got != secret {
			t.Errorf("%s: the record was written (status %d bytes, %v)", op, len(got), err)
		}
	}
}
