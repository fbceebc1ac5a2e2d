package pgstore_test

import (
	"context"
	"crypto/rand"
	"errors"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/sqsonce/sqsonce/middleware/idempotency"
	"github.com/sqsonce/sqsonce/middleware/idempotency/driver"
	"github.com/sqsonce/sqsonce/middleware/idempotency/pgstore"
)

// The tests of this file send a fenced write while another write of the
// same record runs: the first holds the row (waits on a lock, or the
// server still runs it after pgx gave up on the connection), the second
// queues behind it, and must judge the record as the first left it, not
// as it was when the second statement began.

// waitForLockWaiters waits until at least n sessions of the pool's
// database wait on a lock.
func waitForLockWaiters(t *testing.T, pool *pgxpool.Pool, n int) {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for time.Now().Before(deadline) {
		var got int
		if err := pool.QueryRow(context.Background(),
			`SELECT count(*) FROM pg_stat_activity WHERE wait_event_type = 'Lock' AND datname = current_database()`).Scan(&got); err != nil {
			t.Error(err)
			return
		}
		if got >= n {
			return
		}
		time.Sleep(5 * time.Millisecond)
	}
	t.Errorf("%d sessions never waited on a lock", n)
}

// holdRow locks the record id's row in a transaction of a session of its
// own, which the caller ends.
func holdRow(t *testing.T, pool *pgxpool.Pool, id string) pgx.Tx {
	t.Helper()
	tx, err := connect(t, pool).Begin(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = tx.Rollback(context.Background()) })
	if _, err := tx.Exec(context.Background(), `SELECT 1 FROM idempotency WHERE id = $1 FOR UPDATE`, id); err != nil {
		t.Fatal(err)
	}
	return tx
}

// isolationLevels are the default_transaction_isolation values the race
// tests run under: "" is the server's default (READ COMMITTED).
var isolationLevels = []string{"", "repeatable read", "serializable"}

// levelName names a subtest for an isolation level.
func levelName(level string) string {
	if level == "" {
		return "default"
	}
	return strings.ReplaceAll(level, " ", "_")
}

// TestCompleteSentAgainWhileFirstRuns: the owner's completion is sent
// again while the first is still on the server, waiting for the record's
// row; the retry queues behind it. Once the first completes the record,
// the retry finds it COMPLETED by its own owner: a success, not a lost
// lease. The retry's statement began when the record was still in
// progress, so judging by that statement's snapshot called the owner's own
// completion a lost lease, and the guard then reported a double run of an
// operation that ran once. Under every isolation level.
func TestCompleteSentAgainWhileFirstRuns(t *testing.T) {
	base := newPool(t, nil)
	for _, level := range isolationLevels {
		t.Run(levelName(level), func(t *testing.T) {
			s := newStore(t, isolatedPool(t, base, level))
			ctx := context.Background()
			now := time.Now()
			rec := claim("resent#"+rand.Text(), now, time.Minute)
			if _, _, err := s.Acquire(ctx, rec, now, driver.Takeover); err != nil {
				t.Fatal(err)
			}
			tx := holdRow(t, base, rec.ID)
			stored := make([][]byte, 2)
			errs := make([]error, 2)
			var wg sync.WaitGroup
			for i := range 2 {
				wg.Go(func() { stored[i], errs[i] = s.Complete(ctx, completed(rec, `"first"`)) })
				waitForLockWaiters(t, base, i+1) // the first waits on the row, then the second
			}
			if err := tx.Commit(ctx); err != nil {
				t.Fatal(err)
			}
			wg.Wait()
			for i, err := range errs {
				if err != nil {
					t.Errorf("Complete attempt %d by the claim's owner: %v; want success (the record is COMPLETED by this owner)", i+1, err)
				} else if string(stored[i]) != `"first"` {
					t.Errorf("Complete attempt %d returned %q as stored, want %q", i+1, stored[i], `"first"`)
				}
			}
		})
	}
}

