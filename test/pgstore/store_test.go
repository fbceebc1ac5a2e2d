package pgstore_test

import (
	"context"
	"crypto/rand"
	"errors"
	"log/slog"
	"sync/atomic"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/sqsonce/sqsonce/middleware/idempotency"
	"github.com/sqsonce/sqsonce/middleware/idempotency/driver"
	"github.com/sqsonce/sqsonce/middleware/idempotency/pgstore"
)

const summariesSQL = `CREATE TABLE summaries (id text PRIMARY KEY, summary text NOT NULL, CHECK (summary <> 'bad'))`

func claim(key string, now time.Time, lease time.Duration) driver.Record {
	return driver.Record{
		ID: key, Status: driver.StatusInProgress,
		ExpiresAt: now.Add(time.Hour), LeaseUntil: now.Add(lease), Owner: rand.Text(),
	}
}

func completed(rec driver.Record, data string) driver.Record {
	rec.Status, rec.Data = driver.StatusCompleted, []byte(data)
	return rec
}

func summary(id, text string) pgstore.Statement {
	return pgstore.Statement{SQL: `INSERT INTO summaries (id, summary) VALUES ($1, $2)`, Args: []any{id, text}}
}

func discard() *slog.Logger { return slog.New(slog.DiscardHandler) }

func mustExec(t testing.TB, db pgstore.DB, sql string, args ...any) {
	t.Helper()
	if _, err := db.Exec(context.Background(), sql, args...); err != nil {
		t.Fatalf("%s: %v", sql, err)
	}
}

func count(t testing.TB, db pgstore.DB, sql string, args ...any) int {
	t.Helper()
	var n int
	if err := db.QueryRow(context.Background(), sql, args...).Scan(&n); err != nil {
		t.Fatalf("%s: %v", sql, err)
	}
	return n
}

// TestRoundTrips counts the round trips of each step on the connection,
// once the statements are prepared on it (one connection, so they are).
func TestRoundTrips(t *testing.T) {
	trips := &roundTrips{}
	pool := newPool(t, trips)
	mustExec(t, pool, summariesSQL)
	s := newStore(t, pool)
	ctx := context.Background()
	now := time.Now()

	// Prepare every statement on every connection of the pool: the first
	// use of a statement on a connection prepares it (one round trip more).
	warm := func() {
		w := claim("rt#"+rand.Text(), now, time.Minute)
		if _, _, err := s.Acquire(ctx, w, now, driver.Takeover); err != nil {
			t.Fatal(err)
		}
		if _, _, err := s.Acquire(ctx, claim(w.ID, now, time.Minute), now, driver.Takeover); err != nil {
			t.Fatal(err)
		}
		if err := s.Release(ctx, w.ID, w.Owner); err != nil {
			t.Fatal(err)
		}
		if _, _, err := s.Acquire(ctx, w, now, driver.Takeover); err != nil {
			t.Fatal(err)
		}
		done := completed(w, `1`)
		done.Attached = []any{summary(w.ID, "warm")}
		if _, err := s.Complete(ctx, done); err != nil {
			t.Fatal(err)
		}
		w = claim("rt#"+rand.Text(), now, time.Minute)
		if _, _, err := s.Acquire(ctx, w, now, driver.Takeover); err != nil {
			t.Fatal(err)
		}
		if _, err := s.Complete(ctx, completed(w, `1`)); err != nil {
			t.Fatal(err)
		}
	}
	for range pool.Stat().TotalConns() + 1 {
		warm()
	}

	rec := claim("rt#"+rand.Text(), now, time.Minute)
	other := claim(rec.ID, now, time.Minute)
	freed := claim("rt#"+rand.Text(), now, time.Minute)
	tx := claim("rt#"+rand.Text(), now, time.Minute)
	steps := []struct {
		name string
		want int
		do   func() error
	}{
		{"claim (Acquire of a free key)", 1, func() error {
			_, loaded, err := s.Acquire(ctx, rec, now, driver.Takeover)
			return want(err, !loaded, "claimed")
		}},
		{"in progress (Acquire of a held key)", 1, func() error {
			got, loaded, err := s.Acquire(ctx, other, now, driver.Takeover)
			return want(err, loaded && got.Status == driver.StatusInProgress && got.Owner == rec.Owner, "loaded in progress")
		}},
		{"complete", 1, func() error {
			return errOf(s.Complete(ctx, completed(rec, `{"summary":"ok"}`)))
		}},
		{"replay (Acquire of a completed key)", 1, func() error {
			got, loaded, err := s.Acquire(ctx, other, now, driver.Takeover)
			return want(err, loaded && string(got.Data) == `{"summary":"ok"}`, "loaded with its data")
		}},
		{"claim then release", 2, func() error {
			if _, _, err := s.Acquire(ctx, freed, now, driver.Takeover); err != nil {
				return err
			}
			return s.Release(ctx, freed.ID, freed.Owner)
		}},
		{"claim then complete with an attached write", 2, func() error {
			if _, _, err := s.Acquire(ctx, tx, now, driver.Takeover); err != nil {
				return err
			}
			done := completed(tx, `1`)
			done.Attached = []any{summary(tx.ID, "text")}
			return errOf(s.Complete(ctx, done))
		}},
	}
	for _, st := range steps {
		trips.take()
		if err := st.do(); err != nil {
			t.Fatalf("%s: %v", st.name, err)
		}
		got := trips.take()
		t.Logf("round trips: %-45s %d", st.name, got)
		if got != st.want {
			t.Errorf("%s: %d round trips, want %d", st.name, got, st.want)
		}
	}
	if n := count(t, pool, `SELECT count(*) FROM summaries WHERE id = $1`, tx.ID); n != 1 {
		t.Errorf("the attached write was not committed (%d rows)", n)
	}
}

