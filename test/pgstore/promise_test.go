package pgstore_test

import (
	"context"
	"crypto/rand"
	"errors"
	"runtime"
	"strings"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/sqsonce/sqsonce/middleware/idempotency/driver"
	"github.com/sqsonce/sqsonce/middleware/idempotency/pgstore"
)

// connect returns a connection of its own to the pool's database, closed
// when t ends: a second session beside the store's.
func connect(t *testing.T, pool *pgxpool.Pool) *pgx.Conn {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	conn, err := pgx.ConnectConfig(ctx, pool.Config().ConnConfig)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { conn.Close(context.Background()) })
	return conn
}

// TestStalePlanAfterDDL: after DDL changes the result type of a statement
// pgx has prepared and cached on the store's connection, PostgreSQL
// refuses it once (SQLSTATE 0A000 "cached plan must not change result
// type"); the statement did not run, and the store sends it again. Every
// step succeeds on its first call after the DDL, an attached statement's
// included. Issue 15, item 13 (the error was permanent: the record stayed
// INPROGRESS and the work ran again after the lease).
func TestStalePlanAfterDDL(t *testing.T) {
	pool := newPoolOf(t, nil, 1) // one connection: every statement below is cached on it
	mustExec(t, pool, `CREATE TABLE summaries (id text PRIMARY KEY, summary text NOT NULL)`)
	s := newStore(t, pool)
	ctx := context.Background()
	now := time.Now()
	returning := func(id string) pgstore.Statement {
		return pgstore.Statement{SQL: `INSERT INTO summaries (id, summary) VALUES ($1, 'text') RETURNING summary`, Args: []any{id}}
	}
	steps := func() {
		t.Helper()
		rec := claim("ddl#"+rand.Text(), now, time.Minute)
		if _, loaded, err := s.Acquire(ctx, rec, now, driver.Takeover); err != nil || loaded {
			t.Fatalf("Acquire: loaded=%v, %v", loaded, err)
		}
		if err := s.Release(ctx, rec.ID, rec.Owner); err != nil {
			t.Fatalf("Release: %v", err)
		}
		if _, _, err := s.Acquire(ctx, rec, now, driver.Takeover); err != nil {
			t.Fatal(err)
		}
		if _, err := s.Complete(ctx, completed(rec, `1`)); err != nil {
			t.Fatalf("Complete: %v", err)
		}
		if _, loaded, err := s.Acquire(ctx, claim(rec.ID, now, time.Minute), now, driver.Takeover); err != nil || !loaded {
			t.Fatalf("Acquire of the completed key: loaded=%v, %v", loaded, err)
		}
		tx := claim("ddl#"+rand.Text(), now, time.Minute)
		if _, _, err := s.Acquire(ctx, tx, now, driver.Takeover); err != nil {
			t.Fatal(err)
		}
		done := completed(tx, `1`)
		done.Attached = []any{returning(tx.ID)}
		if _, err := s.Complete(ctx, done); err != nil {
			t.Fatalf("Complete with an attached statement: %v", err)
		}
	}
	steps() // prepares and caches every statement on the connection

	ddl := connect(t, pool)
	for _, sql := range []string{
		`ALTER TABLE idempotency ALTER COLUMN status TYPE varchar(16), ALTER COLUMN lease_owner TYPE varchar(64), ALTER COLUMN validation TYPE varchar(128)`,
		`ALTER TABLE summaries ALTER COLUMN summary TYPE varchar(100)`,
	} {
		if _, err := ddl.Exec(ctx, sql); err != nil {
			t.Fatalf("%s: %v", sql, err)
		}
	}
	steps()
}

// TestStalePlanNotPermanent: a StatementError for a stale cached plan is
// not permanent (the guard retries it); other 0A000 errors are.
func TestStalePlanNotPermanent(t *testing.T) {
	stale := &pgstore.StatementError{Index: 0, Err: &pgconn.PgError{Code: "0A000", Message: "cached plan must not change result type", Routine: "RevalidateCachedQuery"}}
	if stale.Permanent() {
		t.Error("a stale cached plan reported permanent")
	}
	other := &pgstore.StatementError{Index: 0, Err: &pgconn.PgError{Code: "0A000", Message: "FOR UPDATE is not allowed with aggregate functions", Routine: "CheckSelectLocking"}}
	if !other.Permanent() {
		t.Error("feature_not_supported reported not permanent")
	}
}