// TestCompleteWithAttachedSentAgainWhileFirstRuns: as
// TestCompleteSentAgainWhileFirstRuns, for a completion with an attached
// statement: both attempts succeed, and the statement is committed once.
func TestCompleteWithAttachedSentAgainWhileFirstRuns(t *testing.T) {
	base := newPool(t, nil)
	mustExec(t, base, summariesSQL)
	for _, level := range isolationLevels {
		t.Run(levelName(level), func(t *testing.T) {
			s := newStore(t, isolatedPool(t, base, level))
			ctx := context.Background()
			now := time.Now()
			rec := claim("resent-attached#"+rand.Text(), now, time.Minute)
			if _, _, err := s.Acquire(ctx, rec, now, driver.Takeover); err != nil {
				t.Fatal(err)
			}
			done := completed(rec, `"first"`)
			done.Attached = []any{summary(rec.ID, "text")}
			tx := holdRow(t, base, rec.ID)
			errs := make([]error, 2)
			var wg sync.WaitGroup
			for i := range 2 {
				wg.Go(func() { _, errs[i] = s.Complete(ctx, done) })
				waitForLockWaiters(t, base, i+1)
			}
			if err := tx.Commit(ctx); err != nil {
				t.Fatal(err)
			}
			wg.Wait()
			for i, err := range errs {
				if err != nil {
					t.Errorf("Complete attempt %d by the claim's owner: %v; want success", i+1, err)
				}
			}
			if n := count(t, base, `SELECT count(*) FROM summaries WHERE id = $1`, rec.ID); n != 1 {
				t.Errorf("%d summary rows, want 1", n)
			}
		})
	}
}

// TestCompleteInspectedSentAgainWhileFirstRuns: an operator's completion
// sent again while the first waits for the row is a success once the first
// completed the record with the same owner and result.
func TestCompleteInspectedSentAgainWhileFirstRuns(t *testing.T) {
	base := newPool(t, nil)
	for _, level := range isolationLevels {
		t.Run(levelName(level), func(t *testing.T) {
			s := newStore(t, isolatedPool(t, base, level))
			ctx := context.Background()
			now := time.Now()
			rec := claim("resolve#"+rand.Text(), now, time.Minute)
			if _, _, err := s.Acquire(ctx, rec, now, driver.Takeover); err != nil {
				t.Fatal(err)
			}
			found, err := s.Inspect(ctx, rec.ID)
			if err != nil {
				t.Fatal(err)
			}
			done := completed(rec, `"resolved"`)
			tx := holdRow(t, base, rec.ID)
			errs := make([]error, 2)
			var wg sync.WaitGroup
			for i := range 2 {
				wg.Go(func() { errs[i] = s.CompleteInspected(ctx, found.Record, done) })
				waitForLockWaiters(t, base, i+1)
			}
			if err := tx.Commit(ctx); err != nil {
				t.Fatal(err)
			}
			wg.Wait()
			for i, err := range errs {
				if err != nil {
					t.Errorf("CompleteInspected attempt %d: %v; want success (the record is COMPLETED with its owner and result)", i+1, err)
				}
			}
		})
	}
}