// TestFirstUsePrepares: the first run of a statement on a connection costs
// one round trip more, pgx preparing it; later runs reuse it.
func TestFirstUsePrepares(t *testing.T) {
	trips := &roundTrips{}
	pool := newPoolOf(t, trips, 1) // one connection: CreateSchema's, nothing prepared on it
	s := newStore(t, pool)
	ctx := context.Background()
	now := time.Now()
	for i, want := range []int{2, 1} {
		trips.take()
		if _, _, err := s.Acquire(ctx, claim("prep#"+rand.Text(), now, time.Minute), now, driver.Takeover); err != nil {
			t.Fatal(err)
		}
		if got := trips.take(); got != want {
			t.Errorf("claim %d on the connection: %d round trips, want %d", i+1, got, want)
		}
	}
}

func want(err error, cond bool, what string) error {
	if err != nil {
		return err
	}
	if !cond {
		return errors.New("not " + what)
	}
	return nil
}

// TestAttachedStatements: attached statements commit with the completion,
// or nothing does.
func TestAttachedStatements(t *testing.T) {
	pool := newPool(t, nil)
	mustExec(t, pool, summariesSQL)
	s := newStore(t, pool)
	ctx := context.Background()
	now := time.Now()
	summaries := func(id string) int {
		return count(t, pool, `SELECT count(*) FROM summaries WHERE id = $1`, id)
	}
	status := func(id string) string {
		var st string
		if err := pool.QueryRow(ctx, `SELECT status FROM idempotency WHERE id = $1`, id).Scan(&st); err != nil {
			return "absent"
		}
		return st
	}

	t.Run("both commit", func(t *testing.T) {
		rec := claim("tx#"+rand.Text(), now, time.Minute)
		if _, _, err := s.Acquire(ctx, rec, now, driver.Takeover); err != nil {
			t.Fatal(err)
		}
		done := completed(rec, `1`)
		done.Attached = []any{summary(rec.ID, "a"), &pgstore.Statement{SQL: `UPDATE summaries SET summary = summary || '!' WHERE id = $1`, Args: []any{rec.ID}}}
		if _, err := s.Complete(ctx, done); err != nil {
			t.Fatal(err)
		}
		var text string
		if err := pool.QueryRow(ctx, `SELECT summary FROM summaries WHERE id = $1`, rec.ID).Scan(&text); err != nil || text != "a!" {
			t.Errorf("summary = %q, %v; want both statements applied in order (a!)", text, err)
		}
		if st := status(rec.ID); st != "COMPLETED" {
			t.Errorf("record %s, want COMPLETED", st)
		}
	})

	t.Run("lease lost: nothing", func(t *testing.T) {
		rec := claim("tx#"+rand.Text(), now, time.Second)
		if _, _, err := s.Acquire(ctx, rec, now, driver.Takeover); err != nil {
			t.Fatal(err)
		}
		later := now.Add(2 * time.Second)
		if _, loaded, err := s.Acquire(ctx, claim(rec.ID, later, time.Minute), later, driver.Takeover); err != nil || loaded {
			t.Fatalf("takeover: loaded=%v %v", loaded, err)
		}
		done := completed(rec, `1`)
		done.Attached = []any{summary(rec.ID, "stale")}
		_, err := s.Complete(ctx, done)
		if !errors.Is(err, driver.ErrLeaseLost) {
			t.Fatalf("Complete by the stale owner: %v, want ErrLeaseLost", err)
		}
		if n := summaries(rec.ID); n != 0 {
			t.Errorf("a completion whose lease was lost committed its attached write (%d rows)", n)
		}
		if st := status(rec.ID); st != "INPROGRESS" {
			t.Errorf("record %s, want the new owner's INPROGRESS", st)
		}
	})

	t.Run("statement fails: nothing", func(t *testing.T) {
		rec := claim("tx#"+rand.Text(), now, time.Minute)
		if _, _, err := s.Acquire(ctx, rec, now, driver.Takeover); err != nil {
			t.Fatal(err)
		}
		done := completed(rec, `1`)
		done.Attached = []any{summary(rec.ID, "good"), summary(rec.ID+"-2", "bad")} // the second breaks the CHECK
		_, err := s.Complete(ctx, done)
		var se *pgstore.StatementError
		var pgErr *pgconn.PgError
		if !errors.As(err, &se) || se.Index != 1 || !se.Permanent() || !errors.As(err, &pgErr) || pgErr.Code != "23514" {
			t.Fatalf("Complete with a failing statement: %v, want a permanent StatementError at index 1 wrapping check_violation", err)
		}
		if errors.Is(err, driver.ErrLeaseLost) {
			t.Errorf("a failed statement reported as a lost lease: %v", err)
		}
		if n := summaries(rec.ID); n != 0 {
			t.Errorf("the first attached statement committed although the second failed (%d rows)", n)
		}
		if st := status(rec.ID); st != "INPROGRESS" {
			t.Errorf("record %s, want still INPROGRESS", st)
		}
		// The owner can still complete it (or release it).
		done.Attached = []any{summary(rec.ID, "good")}
		if _, err := s.Complete(ctx, done); err != nil {
			t.Fatalf("Complete after fixing the statement: %v", err)
		}
		// And completing it again, as a retry whose reply was lost would,
		// is a success that writes nothing again.
		if _, err := s.Complete(ctx, done); err != nil {
			t.Fatalf("Complete sent again by its owner: %v", err)
		}
		if n := summaries(rec.ID); n != 1 {
			t.Errorf("%d summary rows after the completion and its repeat, want 1", n)
		}
	})

	t.Run("statement refused by the server: nothing", func(t *testing.T) {
		rec := claim("tx#"+rand.Text(), now, time.Minute)
		if _, _, err := s.Acquire(ctx, rec, now, driver.Takeover); err != nil {
			t.Fatal(err)
		}
		done := completed(rec, `1`)
		done.Attached = []any{summary(rec.ID, "good"), pgstore.Statement{SQL: `INSRT INTO summaries VALUES ($1)`, Args: []any{"x"}}}
		_, err := s.Complete(ctx, done)
		var se *pgstore.StatementError
		if !errors.As(err, &se) || !se.Permanent() {
			t.Fatalf("Complete with a statement that does not parse: %v, want a permanent StatementError", err)
		}
		if n := summaries(rec.ID); n != 0 || status(rec.ID) != "INPROGRESS" {
			t.Errorf("after a refused batch: %d summary rows, record %s; want none, INPROGRESS", n, status(rec.ID))
		}
	})

	t.Run("refused when attached", func(t *testing.T) {
		if err := s.ValidateAttached("x", []any{"INSERT ..."}); !errors.Is(err, driver.ErrAttachUnsupported) {
			t.Errorf("a string attached: %v, want ErrAttachUnsupported", err)
		}
		if err := s.ValidateAttached("x", []any{pgstore.Statement{}}); !errors.Is(err, driver.ErrAttachUnsupported) {
			t.Errorf("a statement without SQL: %v, want ErrAttachUnsupported", err)
		}
	})
}