// TestMicrosecondBoundary: times are kept and compared in microseconds,
// in Go as in SQL. A claim made within the microsecond a lease (or a
// record) ends finds it live; one a microsecond later takes it over.
// Issue 15, item 13 (within 1 µs of a lease end the claim failed: "the
// record changed between the claim and its read, twice").
func TestMicrosecondBoundary(t *testing.T) {
	s := newStore(t, newPool(t, nil))
	ctx := context.Background()
	base := time.Now().Truncate(time.Second).Add(123456 * time.Microsecond)
	end := base.Add(400 * time.Nanosecond) // stored as base: timestamptz keeps microseconds
	for _, tc := range []struct {
		name string
		hold func(rec *driver.Record) // sets the end under test
	}{
		{"lease", func(rec *driver.Record) { rec.LeaseUntil = end }},
		{"expiry", func(rec *driver.Record) { rec.ExpiresAt, rec.LeaseUntil = end, end }},
	} {
		t.Run(tc.name, func(t *testing.T) {
			holder := claim("micro#"+rand.Text(), base.Add(-time.Second), time.Minute)
			tc.hold(&holder)
			if _, _, err := s.Acquire(ctx, holder, base.Add(-time.Second), driver.Takeover); err != nil {
				t.Fatal(err)
			}
			within := base.Add(700 * time.Nanosecond) // after end in nanoseconds, the same microsecond
			got, loaded, err := s.Acquire(ctx, claim(holder.ID, within, time.Minute), within, driver.Takeover)
			if err != nil || !loaded || got.Owner != holder.Owner {
				t.Fatalf("claim within the microsecond the %s ends: loaded=%v owner=%q, %v; want the holder's live record", tc.name, loaded, got.Owner, err)
			}
			after := base.Add(time.Microsecond)
			prev, loaded, err := s.Acquire(ctx, claim(holder.ID, after, time.Minute), after, driver.Takeover)
			if err != nil || loaded || prev.Owner != holder.Owner {
				t.Fatalf("claim a microsecond later: loaded=%v replaced=%q, %v; want a takeover of the holder's record", loaded, prev.Owner, err)
			}
		})
	}
}

