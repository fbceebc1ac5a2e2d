package pgstore

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"slices"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"

	"github.com/sqsonce/sqsonce/middleware/failure"
	"github.com/sqsonce/sqsonce/middleware/idempotency"
	"github.com/sqsonce/sqsonce/middleware/idempotency/driver"
)

// Statement is a SQL statement with its arguments, attached to the
// completion of an operation with [Attach].
type Statement struct {
	SQL  string // the statement, with $1, $2, … placeholders
	Args []any  // the arguments of its placeholders
}

// Attach attaches SQL statements to the completion of the operation
// running in ctx: Complete runs the record's fenced UPDATE and then these
// statements, in order, in one transaction sent as one batch (one round
// trip), so the record completes and the statements commit together, or
// neither does. Call it inside the function run by [idempotency.Do] or
// [idempotency.Wrap]; outside, it returns [idempotency.ErrNotClaimed].
//
// The statements must not control the transaction (BEGIN, COMMIT) and
// should not touch the table "idempotency". They run only if the lease is
// still the operation's: a lost lease writes nothing. They run at the
// session's isolation level (default_transaction_isolation); a batch
// refused with a serialization failure committed nothing and is sent
// again (see Isolation in the package's documentation).
func Attach(ctx context.Context, stmts ...Statement) error {
	for _, st := range stmts {
		if err := idempotency.Attach(ctx, st); err != nil {
			return err
		}
	}
	return nil
}

// ValidateAttached implements [driver.AttachValidator]: every write
// must be a [Statement] (or *Statement) with SQL. [idempotency.Attach]
// calls it, so an operation learns of a write its completion could not
// commit when it attaches the write.
func (s *Store) ValidateAttached(_ string, writes []any) error {
	_, err := statements(writes)
	return err
}

func statements(attached []any) ([]Statement, error) {
	if len(attached) == 0 {
		return nil, nil
	}
	out := make([]Statement, 0, len(attached))
	for i, w := range attached {
		var st Statement
		switch w := w.(type) {
		case Statement:
			st = w
		case *Statement:
			if w == nil {
				return nil, fmt.Errorf("pgstore: attached write %d is a nil *Statement: %w", i, driver.ErrAttachUnsupported)
			}
			st = *w
		default:
			return nil, fmt.Errorf("pgstore: attached write %d is a %T; want a pgstore.Statement (see pgstore.Attach): %w",
				i, w, driver.ErrAttachUnsupported)
		}
		if st.SQL == "" {
			return nil, fmt.Errorf("pgstore: attached statement %d has no SQL: %w", i, driver.ErrAttachUnsupported)
		}
		out = append(out, st)
	}
	return out, nil
}

// completeWith completes rec and runs stmts in one batch: the batch's
// implicit transaction commits all of it or nothing. A batch refused for
// a stale cached plan (DDL on a table it touches), or because its
// transaction could not be serialized (SQLSTATE 40001, at the session's
// REPEATABLE READ or SERIALIZABLE), committed nothing, and is sent again
// (see again).
func (s *Store) completeWith(ctx context.Context, rec driver.Record, stmts []Statement) ([]byte, error) {
	for attempt := 1; ; attempt++ {
		stored, cause, err := s.completeBatch(ctx, rec, stmts)
		if !again(ctx, cause, attempt) {
			return stored, err
		}
	}
}

