package pgstore_test

import (
	"context"
	"errors"
	"sync/atomic"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"

	"github.com/sqsonce/sqsonce/middleware/idempotency/driver"
	"github.com/sqsonce/sqsonce/middleware/idempotency/pgstore"
)

// refusingDB refuses the first refusals statements with err, and answers
// the others with a row whose first column is true (a fenced write done).
type refusingDB struct {
	pgstore.DB // nil: only QueryRow is called
	err        error
	refusals   int64
	calls      atomic.Int64
}

type answer struct{ err error }

func (a answer) Scan(dest ...any) error {
	if a.err != nil {
		return a.err
	}
	*dest[0].(*bool) = true
	return nil
}

func (d *refusingDB) QueryRow(context.Context, string, ...any) pgx.Row {
	if d.calls.Add(1) <= d.refusals {
		return answer{d.err}
	}
	return answer{}
}

var errSerialization = &pgconn.PgError{Code: "40001", Message: "could not serialize access due to concurrent update"}

func newRefusing(t *testing.T, err error, refusals int64) (*pgstore.Store, *refusingDB) {
	t.Helper()
	db := &refusingDB{err: err, refusals: refusals}
	s, err2 := pgstore.New(db)
	if err2 != nil {
		t.Fatal(err2)
	}
	return s, db
}

var rec = driver.Record{ID: "ns#k", Status: driver.StatusCompleted, Owner: "owner", Data: []byte(`1`),
	ExpiresAt: time.Now().Add(time.Hour)}

// TestSerializationFailureSentAgain: a statement refused with a
// serialization failure (SQLSTATE 40001, at REPEATABLE READ or
// SERIALIZABLE) was rolled back, and is sent again until it runs.
func TestSerializationFailureSentAgain(t *testing.T) {
	s, db := newRefusing(t, errSerialization, 3)
	if _, err := s.Complete(context.Background(), rec); err != nil {
		t.Fatalf("Complete refused three times, then done: %v", err)
	}
	if got := db.calls.Load(); got != 4 {
		t.Errorf("sent %d times, want 4", got)
	}
}

// TestSerializationFailureBounded: a statement refused every time is sent
// SerializationAttempts times, with short pauses, and the last refusal is
// returned.
func TestSerializationFailureBounded(t *testing.T) {
	s, db := newRefusing(t, errSerialization, 1<<30)
	start := time.Now()
	_, err := s.Complete(context.Background(), rec)
	var pgErr *pgconn.PgError
	if !errors.As(err, &pgErr) || pgErr.Code != "40001" {
		t.Fatalf("Complete refused every time: %v, want the serialization failure", err)
	}
	if got := db.calls.Load(); got != pgstore.SerializationAttempts {
		t.Errorf("sent %d times, want %d", got, pgstore.SerializationAttempts)
	}
	if took := time.Since(start); took > 2*time.Second {
		t.Errorf("the retries took %v", took)
	}
}

// TestSerializationFailureWithinDeadline: the retries end at the
// context's deadline.
func TestSerializationFailureWithinDeadline(t *testing.T) {
	s, db := newRefusing(t, errSerialization, 1<<30)
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Millisecond)
	defer cancel()
	start := time.Now()
	if _, err := s.Complete(ctx, rec); err == nil {
		t.Fatal("Complete refused every time succeeded")
	}
	if took := time.Since(start); took > 500*time.Millisecond {
		t.Errorf("Complete returned %v after it began, with a 20ms deadline", took)
	}
	if got := db.calls.Load(); got >= pgstore.SerializationAttempts {
		t.Errorf("sent %d times within a 20ms deadline", got)
	}
}

// TestOtherErrorsNotSentAgain: any other failure (here a deadlock, which
// PostgreSQL also rolls back, but which the caller's own retry answers) is
// returned at once.
func TestOtherErrorsNotSentAgain(t *testing.T) {
	s, db := newRefusing(t, &pgconn.PgError{Code: "40P01", Message: "deadlock detected"}, 1<<30)
	if _, err := s.Complete(context.Background(), rec); err == nil {
		t.Fatal("Complete refused succeeded")
	}
	if got := db.calls.Load(); got != 1 {
		t.Errorf("sent %d times, want 1", got)
	}
}
