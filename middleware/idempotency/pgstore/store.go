package pgstore

import (
	"context"
	_ "embed"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/sqsonce/sqsonce/middleware/idempotency"
	"github.com/sqsonce/sqsonce/middleware/idempotency/driver"
)

// DefaultTable is the record table's name unless [WithTable] says
// otherwise.
const DefaultTable = "idempotency"

// Schema is the SQL that creates the table [DefaultTable] and its index, if
// they do not exist: the file schema.sql of this package, for migration
// tools. [Store.CreateSchema] runs the same SQL for the store's table.
//
//go:embed schema.sql
var Schema string

// DB is the part of *pgxpool.Pool the store calls. A *pgx.Conn satisfies it
// too, but is not safe for concurrent use: give the store a pool.
type DB interface {
	Exec(ctx context.Context, sql string, args ...any) (pgconn.CommandTag, error)
	QueryRow(ctx context.Context, sql string, args ...any) pgx.Row
	SendBatch(ctx context.Context, b *pgx.Batch) pgx.BatchResults
}

var (
	_ DB = (*pgxpool.Pool)(nil)
	_ DB = (*pgx.Conn)(nil)
)

// Store is a [driver.Store] on a PostgreSQL table created by
// [Store.CreateSchema]. It is safe for concurrent use; create one with
// [New] at start-up and share it.
type Store struct {
	db  DB
	sql queries
}

var (
	_ driver.Store           = (*Store)(nil)
	_ driver.AttachValidator = (*Store)(nil)
)

// Option configures a [Store] made by [New].
type Option func(*options)

type options struct {
	table string
}

// WithTable keeps the records in the table named name, in the connection's
// current schema (the first of its search_path), instead of
// [DefaultTable]. The name is quoted as one SQL identifier, so it is used
// exactly as given (case included); it must not be empty, hold a NUL byte,
// or be longer than PostgreSQL's 63 bytes.
func WithTable(name string) Option {
	return func(o *options) { o.table = name }
}

// New returns a Store on db (normally a *pgxpool.Pool built once by the
// caller). It reports every problem of its arguments at once.
func New(db DB, opts ...Option) (*Store, error) {
	o := options{table: DefaultTable}
	for _, opt := range opts {
		opt(&o)
	}
	var errs []error
	if db == nil {
		errs = append(errs, errors.New("pgstore: DB is nil"))
	}
	switch {
	case o.table == "":
		errs = append(errs, errors.New("pgstore: WithTable: empty table name"))
	case strings.ContainsRune(o.table, 0):
		errs = append(errs, errors.New("pgstore: WithTable: the table name holds a NUL byte"))
	case len(o.table) > maxIdentifier:
		errs = append(errs, fmt.Errorf("pgstore: WithTable: the table name is %d bytes, PostgreSQL keeps %d", len(o.table), maxIdentifier))
	}
	if err := errors.Join(errs...); err != nil {
		return nil, err
	}
	return &Store{db: db, sql: render(o.table)}, nil
}

// maxIdentifier is the longest identifier PostgreSQL keeps (NAMEDATALEN-1);
// it truncates longer ones.
const maxIdentifier = 63

// CreateSchema creates the store's table and its index on expiration, if
// they do not exist (the SQL of [Schema], for the store's table): running
// it again, or from several processes at once, is safe.
func (s *Store) CreateSchema(ctx context.Context) error {
	if _, err := s.db.Exec(ctx, schemaLock+s.sql.schema); err != nil {
		return fmt.Errorf("pgstore: create schema: %w", err)
	}
	return nil
}

func storeError(op, id string, err error) error {
	return &idempotency.StoreError{Op: op, ID: id, Err: err}
}

// row is a record as read from the table; Status is nil when absent.
type row struct {
	status, validation, owner *string
	expiration, lease         *time.Time
	quarantined, strictLease  *time.Time
	data                      []byte
}

func (r row) record(id string) driver.Record {
	if r.status == nil {
		return driver.Record{}
	}
	rec := driver.Record{ID: id, Status: driver.Status(*r.status), Data: r.data}
	if r.expiration != nil {
		rec.ExpiresAt = *r.expiration
	}
	if r.lease != nil {
		rec.LeaseUntil = *r.lease
	}
	if r.validation != nil {
		rec.Validation = *r.validation
	}
	if r.owner != nil {
		rec.Owner = *r.owner
	}
	if r.quarantined != nil {
		rec.Quarantined = *r.quarantined
	}
	if r.strictLease != nil {
		rec.StrictLease = *r.strictLease
	}
	return rec
}

