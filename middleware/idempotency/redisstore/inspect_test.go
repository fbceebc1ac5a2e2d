package redisstore_test

import (
	"context"
	"crypto/rand"
	"errors"
	"testing"
	"time"

	"github.com/sqsonce/sqsonce/middleware/idempotency/driver"
	"github.com/sqsonce/sqsonce/middleware/idempotency/redisstore"
	"github.com/sqsonce/sqsonce/middleware/idempotency/storetest"
)

// TestConformancePatternPrefix: the conformance suite, its Inspector cases
// included, on a store whose key prefix holds pattern characters, beside
// keys it does not own.
func TestConformancePatternPrefix(t *testing.T) {
	rdb := newClient(t)
	// A prefix with pattern characters: SCAN's MATCH must take it literally.
	s := newStore(t, rdb, redisstore.WithKeyPrefix("ops*[1]:"))
	// A key of other data beside the records, and one of another prefix.
	if err := rdb.Set(context.Background(), "ops*[1]:#not-a-hash", "x", 0).Err(); err != nil {
		t.Fatal(err)
	}
	storetest.Run(t, func(*testing.T) driver.Store { return s })
}

// TestInspectNotAHash: a key holding another type is an error, not a
// missing record.
func TestInspectNotAHash(t *testing.T) {
	rdb := newClient(t)
	s := newStore(t, rdb)
	if err := rdb.Set(context.Background(), "str#1", "x", 0).Err(); err != nil {
		t.Fatal(err)
	}
	_, err := s.Inspect(context.Background(), "str#1")
	if err == nil || errors.Is(err, driver.ErrNotFound) {
		t.Fatalf("inspect a string key: %v", err)
	}
}

// TestListPrefixNotUTF8: a key prefix (or namespace) that is not valid
// UTF-8 lists its records: SCAN's pattern is escaped byte by byte. Before,
// each invalid byte became U+FFFD and List found nothing, so sqsonce-ops
// list showed nothing and resolve saw no sealed results.
func TestListPrefixNotUTF8(t *testing.T) {
	s := newStore(t, newClient(t), redisstore.WithKeyPrefix("p\xff\xfe-"+rand.Text()+":"))
	ctx := context.Background()
	now := time.Now()
	rec := driver.Record{ID: "ns\xff#" + rand.Text(), Status: driver.StatusInProgress, ExpiresAt: now.Add(time.Hour),
		LeaseUntil: now.Add(time.Minute), Owner: rand.Text()}
	if _, _, err := s.Acquire(ctx, rec, now, driver.Takeover); err != nil {
		t.Fatal(err)
	}
	for _, prefix := range []string{"", "ns\xff#"} {
		n := 0
		for r, err := range s.List(ctx, driver.ListOptions{Prefix: prefix}) {
			if err != nil {
				t.Fatal(err)
			}
			if r.ID == rec.ID {
				n++
			}
		}
		if n != 1 {
			t.Errorf("List (prefix %q) found the record %d times, want 1", prefix, n)
		}
	}
}