// TestAttachThroughGuard: the summary row commits with the record through
// the guard; a second delivery replays and writes nothing.
func TestAttachThroughGuard(t *testing.T) {
	pool := newPool(t, nil)
	mustExec(t, pool, summariesSQL)
	g, err := idempotency.New(idempotency.Config{Store: newStore(t, pool), Namespace: "guard-" + rand.Text(), Logger: discard()})
	if err != nil {
		t.Fatal(err)
	}
	var runs atomic.Int32
	op := func(ctx context.Context) (string, error) {
		runs.Add(1)
		id := idempotency.RecordID(ctx)
		return "summary", pgstore.Attach(ctx, summary(id, "summary"))
	}
	for i := range 2 {
		if v, err := idempotency.Do(context.Background(), g, idempotency.Raw([]byte("doc-1")), op); err != nil || v != "summary" {
			t.Fatalf("delivery %d: %q, %v", i+1, v, err)
		}
	}
	if runs.Load() != 1 {
		t.Errorf("operation ran %d times for two deliveries, want 1", runs.Load())
	}
	if n := count(t, pool, `SELECT count(*) FROM summaries`); n != 1 {
		t.Errorf("%d summary rows, want 1", n)
	}
}

// lossyDB loses the reply of the next QueryRow after the server applied it.
type lossyDB struct {
	pgstore.DB
	armed atomic.Bool
}

