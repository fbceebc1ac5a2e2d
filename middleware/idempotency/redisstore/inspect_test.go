package redisstore_test

import (
	"context"
	"errors"
	"strconv"
	"testing"

	"github.com/redis/go-redis/v9"

	"github.com/sqsonce/sqsonce/middleware/idempotency"
	"github.com/sqsonce/sqsonce/middleware/idempotency/redisstore"
	"github.com/sqsonce/sqsonce/middleware/idempotency/storetest"
)

// quarantine writes a quarantined claim directly, as strict mode leaves one.
func quarantine(rdb redis.UniversalClient, s *redisstore.Store) func(t *testing.T, rec idempotency.Record) {
	return func(t *testing.T, rec idempotency.Record) {
		t.Helper()
		err := rdb.HSet(context.Background(), s.RedisKey(rec.ID),
			idempotency.AttrStatus, string(rec.Status),
			idempotency.AttrExpiration, strconv.FormatInt(rec.ExpiresAt.Unix(), 10),
			idempotency.AttrLeaseExpiry, strconv.FormatInt(rec.LeaseUntil.UnixMilli(), 10),
			idempotency.AttrOwner, rec.Owner,
			idempotency.AttrQuarantined, strconv.FormatInt(rec.Quarantined.UnixMilli(), 10),
		).Err()
		if err != nil {
			t.Fatal(err)
		}
	}
}

func TestInspector(t *testing.T) {
	rdb := newClient(t)
	// A prefix with pattern characters: SCAN's MATCH must take it literally.
	s := newStore(t, rdb, redisstore.WithKeyPrefix("ops*[1]:"))
	// A key of other data beside the records, and one of another prefix.
	if err := rdb.Set(context.Background(), "ops*[1]:not-a-hash", "x", 0).Err(); err != nil {
		t.Fatal(err)
	}
	storetest.RunInspector(t, s, quarantine(rdb, s), 450)
}

func TestInspectorCluster(t *testing.T) {
	rdb := redis.NewClusterClient(&redis.ClusterOptions{Addrs: []string{cluster.Addr(t)}, ContextTimeoutEnabled: true})
	t.Cleanup(func() { rdb.Close() })
	s := newStore(t, rdb)
	storetest.RunInspector(t, s, quarantine(rdb, s), 250)
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
	if err == nil || errors.Is(err, idempotency.ErrNotFound) {
		t.Fatalf("inspect a string key: %v", err)
	}
}