// completeBatch sends the batch once, and returns the result stored.
// cause is the driver's error that failed the batch, if any: a
// PostgreSQL error means the batch's transaction committed nothing.
func (s *Store) completeBatch(ctx context.Context, rec driver.Record, stmts []Statement) (stored []byte, cause, err error) {
	b := &pgx.Batch{}
	b.Queue(s.sql.completeOrAbort, rec.ID, rec.Owner, stamp(rec.ExpiresAt), rec.Data)
	for _, st := range stmts {
		b.Queue(st.SQL, st.Args...)
	}
	br := s.db.SendBatch(ctx, b)
	var fenceErr, stmtErr error
	failed := -1
	for i := 0; i <= len(stmts); i++ {
		if _, err := br.Exec(); err != nil {
			if i == 0 {
				fenceErr = err
			} else {
				stmtErr, failed = err, i-1
			}
			break
		}
	}
	closeErr := br.Close()
	cause = cmp.Or(fenceErr, stmtErr, closeErr)
	var pgErr *pgconn.PgError
	var pre pgx.ErrPreprocessingBatch
	switch {
	case fenceErr != nil && errors.As(fenceErr, &pre):
		// pgx prepares the batch's new statements, and encodes every
		// argument, before running any: the failure belongs to the
		// statement it names, and nothing ran.
		i := slices.IndexFunc(stmts, func(st Statement) bool { return st.SQL == pre.SQL() })
		if i < 0 {
			return nil, cause, storeError("complete", rec.ID, fmt.Errorf("pgstore: preparing the completion's fenced update: %w", fenceErr))
		}
		return nil, cause, storeError("complete", rec.ID, &StatementError{Index: i, Err: fenceErr, unencodable: !errors.As(fenceErr, &pgErr)})
	case fenceErr != nil && errors.As(fenceErr, &pgErr) && pgErr.Code == "22012": // division_by_zero: the fence failed
		var status, owner *string
		var data []byte
		err := s.queryRow(ctx, s.sql.state, []any{rec.ID}, &status, &owner, &data)
		if err != nil && !errors.Is(err, pgx.ErrNoRows) {
			return nil, nil, storeError("complete", rec.ID, fmt.Errorf("pgstore: read the record after its completion was refused: %w", err))
		}
		if err := fenced("complete", rec.ID, rec.Owner, false, status, owner); err != nil {
			return nil, nil, err
		}
		return data, nil, nil
	case fenceErr != nil:
		// The fenced update itself failed (a lock timeout, a cancelled
		// statement, a lost connection): nothing was written.
		return nil, cause, storeError("complete", rec.ID, fmt.Errorf("pgstore: the completion's fenced update: %w", fenceErr))
	case stmtErr != nil:
		return nil, cause, storeError("complete", rec.ID, &StatementError{Index: failed, Err: stmtErr})
	case closeErr != nil:
		return nil, cause, storeError("complete", rec.ID, closeErr)
	}
	return rec.Data, nil, nil
}

// StatementError reports an attached statement that failed: nothing of the
// completion's transaction was committed and the record is still in
// progress. It never wraps [driver.ErrLeaseLost]. Its message names
// the statement, the SQLSTATE and the constraint, table and column the
// server names, but not the server's message, which may quote an
// argument: that is in the wrapped *pgconn.PgError.
type StatementError struct {
	// Index is the statement's in Record.Attached: the one that failed, or
	// the one the server refused to prepare or whose arguments did not
	// encode (pgx prepares and encodes them all before running any).
	Index int
	Err   error // the driver's error, often a *pgconn.PgError

	unencodable bool // an argument does not encode as its parameter's type
}

func (e *StatementError) Error() string {
	var pgErr *pgconn.PgError
	switch {
	case errors.As(e.Err, &pgErr):
		msg := fmt.Sprintf("pgstore: attached statement %d failed: SQLSTATE %s", e.Index, pgErr.Code)
		for _, n := range []struct{ what, name string }{
			{"table", pgErr.TableName}, {"column", pgErr.ColumnName}, {"constraint", pgErr.ConstraintName},
		} {
			if n.name != "" {
				msg += fmt.Sprintf(", %s %s", n.what, n.name)
			}
		}
		return msg
	case e.unencodable:
		return fmt.Sprintf("pgstore: attached statement %d: an argument does not encode as its parameter's type", e.Index)
	}
	return fmt.Sprintf("pgstore: attached statement %d: %v", e.Index, e.Err)
}

// Unwrap returns the driver's error.
func (e *StatementError) Unwrap() error { return e.Err }

// Permanent reports whether running the same statements again cannot help:
// PostgreSQL refused them for their data, a constraint, their syntax or
// their access rights (SQLSTATE classes 22, 23, 42, 0A, except a stale
// cached plan, which the store retries), or an argument does not encode. A
// serialization failure, a deadlock or a lost connection is not permanent.
// The guard does not retry a completion that failed permanently (see
// [failure.PermanentError]).
func (e *StatementError) Permanent() bool {
	if e.unencodable {
		return true
	}
	var pgErr *pgconn.PgError
	if !errors.As(e.Err, &pgErr) || len(pgErr.Code) < 2 || stalePlan(e.Err) {
		return false
	}
	switch pgErr.Code[:2] {
	case "22", "23", "42", "0A":
		return true
	}
	return false
}

// The guard reads StatementError through failure.PermanentError: a
// rename breaks this build instead of turning retries back on.
var _ failure.PermanentError = (*StatementError)(nil)