type lostRow struct{ row pgx.Row }

var errReplyLost = errors.New("connection reset after the statement was sent")

func (r lostRow) Scan(dest ...any) error {
	if err := r.row.Scan(dest...); err != nil {
		return err
	}
	return errReplyLost
}

func (d *lossyDB) QueryRow(ctx context.Context, sql string, args ...any) pgx.Row {
	row := d.DB.QueryRow(ctx, sql, args...)
	if d.armed.CompareAndSwap(true, false) {
		return lostRow{row}
	}
	return row
}

// TestCompleteReplyLost: a completion applied whose reply was lost, sent
// again by the same owner, succeeds; another owner's is still refused.
func TestCompleteReplyLost(t *testing.T) {
	db := &lossyDB{DB: newPool(t, nil)}
	s := newStore(t, db)
	ctx := context.Background()
	now := time.Now()
	rec := claim("lost#"+rand.Text(), now, time.Minute)
	if _, _, err := s.Acquire(ctx, rec, now, driver.Takeover); err != nil {
		t.Fatal(err)
	}
	db.armed.Store(true)
	if _, err := s.Complete(ctx, completed(rec, `"first"`)); !errors.Is(err, errReplyLost) {
		t.Fatalf("Complete whose reply was lost: %v", err)
	}
	if _, err := s.Complete(ctx, completed(rec, `"first"`)); err != nil {
		t.Fatalf("Complete sent again by its owner: %v, want success", err)
	}
	if _, err := s.Complete(ctx, completed(claim(rec.ID, now, time.Minute), `"other"`)); !errors.Is(err, driver.ErrLeaseLost) {
		t.Fatalf("Complete by another owner: %v, want ErrLeaseLost", err)
	}
	got, loaded, err := s.Acquire(ctx, claim(rec.ID, now, time.Minute), now, driver.Takeover)
	if err != nil || !loaded || string(got.Data) != `"first"` {
		t.Fatalf("record after the retried Complete: %+v loaded=%v %v", got, loaded, err)
	}
}

