package linearize

import (
	"context"
	"crypto/rand"
	"errors"
	"testing"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/redis/go-redis/v9"

	"github.com/sqsonce/sqsonce/internal/testenv/motoserver"
	"github.com/sqsonce/sqsonce/middleware/idempotency/driver"
	"github.com/sqsonce/sqsonce/middleware/idempotency/dynamostore"
	"github.com/sqsonce/sqsonce/middleware/idempotency/memstore"
	"github.com/sqsonce/sqsonce/middleware/idempotency/pgstore"
	"github.com/sqsonce/sqsonce/middleware/idempotency/redisstore"
)

// The tests below pin answers the stores once gave wrongly, in races the
// porcupine runs meet only now and then: each is deterministic, on the
// store's real server, and each is also a case of the conformance suite
// (storetest: QuarantineRefusedByCompletion, QuarantineRefusedByRelease,
// RaceQuarantineAnswers, RaceClaimRelease).
//
//   - Redis and PostgreSQL returned the COMPLETED record that refused a
//     quarantine without its result; the guard replays what a refused
//     quarantine returns, so a strict call that raced the holder's
//     completion acknowledged an empty result, and cached it.
//   - DynamoDB returned a claim released in place as an INPROGRESS record
//     without an owner, which the guard took for a claim.
//   - PostgreSQL returned, for a quarantine that lost a race to another
//     write, the record as its statement began, not the one that refused
//     it.
//   - PostgreSQL reported, for a claim whose statement began before a
//     release committed, the released claim as the record it replaced:
//     the guard then reported the claim taken over, in strict mode too.

// TestQuarantineRefused: a strict claim finds a lapsed claim; before it
// quarantines it, the holder completes it (or releases it). The
// quarantine is refused, and must return the completed record with its
// result (or no record, for the released claim).
func TestQuarantineRefused(t *testing.T) {
	stores := []struct {
		name string
		open func(t *testing.T) driver.Store
	}{
		{"memstore", func(*testing.T) driver.Store { return memstore.New() }},
		{"dynamodb", openDynamo},
		{"redis", openRedis},
		{"postgres", openPostgres},
	}
	for _, tc := range stores {
		t.Run(tc.name, func(t *testing.T) {
			s := tc.open(t)
			ctx := context.Background()
			for _, completes := range []bool{true, false} {
				now := time.Now().Truncate(time.Second)
				id := "known-" + rand.Text()
				holder := driver.Record{ID: id, Status: driver.StatusInProgress, ExpiresAt: now.Add(time.Hour),
					LeaseUntil: now.Add(time.Second), Owner: "holder"}
				if _, _, err := s.Acquire(ctx, holder, now, driver.Takeover); err != nil {
					t.Fatal(err)
				}
				later := now.Add(2 * time.Second)
				strict := driver.Record{ID: id, Status: driver.StatusInProgress, ExpiresAt: later.Add(time.Hour),
					LeaseUntil: later.Add(time.Hour), StrictLease: later.Add(time.Second), Owner: "strict"}
				found, loaded, err := s.Acquire(ctx, strict, later, driver.NoTakeover)
				if err != nil || !loaded {
					t.Fatalf("strict claim of a lapsed claim: loaded=%v, %v; want it found", loaded, err)
				}
				if completes {
					done := holder
					done.Status, done.Data = driver.StatusCompleted, []byte(`"result"`)
					if _, err := s.Complete(ctx, done); err != nil {
						t.Fatal(err)
					}
				} else if err := s.Release(ctx, id, holder.Owner); err != nil {
					t.Fatal(err)
				}
				got, err := s.Quarantine(ctx, found, later)
				if !errors.Is(err, driver.ErrLeaseLost) {
					t.Fatalf("quarantine of a claim completed or released since: %v, want ErrLeaseLost", err)
				}
				switch {
				case completes:
					if !(got.Status == driver.StatusCompleted && string(got.Data) == `"result"` || got.ID == "" && got.Status == "") {
						t.Errorf("refused by the completed record, the quarantine returned status %q with result %q; want it with its result, or none",
							got.Status, got.Data)
					}
				default:
					if got.Status != "" {
						t.Errorf("refused by the released claim, the quarantine returned status %q, owner %q; want no record", got.Status, got.Owner)
					}
				}
			}
		})
	}
}

func openDynamo(t *testing.T) driver.Store {
	db := moto.DynamoDB(t)
	s, err := dynamostore.New(db, motoserver.NewTable(t, db))
	if err != nil {
		t.Fatal(err)
	}
	return s
}

func openRedis(t *testing.T) driver.Store {
	rdb := redis.NewClient(&redis.Options{Addr: redisServer.Addr(t), ContextTimeoutEnabled: true})
	t.Cleanup(func() { rdb.Close() })
	s, err := redisstore.New(context.Background(), rdb)
	if err != nil {
		t.Fatal(err)
	}
	return s
}

func openPostgres(t *testing.T) driver.Store {
	s, _ := openPostgresPool(t)
	return s
}

func openPostgresPool(t *testing.T) (*pgstore.Store, *pgxpool.Pool) {
	ctx := context.Background()
	pool, err := pgxpool.New(ctx, pgServer.NewDatabase(t))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(pool.Close)
	s, err := pgstore.New(pool)
	if err != nil {
		t.Fatal(err)
	}
	if err := s.CreateSchema(ctx); err != nil {
		t.Fatal(err)
	}
	return s, pool
}