// TestFenceFailureNamed: when the completion's fenced UPDATE itself fails
// (here a lock timeout: another session holds the record's row), the error
// says so; it is not an attached statement's error, nothing is written,
// and the owner completes the record once the row is free. Issue 15, item
// 13 (it was reported as "preparing the completion's statements").
func TestFenceFailureNamed(t *testing.T) {
	cfg, err := pgxpool.ParseConfig(server.NewDatabase(t))
	if err != nil {
		t.Fatal(err)
	}
	cfg.ConnConfig.RuntimeParams["lock_timeout"] = "200ms"
	ctx := context.Background()
	pool, err := pgxpool.NewWithConfig(ctx, cfg)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(pool.Close)
	s := newStore(t, pool)
	if err := s.CreateSchema(ctx); err != nil {
		t.Fatal(err)
	}
	mustExec(t, pool, summariesSQL)
	now := time.Now()
	rec := claim("fence#"+rand.Text(), now, time.Minute)
	if _, _, err := s.Acquire(ctx, rec, now, driver.Takeover); err != nil {
		t.Fatal(err)
	}
	locker := connect(t, pool)
	tx, err := locker.Begin(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := tx.Exec(ctx, `SELECT 1 FROM idempotency WHERE id = $1 FOR UPDATE`, rec.ID); err != nil {
		t.Fatal(err)
	}
	done := completed(rec, `1`)
	done.Attached = []any{summary(rec.ID, "text")}
	_, err = s.Complete(ctx, done)
	var se *pgstore.StatementError
	var pgErr *pgconn.PgError
	switch {
	case err == nil:
		t.Fatal("Complete succeeded while another session held the record's row")
	case errors.As(err, &se):
		t.Fatalf("the fence's failure reported as an attached statement's: %v", err)
	case errors.Is(err, driver.ErrLeaseLost):
		t.Fatalf("the fence's failure reported as a lost lease: %v", err)
	case !strings.Contains(err.Error(), "fenced update") || strings.Contains(err.Error(), "preparing"):
		t.Fatalf("error %q: want it to name the completion's fenced update", err)
	case !errors.As(err, &pgErr) || pgErr.Code != "55P03":
		t.Fatalf("error %v: want it to wrap lock_not_available (55P03)", err)
	}
	if err := tx.Rollback(ctx); err != nil {
		t.Fatal(err)
	}
	if n := count(t, pool, `SELECT count(*) FROM summaries`); n != 0 {
		t.Errorf("%d summary rows after the failed completion, want 0", n)
	}
	if _, err := s.Complete(ctx, done); err != nil {
		t.Fatalf("Complete once the row is free: %v", err)
	}
}

// sentinel is an argument value an error could quote.
const sentinel = "PATIENT-JOHN-DOE-4111111111111111"

// TestStatementErrorQuotesNoArgument: whichever way an attached statement
// fails on its arguments (the server cannot parse one, the client cannot
// encode one, a constraint refuses the row), the error names the statement
// and the SQLSTATE, never the value. The server's message stays reachable
// through errors.As.
func TestStatementErrorQuotesNoArgument(t *testing.T) {
	pool := newPool(t, nil)
	mustExec(t, pool, `CREATE TABLE counts (id text PRIMARY KEY, n int NOT NULL, note text CHECK (note <> '`+sentinel+`'))`)
	s := newStore(t, pool)
	ctx := context.Background()
	now := time.Now()
	for name, st := range map[string]pgstore.Statement{
		"server parses":   {SQL: `INSERT INTO counts (id, n) VALUES ($1, $2::text::int)`, Args: []any{"a", sentinel}},
		"sent as text":    {SQL: `INSERT INTO counts (id, n) VALUES ($1, $2)`, Args: []any{"b", sentinel}},
		"client encodes":  {SQL: `INSERT INTO counts (id, n) VALUES ($1, $2)`, Args: []any{"d", struct{ V string }{sentinel}}},
		"check violation": {SQL: `INSERT INTO counts (id, n, note) VALUES ($1, 1, $2)`, Args: []any{"c", sentinel}},
		"not null":        {SQL: `INSERT INTO counts (id, n, note) VALUES ($1, NULL, $2)`, Args: []any{sentinel, sentinel}},
	} {
		t.Run(name, func(t *testing.T) {
			rec := claim("quote#"+rand.Text(), now, time.Minute)
			if _, _, err := s.Acquire(ctx, rec, now, driver.Takeover); err != nil {
				t.Fatal(err)
			}
			done := completed(rec, `1`)
			done.Attached = []any{summaryless(), st}
			_, err := s.Complete(ctx, done)
			var se *pgstore.StatementError
			if !errors.As(err, &se) || se.Index != 1 {
				t.Fatalf("Complete: %v, want a StatementError for statement 1", err)
			}
			if !se.Permanent() {
				t.Errorf("%v: not permanent, but sending it again cannot help", err)
			}
			if strings.Contains(err.Error(), sentinel) || strings.Contains(err.Error(), sentinel[:12]) {
				t.Errorf("the error quotes the argument: %v", err)
			}
			t.Logf("%s: %v", name, err)
		})
	}
}

// summaryless is an attached statement that succeeds.
func summaryless() pgstore.Statement { return pgstore.Statement{SQL: `SELECT 1`} }

// TestDeadlineRespected: a step blocked by another session's lock ends at
// its context's deadline with an error. (The server may still run the
// statement once the lock is free, unless the pool cancels it: the error
// means the outcome is unknown, as for a lost reply.)
func TestDeadlineRespected(t *testing.T) {
	pool := newPool(t, nil)
	s := newStore(t, pool)
	ctx := context.Background()
	now := time.Now()
	rec := claim("deadline#"+rand.Text(), now, time.Second)
	if _, _, err := s.Acquire(ctx, rec, now, driver.Takeover); err != nil {
		t.Fatal(err)
	}
	locker := connect(t, pool)
	tx, err := locker.Begin(ctx)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = tx.Rollback(context.Background()) })
	if _, err := tx.Exec(ctx, `SELECT 1 FROM idempotency WHERE id = $1 FOR UPDATE`, rec.ID); err != nil {
		t.Fatal(err)
	}
	later := now.Add(2 * time.Second) // the lease passed: the claim must take the row over, and waits for it
	const budget = 300 * time.Millisecond
	for name, step := range map[string]func(ctx context.Context) error{
		"acquire": func(ctx context.Context) error {
			_, _, err := s.Acquire(ctx, claim(rec.ID, later, time.Minute), later, driver.Takeover)
			return err
		},
		"complete": func(ctx context.Context) error { return errOf(s.Complete(ctx, completed(rec, `1`))) },
		"release":  func(ctx context.Context) error { return s.Release(ctx, rec.ID, rec.Owner) },
	} {
		t.Run(name, func(t *testing.T) {
			sctx, cancel := context.WithTimeout(ctx, budget)
			defer cancel()
			start := time.Now()
			err := step(sctx)
			took := time.Since(start)
			if err == nil {
				t.Fatal("a step blocked on a locked row succeeded")
			}
			if took > budget+2*time.Second {
				t.Errorf("the step returned %v after it began, with a %v deadline", took, budget)
			}
			t.Logf("%s: returned after %v: %v", name, took.Round(time.Millisecond), err)
		})
	}
	if err := tx.Rollback(ctx); err != nil {
		t.Fatal(err)
	}
	if _, _, err := s.Acquire(ctx, claim(rec.ID, later, time.Minute), later, driver.Takeover); err != nil {
		t.Fatalf("Acquire once the row is free: %v", err)
	}
}