func TestCreateSchemaTwiceAndConcurrently(t *testing.T) {
	pool := newPool(t, nil) // created once already
	ctx := context.Background()
	errs := make(chan error, 4)
	for range 4 {
		go func() { errs <- newStore(t, pool).CreateSchema(ctx) }()
	}
	for range 4 {
		if err := <-errs; err != nil {
			t.Errorf("CreateSchema again: %v", err)
		}
	}
	if n := count(t, pool, `SELECT count(*) FROM pg_indexes WHERE tablename = 'idempotency'`); n != 2 {
		t.Errorf("%d indexes on idempotency, want 2 (primary key, expiration)", n)
	}
}

// TestDeleteExpired deletes exactly the expired records, in batches.
func TestDeleteExpired(t *testing.T) {
	pool := newPool(t, nil)
	ctx := context.Background()
	mustExec(t, pool, `INSERT INTO idempotency (id, status, expiration, in_progress_expiration, lease_owner)
		SELECT 'old#' || i, 'COMPLETED', now() - interval '1 hour', now(), 'o' FROM generate_series(1, 2500) AS i`)
	mustExec(t, pool, `INSERT INTO idempotency (id, status, expiration, in_progress_expiration, lease_owner)
		SELECT 'live#' || i, 'COMPLETED', now() + interval '1 hour', now(), 'o' FROM generate_series(1, 300) AS i`)
	n, err := newStore(t, pool).DeleteExpired(ctx, 1000)
	if err != nil || n != 2500 {
		t.Fatalf("DeleteExpired = %d, %v; want 2500", n, err)
	}
	if left := count(t, pool, `SELECT count(*) FROM idempotency`); left != 300 {
		t.Errorf("%d records left, want the 300 live ones", left)
	}
	if _, err := newStore(t, pool).DeleteExpired(ctx, 0); err == nil {
		t.Error("DeleteExpired with batch size 0 succeeded")
	}
}

// BenchmarkDeleteExpired measures DeleteExpired on a table of 1,000,000
// expired records (and 100,000 live ones) in batches of 10,000: one
// iteration deletes them all.
//
//	go test -run '^$' -bench DeleteExpired -benchtime 1x ./test/pgstore/
func BenchmarkDeleteExpired(b *testing.B) {
	pool := newPool(b, nil)
	store := newStore(b, pool)
	ctx := context.Background()
	const expired, live, batch = 1_000_000, 100_000, 10_000
	for b.Loop() {
		b.StopTimer()
		mustExec(b, pool, `INSERT INTO idempotency (id, status, expiration, in_progress_expiration, data, lease_owner)
			SELECT 'old#' || i, 'COMPLETED', now() - interval '1 hour' - i * interval '1 ms', now(), '{"summary":"x"}', 'o'
			FROM generate_series(1, $1::int) AS i`, expired)
		mustExec(b, pool, `INSERT INTO idempotency (id, status, expiration, in_progress_expiration, lease_owner)
			SELECT 'live#' || i, 'COMPLETED', now() + interval '1 hour', now(), 'o' FROM generate_series(1, $1::int) AS i`, live)
		mustExec(b, pool, `VACUUM ANALYZE idempotency`)
		b.StartTimer()
		n, err := store.DeleteExpired(ctx, batch)
		if err != nil || n != expired {
			b.Fatalf("DeleteExpired = %d, %v; want %d", n, err, expired)
		}
		b.StopTimer()
		mustExec(b, pool, `TRUNCATE idempotency`)
		b.StartTimer()
	}
	b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N)/expired, "ns/row")
}

var _ pgstore.DB = (*pgxpool.Pool)(nil)
