package main

import (
	"context"
	"crypto/rand"
	"errors"
	"testing"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/redis/go-redis/v9"

	"github.com/sqsonce/sqsonce/middleware/idempotency"
	"github.com/sqsonce/sqsonce/middleware/idempotency/pgstore"
	"github.com/sqsonce/sqsonce/middleware/idempotency/redisstore"
)

// inspectedStore is a store as release and resolve use it.
type inspectedStore interface {
	idempotency.Store
	idempotency.Inspector
	idempotency.Quarantiner
	inspectedWriter
}

// TestInspectedWrites: each store's ReleaseInspected and CompleteInspected
// act on the record as it was read, and on nothing else: a record that
// changed since (here: quarantined meanwhile, its lease and mark new) is
// left alone with ErrLeaseLost; the record read again is written; a
// completion sent again finds its own and succeeds, one with another
// result does not.
func TestInspectedWrites(t *testing.T) {
	t.Run("dynamodb", func(t *testing.T) {
		_, store, _, _ := dynamoEnv(t, "orders")
		inspectedWrites(t, store)
	})
	t.Run("redis", func(t *testing.T) {
		rdb := redis.NewClient(&redis.Options{Addr: redisS.Addr(t), ContextTimeoutEnabled: true})
		t.Cleanup(func() { rdb.Close() })
		store, err := redisstore.New(context.Background(), rdb, redisstore.WithKeyPrefix("ops-"+rand.Text()[:8]+":"))
		if err != nil {
			t.Fatal(err)
		}
		inspectedWrites(t, store)
	})
	t.Run("postgres", func(t *testing.T) {
		pool, err := pgxpool.New(context.Background(), pgS.NewDatabase(t))
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(pool.Close)
		store, err := pgstore.New(pool)
		if err != nil {
			t.Fatal(err)
		}
		if err := store.CreateSchema(context.Background()); err != nil {
			t.Fatal(err)
		}
		inspectedWrites(t, store)
	})
}

func inspectedWrites(t *testing.T, store inspectedStore) {
	ctx := context.Background()
	now := time.Now()
	lapsed := func(id string) idempotency.StoredRecord {
		t.Helper()
		rec := idempotency.Record{ID: id, Status: idempotency.StatusInProgress, ExpiresAt: now.Add(time.Hour),
			LeaseUntil: now.Add(-time.Minute), Owner: rand.Text()}
		if _, loaded, err := store.Acquire(ctx, rec, now.Add(-time.Hour)); err != nil || loaded {
			t.Fatalf("claim: %v (loaded %v)", err, loaded)
		}
		found, err := store.Inspect(ctx, id)
		if err != nil {
			t.Fatal(err)
		}
		return found
	}

	found := lapsed("orders#complete")
	if _, err := store.Quarantine(ctx, found.Record, now); err != nil {
		t.Fatal(err)
	}
	done := idempotency.Record{ID: found.ID, Status: idempotency.StatusCompleted, Owner: found.Owner,
		ExpiresAt: found.ExpiresAt, Data: []byte(`{"summary":"by hand"}`)}
	if err := store.CompleteInspected(ctx, found.Record, done); !errors.Is(err, idempotency.ErrLeaseLost) {
		t.Errorf("complete a record quarantined since it was read: %v, want ErrLeaseLost", err)
	}
	if err := store.ReleaseInspected(ctx, found.Record); !errors.Is(err, idempotency.ErrLeaseLost) {
		t.Errorf("release a record quarantined since it was read: %v, want ErrLeaseLost", err)
	}
	again, err := store.Inspect(ctx, found.ID)
	if err != nil || again.Status != idempotency.StatusInProgress || again.Quarantined.IsZero() {
		t.Fatalf("after the refused writes: %+v, %v", again, err)
	}
	if err := store.CompleteInspected(ctx, again.Record, done); err != nil {
		t.Fatalf("complete the record as read again: %v", err)
	}
	if err := store.CompleteInspected(ctx, again.Record, done); err != nil {
		t.Errorf("the same completion sent again: %v, want its own found", err)
	}
	other := done
	other.Data = []byte(`{"summary":"another"}`)
	if err := store.CompleteInspected(ctx, again.Record, other); !errors.Is(err, idempotency.ErrLeaseLost) {
		t.Errorf("another result on the completed record: %v, want ErrLeaseLost", err)
	}
	if err := store.ReleaseInspected(ctx, again.Record); !errors.Is(err, idempotency.ErrLeaseLost) {
		t.Errorf("release the completed record: %v, want ErrLeaseLost", err)
	}
	if rec, err := store.Inspect(ctx, found.ID); err != nil || rec.Status != idempotency.StatusCompleted || string(rec.Data) != string(done.Data) || !rec.Quarantined.IsZero() {
		t.Errorf("the completed record: %+v, %v", rec, err)
	}

	found = lapsed("orders#release")
	if err := store.ReleaseInspected(ctx, found.Record); err != nil {
		t.Fatalf("release: %v", err)
	}
	if _, err := store.Inspect(ctx, found.ID); !errors.Is(err, idempotency.ErrNotFound) {
		t.Errorf("after release: %v, want ErrNotFound", err)
	}
	if err := store.ReleaseInspected(ctx, found.Record); !errors.Is(err, idempotency.ErrLeaseLost) {
		t.Errorf("a second release: %v, want ErrLeaseLost", err)
	}
}
