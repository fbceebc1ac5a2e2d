package redisstore_test

import (
	"context"
	"crypto/rand"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/sqsonce/sqsonce/middleware/idempotency/driver"
	"github.com/sqsonce/sqsonce/middleware/idempotency/redisstore"
)

// TestRefusalQuotesNoStatus: a fenced write refused by a record whose
// status is neither INPROGRESS nor COMPLETED (written by another writer,
// which may put message content there) says so without quoting the status,
// for the guard's writes and the operator's alike. Before, the operator's
// ReleaseInspected and CompleteInspected (sqsonce-ops release and resolve)
// put the whole field in their error: "the record is <status>".
func TestRefusalQuotesNoStatus(t *testing.T) {
	ctx := context.Background()
	rdb := newClient(t)
	s := newStore(t, rdb, redisstore.WithKeyPrefix("quote"))
	const secret = "SECRET-message-content"
	now := time.Now()
	for _, op := range []string{"release-inspected", "complete-inspected", "release", "complete", "extend"} {
		id := "quote-ns#" + op + "-" + rand.Text()
		rec := driver.Record{ID: id, Owner: "owner-" + op, ExpiresAt: now.Add(time.Hour), LeaseUntil: now.Add(time.Minute)}
		if _, refused, err := s.Acquire(ctx, rec, now, driver.Takeover); err != nil || refused {
			t.Fatalf("%s: acquire: refused %v, %v", op, refused, err)
		}
		found, err := s.Inspect(ctx, id)
		if err != nil {
			t.Fatalf("%s: inspect: %v", op, err)
		}
		if err := rdb.HSet(ctx, s.RedisKey(id), driver.AttrStatus, secret).Err(); err != nil {
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
		}
		switch {
		case !errors.Is(err, driver.ErrLeaseLost):
			t.Errorf("%s: %v, want ErrLeaseLost", op, err)
		case strings.Contains(err.Error(), secret):
			t.Errorf("%s: the error quotes the stored status: %v", op, err)
		}
		if got, _ := rdb.HGet(ctx, s.RedisKey(id), driver.AttrStatus).Result(); got != secret {
			t.Errorf("%s: the record was written (status %d bytes)", op, len(got))
		}
	}
}
