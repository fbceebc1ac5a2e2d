package pgstore

import (
	"context"
	_ "embed"
	"errors"
	"fmt"
	"math/rand/v2"
	"strings"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
	"github.com/jackc/pgx/v5/pgtype"
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
// it again, or from several processes at once, is safe. When the table
// already has every column and the index, it reads the catalog only and
// runs no DDL: ALTER TABLE … ADD COLUMN IF NOT EXISTS locks the table
// ACCESS EXCLUSIVE even when the column exists, so that a cold start's
// call would wait for any open transaction that read the table, and every
// claim would wait behind it.
func (s *Store) CreateSchema(ctx context.Context) error {
	var complete bool
	err := s.queryRow(ctx, schemaCompleteSQL, []any{s.sql.table, s.sql.index}, &complete)
	var pgErr *pgconn.PgError
	switch {
	case err == nil && complete:
		return nil
	case err != nil && !errors.As(err, &pgErr): // no answer: the DDL would get none either
		return fmt.Errorf("pgstore: create schema: %w", err)
	}
	if _, err := s.db.Exec(ctx, schemaLock+s.sql.schema); err != nil {
		return fmt.Errorf("pgstore: create schema: %w", err)
	}
	return nil
}

func storeError(op, id string, err error) error {
	return &idempotency.StoreError{Op: op, ID: id, Err: err}
}

// row is a record as read from the table; Status is nil when absent. Its
// times are scanned as pgtype.Timestamptz, which holds the infinities a
// time.Time cannot (see timeOf).
type row struct {
	status, validation, owner *string
	expiration, lease         pgtype.Timestamptz
	quarantined, strictLease  pgtype.Timestamptz
	data                      []byte
}

func (r row) record(id string) driver.Record {
	if r.status == nil {
		return driver.Record{}
	}
	rec := driver.Record{ID: id, Status: driver.Status(*r.status), Data: r.data,
		ExpiresAt: timeOf(r.expiration), LeaseUntil: timeOf(r.lease),
		Quarantined: timeOf(r.quarantined), StrictLease: timeOf(r.strictLease)}
	if r.validation != nil {
		rec.Validation = *r.validation
	}
	if r.owner != nil {
		rec.Owner = *r.owner
	}
	return rec
}

// The times the store reads timestamptz's 'infinity' and '-infinity' as
// (an operator may write them by hand, to keep a record for good), and
// writes back as them: the last microsecond of year 9999 (the last year
// JSON and RFC 3339 show) and the first after Go's zero time (which means
// none), after and before any time the store compares with, so that Go's
// comparisons agree with PostgreSQL's. An expiry at infinity never
// expires; a lease ending at infinity never lapses (the claim is held
// until the record expires, or an operator releases it).
var (
	infinity         = time.Date(9999, time.December, 31, 23, 59, 59, 999999000, time.UTC)
	negativeInfinity = time.Date(1, time.January, 1, 0, 0, 0, 1000, time.UTC)
)

// timeOf is the time of t as the store reads it: the zero time for NULL,
// and the times above for the infinities.
func timeOf(t pgtype.Timestamptz) time.Time {
	switch {
	case !t.Valid:
		return time.Time{}
	case t.InfinityModifier == pgtype.Infinity:
		return infinity
	case t.InfinityModifier == pgtype.NegativeInfinity:
		return negativeInfinity
	}
	return t.Time
}

// stamp is the argument the store writes or compares t as: truncated to
// microseconds (see micros), and the infinities for the times timeOf reads
// them as, so that a record read is matched and kept as stored.
func stamp(t time.Time) pgtype.Timestamptz {
	t = micros(t)
	switch {
	case t.Equal(infinity):
		return pgtype.Timestamptz{InfinityModifier: pgtype.Infinity, Valid: true}
	case t.Equal(negativeInfinity):
		return pgtype.Timestamptz{InfinityModifier: pgtype.NegativeInfinity, Valid: true}
	}
	return pgtype.Timestamptz{Time: t, Valid: true}
}

// stampOrNull is stamp, with NULL for the zero time.
func stampOrNull(t time.Time) pgtype.Timestamptz {
	if t.IsZero() {
		return pgtype.Timestamptz{}
	}
	return stamp(t)
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
	args := []any{rec.ID, stamp(rec.ExpiresAt), stamp(rec.LeaseUntil), rec.Validation, rec.Owner, stamp(now), strict,
		stampOrNull(rec.StrictLease)} // NULL: not a strict claim
	for range 2 {
		var (
			claimed bool
			old     row
		)
		err := s.queryRow(ctx, s.sql.claim, args,
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

// serializationAttempts bounds how often a statement refused with a
// serialization failure is sent (see serializationFailure).
const serializationAttempts = 10

// serializationFailure reports whether err is PostgreSQL refusing a
// transaction that could not be serialized (SQLSTATE 40001), at REPEATABLE
// READ or SERIALIZABLE: the session's default_transaction_isolation, which
// some teams set for a whole database. The store's statements are written
// for READ COMMITTED, PostgreSQL's default, where a statement that waited
// for a row another transaction changed goes on with the row as that
// transaction left it; at the stricter levels PostgreSQL refuses the
// statement instead, and may refuse one that took part in a cycle of
// read/write dependencies. Each of the store's statements is its own
// transaction, rolled back when refused: sent again, it runs afresh, as at
// READ COMMITTED.
func serializationFailure(err error) bool {
	var pgErr *pgconn.PgError
	return errors.As(err, &pgErr) && pgErr.Code == "40001"
}

// serializationBackoff is the longest pause before a statement refused
// with a serialization failure is sent again: after its attempt n, a
// random pause below min(2^(n-1) ms, serializationBackoff), so that
// statements refused together (claims of neighbouring keys, whose index
// entries share a page) do not collide again.
const serializationBackoff = 64 * time.Millisecond

// again reports whether a statement that failed with err, on its attempt,
// is sent again: at once when its cached plan was stale, after a short
// random pause when its transaction could not be serialized, a bounded
// number of times and while ctx lasts. Nothing of it was applied either
// way.
func again(ctx context.Context, err error, attempt int) bool {
	switch {
	case err == nil || ctx.Err() != nil:
		return false
	case stalePlan(err):
		return attempt < stalePlanAttempts
	case !serializationFailure(err) || attempt >= serializationAttempts:
		return false
	}
	pause := time.NewTimer(rand.N(min(time.Millisecond<<(attempt-1), serializationBackoff)))
	defer pause.Stop()
	select {
	case <-pause.C:
		return true
	case <-ctx.Done():
		return false
	}
}

// queryRow runs sql and scans its one row into dest, sending it again
// when its cached plan was stale or its transaction could not be
// serialized (see again).
func (s *Store) queryRow(ctx context.Context, sql string, args []any, dest ...any) error {
	for attempt := 1; ; attempt++ {
		err := s.db.QueryRow(ctx, sql, args...).Scan(dest...)
		if !again(ctx, err, attempt) {
			return err
		}
	}
}

// Complete implements [driver.Store.Complete]: one UPDATE fenced
// by status and owner; with attached statements, one batch that runs the
// fenced UPDATE and then the statements in one transaction (see
// [Attach]). The table keeps every result in full, so it returns rec.Data
// when it completes the record. A record already completed by the same
// owner (an earlier attempt whose reply was lost, or that was still
// running on the server when this one was sent, its attached statements
// committed with it, or an operator's resolve under the claim's owner) is
// a success: nothing is written again, and the result returned is the one
// stored then, read by the same statement once it holds the row (with
// attached statements, by one SELECT more).
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
	err = s.queryRow(ctx, s.sql.complete, []any{rec.ID, rec.Owner, stamp(rec.ExpiresAt), rec.Data}, &done, &status, &owner, &data)
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
// status and owner: a completed record is never deleted. A refusal names
// the record as the statement found it once it held the row.
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
// as the write found them, holding the row.
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
		why = recordIs(st)
	case o != owner:
		why = "the lease was taken over by another owner"
	default:
		why = "the record changed while the write ran"
	}
	return storeError(op, id, fmt.Errorf("pgstore: %s: %w", why, driver.ErrLeaseLost))
}

// recordIs says what status a refused write found, without quoting one
// that is neither INPROGRESS nor COMPLETED: the schema's CHECK refuses
// it, but a table made otherwise may hold anything another writer put
// there.
func recordIs(status string) string {
	if status != string(driver.StatusInProgress) && status != string(driver.StatusCompleted) {
		return "the record has an unknown status"
	}
	return "the record is " + status
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
		from  pgtype.Timestamptz // where the next batch starts; NULL: the oldest
	)
	for {
		if err := ctx.Err(); err != nil {
			return total, err
		}
		var (
			n    int64
			last pgtype.Timestamptz // -infinity, for a record expiring then
		)
		if err := s.queryRow(ctx, s.sql.deleteExpired, []any{batchSize, from}, &n, &last); err != nil {
			return total, fmt.Errorf("pgstore: delete expired records: %w", err)
		}
		total += n
		if n < int64(batchSize) {
			return total, nil
		}
		from = last
	}
}