// TestFencedWriteAfterWaitJudgesRecordAsLeft: a fenced write that waited
// for the row while another session completed the record is refused with
// the record as that completion left it ("the record is COMPLETED"), not
// as it was when the write began (which read as a record in progress with
// the caller's own owner: "changed while the write ran", "expired").
func TestFencedWriteAfterWaitJudgesRecordAsLeft(t *testing.T) {
	base := newPool(t, nil)
	for _, level := range isolationLevels {
		t.Run(levelName(level), func(t *testing.T) {
			s := newStore(t, isolatedPool(t, base, level))
			ctx := context.Background()
			now := time.Now()
			writes := map[string]func(rec driver.Record, found driver.Record) error{
				"Release": func(rec, _ driver.Record) error { return s.Release(ctx, rec.ID, rec.Owner) },
				"Extend": func(rec, _ driver.Record) error {
					rec.LeaseUntil = rec.LeaseUntil.Add(time.Minute)
					return s.Extend(ctx, rec, now)
				},
				"ReleaseInspected": func(_, found driver.Record) error { return s.ReleaseInspected(ctx, found) },
				"CompleteInspected": func(rec, found driver.Record) error {
					return s.CompleteInspected(ctx, found, completed(rec, `"operator"`))
				},
			}
			for name, write := range writes {
				t.Run(name, func(t *testing.T) {
					rec := claim("judged#"+rand.Text(), now, time.Minute)
					if _, _, err := s.Acquire(ctx, rec, now, driver.Takeover); err != nil {
						t.Fatal(err)
					}
					found, err := s.Inspect(ctx, rec.ID)
					if err != nil {
						t.Fatal(err)
					}
					tx := holdRow(t, base, rec.ID)
					if _, err := tx.Exec(ctx, `UPDATE idempotency SET status = 'COMPLETED', data = '"other"' WHERE id = $1`, rec.ID); err != nil {
						t.Fatal(err)
					}
					errc := make(chan error, 1)
					go func() { errc <- write(rec, found.Record) }()
					waitForLockWaiters(t, base, 1)
					if err := tx.Commit(ctx); err != nil {
						t.Fatal(err)
					}
					err = <-errc
					if !errors.Is(err, driver.ErrLeaseLost) || !strings.Contains(err.Error(), "the record is COMPLETED") {
						t.Errorf("%s after a completion it waited for: %v; want ErrLeaseLost saying the record is COMPLETED", name, err)
					}
				})
			}
		})
	}
}

// slowFirstCompletion is a store whose first Complete is still on the
// server, waiting for the record's row, when its caller sees the
// connection fail: the guard sends the completion again, and the row is
// freed once the retry waits behind the first.
type slowFirstCompletion struct {
	*pgstore.Store
	t     *testing.T
	pool  *pgxpool.Pool
	calls int
	bg    sync.WaitGroup
}

func (s *slowFirstCompletion) Complete(ctx context.Context, rec driver.Record) ([]byte, error) {
	s.calls++
	if s.calls > 1 {
		return s.Store.Complete(ctx, rec)
	}
	tx := holdRow(s.t, s.pool, rec.ID)
	s.t.Cleanup(s.bg.Wait) // before holdRow's cleanup ends the transaction
	s.bg.Go(func() { _, _ = s.Store.Complete(context.WithoutCancel(ctx), rec) })
	waitForLockWaiters(s.t, s.pool, 1)
	s.bg.Go(func() {
		waitForLockWaiters(s.t, s.pool, 2) // the retry waits behind the first
		_ = tx.Commit(context.Background())
	})
	return nil, errors.New("read tcp: connection reset by peer")
}

// TestGuardNoDoubleRunWhenCompletionLandsDuringRetry: through the guard,
// a completion whose first attempt lands while its retry waits for the
// row is one claimed run, reported as such: no double run (no ERROR log,
// no DoubleRuns metric, no alarm) for an operation that ran once.
func TestGuardNoDoubleRunWhenCompletionLandsDuringRetry(t *testing.T) {
	pool := newPool(t, nil)
	store := &slowFirstCompletion{Store: newStore(t, pool), t: t, pool: pool}
	var reports []idempotency.Report
	g, err := idempotency.New(idempotency.Config{Store: store, Namespace: "retried", Logger: discard(),
		OnOutcome: func(_ context.Context, r idempotency.Report) { reports = append(reports, r) }})
	if err != nil {
		t.Fatal(err)
	}
	runs := 0
	got, err := idempotency.Do(context.Background(), g, idempotency.Raw([]byte(`"k-`+rand.Text()+`"`)),
		func(context.Context) (string, error) { runs++; return "once", nil })
	if err != nil || got != "once" || runs != 1 {
		t.Fatalf("Do: %q, %v, %d runs; want %q, nil, 1 run", got, err, runs, "once")
	}
	if store.calls < 2 {
		t.Fatalf("the guard called Complete %d times; the test needs a retry", store.calls)
	}
	if len(reports) != 1 || reports[0].Outcome != idempotency.OutcomeClaimed {
		t.Errorf("reports %+v: want one, outcome claimed (the operation ran once)", reports)
	}
}