// claimable reports whether a claim made at now may take r over.
func claimable(r driver.Record, now time.Time, strict bool) bool {
	return r.ExpiresAt.Before(now) || (!strict && r.Status == driver.StatusInProgress && r.LeaseUntil.Before(now))
}

// ownClaim reports whether r is the claim rec itself, sent again.
func ownClaim(r, rec driver.Record) bool {
	return r.Status == driver.StatusInProgress && r.Owner != "" && r.Owner == rec.Owner
}

// Acquire implements [driver.Store.Acquire] with one statement: an
// INSERT … ON CONFLICT (id) DO UPDATE … WHERE the existing record expired or
// its lease passed, which also returns the record that refused the claim,
// or the one it replaced: the statement locks the row first, so a release
// or claim that commits while it runs is seen as it left the row (a claim
// that raced a release replaced nothing). Only when a record was inserted
// by a concurrent claim after the statement began (so the statement could
// not lock it) does Acquire read it, with one SELECT more. Times are kept and compared in microseconds,
// the resolution of timestamptz: now, the expiry and the lease are
// truncated to it.
//
// With [driver.NoTakeover] the statement takes no lapsed lease over.
func (s *Store) Acquire(ctx context.Context, rec driver.Record, now time.Time, mode driver.ClaimMode) (driver.Record, bool, error) {
	strict := mode == driver.NoTakeover
	if rec.ID == "" {
		return driver.Record{}, false, storeError("acquire", "", errors.New("pgstore: empty record id"))
	}
	if rec.Owner == "" {
		return driver.Record{}, false, storeError("acquire", rec.ID,
			errors.New("pgstore: record has no owner: its Complete and Release could not be fenced"))
	}
	now = micros(now)
	var strictLease *time.Time // NULL: not a strict claim
	if !rec.StrictLease.IsZero() {
		t := micros(rec.StrictLease)
		strictLease = &t
	}
	for range 2 {
		var (
			claimed bool
			old     row
		)
		err := s.queryRow(ctx, s.sql.claim, []any{rec.ID, micros(rec.ExpiresAt), micros(rec.LeaseUntil), rec.Validation, rec.Owner, now, strict, strictLease},
			&claimed, &old.status, &old.expiration, &old.lease, &old.data, &old.validation, &old.owner, &old.quarantined, &old.strictLease)
		if err != nil {
			return driver.Record{}, false, storeError("acquire", rec.ID, err)
		}
		prev := old.record(rec.ID)
		if claimed {
			return prev, false, nil
		}
		if prev.ID != "" && ownClaim(prev, rec) {
			return driver.Record{}, false, nil
		}
		if prev.ID != "" && !claimable(prev, now, strict) {
			return prev, true, nil
		}
		// Refused by a record the statement did not see as it is now.
		var cur row
		err = s.queryRow(ctx, s.sql.read, []any{rec.ID},
			&cur.status, &cur.expiration, &cur.lease, &cur.data, &cur.validation, &cur.owner, &cur.quarantined, &cur.strictLease)
		if errors.Is(err, pgx.ErrNoRows) {
			continue // gone again: claim again
		}
		if err != nil {
			return driver.Record{}, false, storeError("acquire", rec.ID, fmt.Errorf("pgstore: read existing record: %w", err))
		}
		got := cur.record(rec.ID)
		if ownClaim(got, rec) {
			return driver.Record{}, false, nil
		}
		if !claimable(got, now, strict) {
			return got, true, nil
		}
	}
	return driver.Record{}, false, storeError("acquire", rec.ID,
		errors.New("pgstore: the record changed between the claim and its read, twice; not claimed"))
}

// micros truncates t to microseconds, the resolution of timestamptz, so
// that the store compares times in Go as PostgreSQL does.
func micros(t time.Time) time.Time { return t.Truncate(time.Microsecond) }

// stalePlanAttempts bounds how often a statement refused for a stale
// cached plan is sent: pgx drops the statement from the connection's cache
// on the error, and the pool may hand out other connections that cached
// it too.
const stalePlanAttempts = 4

// stalePlan reports whether err is PostgreSQL refusing a prepared
// statement whose result type changed since it was prepared (DDL on its
// table): SQLSTATE 0A000 "cached plan must not change result type". The
// statement did not run, and runs once prepared again.
func stalePlan(err error) bool {
	var pgErr *pgconn.PgError
	return errors.As(err, &pgErr) && pgErr.Code == "0A000" &&
		(pgErr.Routine == "RevalidateCachedQuery" || strings.Contains(pgErr.Message, "cached plan must not change result type"))
}

