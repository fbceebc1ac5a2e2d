package redisstore_test

import (
	"context"
	"errors"
	"math/rand/v2"
	"strconv"
	"testing"
	"time"

	"github.com/sqsonce/sqsonce/middleware/idempotency/driver"
	"github.com/sqsonce/sqsonce/middleware/idempotency/redisstore"
)

// TestPrefixesNeverShareKeys: prefix "a" with namespace "bc" and prefix
// "ab" with namespace "c" name two records, not one; a claim through one
// store leaves the other's key absent.
func TestPrefixesNeverShareKeys(t *testing.T) {
	rdb := newClient(t)
	run := strconv.FormatUint(rand.Uint64(), 36)
	a := newStore(t, rdb, redisstore.WithKeyPrefix("p"+run+"a"))
	ab := newStore(t, rdb, redisstore.WithKeyPrefix("p"+run+"ab"))
	idA, idAB := "bc#digest", "c#digest" // the same key under two namespaces
	if a.RedisKey(idA) == ab.RedisKey(idAB) {
		t.Fatalf("prefix a + %q and prefix ab + %q share Redis key %q", idA, idAB, a.RedisKey(idA))
	}
	ctx := context.Background()
	now := time.Now()
	if _, _, err := a.Acquire(ctx, claim(idA, now, time.Minute), now, driver.Takeover); err != nil {
		t.Fatal(err)
	}
	if _, err := ab.Inspect(ctx, idAB); !errors.Is(err, driver.ErrNotFound) {
		t.Errorf("the other store's record is visible under its id: %v", err)
	}
	if _, _, err := ab.Acquire(ctx, claim(idAB, now, time.Minute), now, driver.NoTakeover); err != nil {
		t.Errorf("the other store could not claim its own record: %v", err)
	}
}

// TestUnseparatedPrefixFindsEarlierRecords: a record written with the
// earlier unseparated key (prefix + id) is found through
// WithUnseparatedKeyPrefix, and not through WithKeyPrefix, whose key has
// the "#".
func TestUnseparatedPrefixFindsEarlierRecords(t *testing.T) {
	rdb := newClient(t)
	prefix := "old" + strconv.FormatUint(rand.Uint64(), 36) + ":"
	old := newStore(t, rdb, redisstore.WithUnseparatedKeyPrefix(prefix))
	current := newStore(t, rdb, redisstore.WithKeyPrefix(prefix))
	id := "ns#" + strconv.FormatUint(rand.Uint64(), 16)
	if got, want := old.RedisKey(id), prefix+id; got != want {
		t.Fatalf("unseparated key %q, want %q", got, want)
	}
	if got, want := current.RedisKey(id), prefix+"#"+id; got != want {
		t.Fatalf("separated key %q, want %q", got, want)
	}
	ctx := context.Background()
	now := time.Now()
	rec := claim(id, now, time.Minute)
	if _, _, err := old.Acquire(ctx, rec, now, driver.Takeover); err != nil {
		t.Fatal(err)
	}
	if _, err := old.Complete(ctx, completed(rec, `"done"`)); err != nil {
		t.Fatal(err)
	}
	got, err := old.Inspect(ctx, id)
	if err != nil || got.Status != driver.StatusCompleted {
		t.Fatalf("the earlier record through WithUnseparatedKeyPrefix: %+v, %v", got, err)
	}
	if _, err := current.Inspect(ctx, id); !errors.Is(err, driver.ErrNotFound) {
		t.Errorf("WithKeyPrefix found the unseparated record: %v", err)
	}
	if n, err := rdb.Exists(ctx, prefix+id).Result(); err != nil || n != 1 {
		t.Errorf("the record is not at the unseparated key (exists=%d, %v)", n, err)
	}
}
