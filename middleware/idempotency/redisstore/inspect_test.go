package redisstore_test

import (
	"context"
	"errors"
	"testing"

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