// queryRow runs sql and scans its one row into dest, sending it again
// when its cached plan was stale.
func (s *Store) queryRow(ctx context.Context, sql string, args []any, dest ...any) error {
	for attempt := 1; ; attempt++ {
		err := s.db.QueryRow(ctx, sql, args...).Scan(dest...)
		if err == nil || !stalePlan(err) || attempt == stalePlanAttempts || ctx.Err() != nil {
			return err
		}
	}
}

// Complete implements [driver.Store.Complete]: one UPDATE fenced
// by status and owner; with attached statements, one batch that runs the
// fenced UPDATE and then the statements in one transaction (see
// [Attach]). The table keeps every result in full, so it returns rec.Data
// when it completes the record. A record already completed by the same
// owner (an earlier attempt whose reply was lost, its attached statements
// committed with it, or an operator's resolve under the claim's owner) is
// a success: nothing is written again, and the result returned is the one
// stored then, read by the same statement.
func (s *Store) Complete(ctx context.Context, rec driver.Record) ([]byte, error) {
	if rec.ID == "" {
		return nil, storeError("complete", "", errors.New("pgstore: empty record id"))
	}
	stmts, err := statements(rec.Attached)
	if err != nil {
		return nil, storeError("complete", rec.ID, err)
	}
	if rec.Owner == "" {
		return nil, storeError("complete", rec.ID, fmt.Errorf("pgstore: no owner to fence the completion with: %w", driver.ErrLeaseLost))
	}
	if len(stmts) > 0 {
		return s.completeWith(ctx, rec, stmts)
	}
	var (
		done          bool
		status, owner *string
		data          []byte
	)
	err = s.queryRow(ctx, s.sql.complete, []any{rec.ID, rec.Owner, micros(rec.ExpiresAt), rec.Data}, &done, &status, &owner, &data)
	if err != nil {
		return nil, storeError("complete", rec.ID, err)
	}
	if done {
		return rec.Data, nil
	}
	if err := fenced("complete", rec.ID, rec.Owner, false, status, owner); err != nil {
		return nil, err
	}
	return data, nil
}

// Release implements [driver.Store.Release] with one DELETE fenced by
// status and owner: a completed record is never deleted.
func (s *Store) Release(ctx context.Context, id, owner string) error {
	if id == "" {
		return storeError("release", "", errors.New("pgstore: empty record id"))
	}
	if owner == "" {
		return storeError("release", id, fmt.Errorf("pgstore: no owner to fence the release with: %w", driver.ErrLeaseLost))
	}
	var (
		done      bool
		status, o *string
	)
	if err := s.queryRow(ctx, s.sql.release, []any{id, owner}, &done, &status, &o); err != nil {
		return storeError("release", id, err)
	}
	return fenced("release", id, owner, done, status, o)
}

// fenced is the outcome of a fenced write: done, or the owner's own earlier
// completion, or a lost lease, judged from the record's status and owner
// before the write.
func fenced(op, id, owner string, done bool, status, own *string) error {
	if done {
		return nil
	}
	st, o := deref(status), deref(own)
	if op == "complete" && st == string(driver.StatusCompleted) && o == owner {
		return nil
	}
	why := "the record is gone"
	switch {
	case status == nil:
	case st != string(driver.StatusInProgress):
		why = "the record is " + st
	case o != owner:
		why = "the lease was taken over by another owner"
	default:
		why = "the record changed while the write ran"
	}
	return storeError(op, id, fmt.Errorf("pgstore: %s: %w", why, driver.ErrLeaseLost))
}

func deref(p *string) string {
	if p == nil {
		return ""
	}
	return *p
}

// DeleteExpired deletes the store's records past their expiration (by the
// server's clock), batchSize rows per statement, each statement its own
// transaction, until none is left; it returns how many it deleted. Batches
// walk the expiration index forward, oldest first, so each costs about the
// same however many came before. PostgreSQL has no TTL: run it
// periodically (a scheduled function, pg_cron). Rows locked by a running
// claim are skipped. It stops at ctx's end, returning what it deleted so
// far and ctx's error.
func (s *Store) DeleteExpired(ctx context.Context, batchSize int) (int64, error) {
	if batchSize <= 0 {
		return 0, fmt.Errorf("pgstore: DeleteExpired batch size %d, want > 0", batchSize)
	}
	var (
		total int64
		from  *time.Time // where the next batch starts
	)
	for {
		if err := ctx.Err(); err != nil {
			return total, err
		}
		var (
			n    int64
			last *time.Time
		)
		if err := s.db.QueryRow(ctx, s.sql.deleteExpired, batchSize, from).Scan(&n, &last); err != nil {
			return total, fmt.Errorf("pgstore: delete expired records: %w", err)
		}
		total += n
		if n < int64(batchSize) {
			return total, nil
		}
		from = last
	}
}