// TestQuarantineLostRace: a quarantine of PostgreSQL waits on the row
// lock of another transaction that quarantines the record first; once
// that commits, the quarantine is refused, and must return the record
// that refused it (quarantined), or none.
func TestQuarantineLostRace(t *testing.T) {
	s, pool := openPostgresPool(t)
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	now := time.Now().Truncate(time.Second)
	id := "race-" + rand.Text()
	holder := driver.Record{ID: id, Status: driver.StatusInProgress, ExpiresAt: now.Add(time.Hour),
		LeaseUntil: now.Add(time.Second), Owner: "holder"}
	if _, _, err := s.Acquire(ctx, holder, now, driver.Takeover); err != nil {
		t.Fatal(err)
	}
	later := now.Add(2 * time.Second)
	found, loaded, err := s.Acquire(ctx, driver.Record{ID: id, Status: driver.StatusInProgress, ExpiresAt: later.Add(time.Hour),
		LeaseUntil: later.Add(time.Hour), StrictLease: later.Add(time.Second), Owner: "strict"}, later, driver.NoTakeover)
	if err != nil || !loaded {
		t.Fatalf("strict claim of a lapsed claim: loaded=%v, %v; want it found", loaded, err)
	}

	// The winner: the same write as a quarantine's, held uncommitted.
	tx, err := pool.Begin(ctx)
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _ = tx.Rollback(ctx) }()
	if _, err := tx.Exec(ctx, `UPDATE idempotency SET quarantined = $2, in_progress_expiration = expiration WHERE id = $1`, id, later); err != nil {
		t.Fatal(err)
	}
	type answer struct {
		got driver.Record
		err error
	}
	done := make(chan answer, 1)
	go func() {
		got, err := s.Quarantine(ctx, found, later.Add(time.Millisecond))
		done <- answer{got, err}
	}()
	for waiting := false; !waiting; {
		if err := pool.QueryRow(ctx, `SELECT EXISTS (SELECT FROM pg_stat_activity
			WHERE wait_event_type = 'Lock' AND query LIKE '%quarantined = $4%')`).Scan(&waiting); err != nil {
			t.Fatal(err)
		}
		time.Sleep(5 * time.Millisecond)
	}
	if err := tx.Commit(ctx); err != nil {
		t.Fatal(err)
	}
	a := <-done
	if !errors.Is(a.err, driver.ErrLeaseLost) {
		t.Fatalf("quarantine that lost the race: %v, want ErrLeaseLost", a.err)
	}
	if a.got.ID != "" && a.got.Quarantined.IsZero() {
		t.Errorf("the quarantine that lost the race returned the record not quarantined (lease until %v): the record as its statement began, not the one that refused it",
			a.got.LeaseUntil)
	}
}

// TestClaimRacesRelease: a claim of PostgreSQL waits on the row lock of a
// release (a delete) that commits after the claim's statement began; the
// claim then inserts a new record, and must report none replaced.
func TestClaimRacesRelease(t *testing.T) {
	s, pool := openPostgresPool(t)
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	for mode, name := range map[driver.ClaimMode]string{driver.Takeover: "Takeover", driver.NoTakeover: "NoTakeover"} {
		now := time.Now().Truncate(time.Second)
		id := "release-race-" + rand.Text()
		holder := driver.Record{ID: id, Status: driver.StatusInProgress, ExpiresAt: now.Add(time.Hour),
			LeaseUntil: now.Add(time.Minute), Owner: "holder"}
		if _, _, err := s.Acquire(ctx, holder, now, driver.Takeover); err != nil {
			t.Fatal(err)
		}
		// The release: the same delete as Release's, held uncommitted.
		tx, err := pool.Begin(ctx)
		if err != nil {
			t.Fatal(err)
		}
		if _, err := tx.Exec(ctx, `DELETE FROM idempotency WHERE id = $1`, id); err != nil {
			t.Fatal(err)
		}
		type answer struct {
			prev   driver.Record
			loaded bool
			err    error
		}
		done := make(chan answer, 1)
		go func() {
			next := driver.Record{ID: id, Status: driver.StatusInProgress, ExpiresAt: now.Add(time.Hour),
				LeaseUntil: now.Add(time.Minute), Owner: "next"}
			prev, loaded, err := s.Acquire(ctx, next, now.Add(time.Second), mode)
			done <- answer{prev, loaded, err}
		}()
		for waiting := false; !waiting; {
			if err := pool.QueryRow(ctx, `SELECT EXISTS (SELECT FROM pg_stat_activity
				WHERE wait_event_type = 'Lock' AND query LIKE '%ON CONFLICT (id) DO UPDATE%')`).Scan(&waiting); err != nil {
				t.Fatal(err)
			}
			time.Sleep(5 * time.Millisecond)
		}
		if err := tx.Commit(ctx); err != nil {
			t.Fatal(err)
		}
		a := <-done
		if a.err != nil || a.loaded {
			t.Fatalf("claim after the release committed: loaded=%v, %v; want claimed", a.loaded, a.err)
		}
		if a.prev.ID != "" {
			t.Errorf("%s: the claim that raced a release reported the released claim (owner %q) as the record it replaced; want none",
				name, a.prev.Owner)
		}
	}
}