// allocated returns the bytes fn allocates.
func allocated(fn func()) uint64 {
	var before, after runtime.MemStats
	runtime.GC()
	runtime.ReadMemStats(&before)
	fn()
	runtime.ReadMemStats(&after)
	return after.TotalAlloc - before.TotalAlloc
}

// memoryCeiling is the most a step may allocate for a result of n bytes:
// 8 times the result, plus 1 MiB. docs/stores.md states it.
func memoryCeiling(n int) uint64 { return 8*uint64(n) + 1<<20 }

// TestMemoryPerRecord: completing a 1 MiB result and replaying it each
// allocate at most memoryCeiling.
func TestMemoryPerRecord(t *testing.T) {
	s := newStore(t, newPoolOf(t, nil, 1))
	ctx := context.Background()
	now := time.Now()
	data := make([]byte, 1<<20)
	_, _ = rand.Read(data)
	warm := claim("mem#"+rand.Text(), now, time.Minute) // prepares the statements
	if _, _, err := s.Acquire(ctx, warm, now, driver.Takeover); err != nil {
		t.Fatal(err)
	}
	if _, err := s.Complete(ctx, completed(warm, `1`)); err != nil {
		t.Fatal(err)
	}
	if _, _, err := s.Acquire(ctx, claim(warm.ID, now, time.Minute), now, driver.Takeover); err != nil {
		t.Fatal(err)
	}
	rec := claim("mem#"+rand.Text(), now, time.Minute)
	if _, _, err := s.Acquire(ctx, rec, now, driver.Takeover); err != nil {
		t.Fatal(err)
	}
	done := completed(rec, string(data))
	var err error
	complete := allocated(func() { err = errOf(s.Complete(ctx, done)) })
	if err != nil {
		t.Fatal(err)
	}
	var got driver.Record
	replay := allocated(func() { got, _, err = s.Acquire(ctx, claim(rec.ID, now, time.Minute), now, driver.Takeover) })
	if err != nil || string(got.Data) != string(data) {
		t.Fatalf("replay: %d bytes, %v", len(got.Data), err)
	}
	limit := memoryCeiling(len(data))
	t.Logf("%d-byte result: complete allocated %d bytes (%.1f×), replay %d (%.1f×); ceiling %d",
		len(data), complete, float64(complete)/float64(len(data)), replay, float64(replay)/float64(len(data)), limit)
	if complete > limit || replay > limit {
		t.Errorf("allocated %d (complete) and %d (replay) bytes, ceiling %d", complete, replay, limit)
	}
}

// errOf is the error of a call that returns a value and an error.
func errOf[T any](_ T, err error) error { return err }
