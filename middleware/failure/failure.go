// Package failure holds the error types that the record handlers of
// package batch and the guard of package idempotency both read and return,
// so that neither imports the other: a panic turned into an error, and the
// interfaces that tell whether a failure is permanent, when it can be
// retried, and whether it was logged. Package batch names them too (as
// aliases); a function need import this package only to name them without
// batch.
package failure

import (
	"fmt"
	"runtime"
	"time"

	"github.com/sqsonce/sqsonce/internal/redact"
)

// PanicError is returned in place of a panic: the error a record fails
// with when its function panics, and the one package idempotency returns
// when the operation it runs (or the operation's result's MarshalJSON, or
// the store) panics.
type PanicError struct {
	// Value is the value passed to panic.
	Value any
	// Stack is the panicking goroutine's stack, as [debug.Stack] formats it.
	Stack []byte
}

// Error names the panic value by its type and a digest of its text, never
// by the text itself, which may hold message content: "batch: panic: a
// string (sha256:5f1d2a0c)". A runtime error, whose text the Go runtime
// writes, is shown as it is. The stack is logged separately.
func (e *PanicError) Error() string {
	if re, ok := e.Value.(runtime.Error); ok {
		return "batch: panic: " + re.Error()
	}
	return fmt.Sprintf("batch: panic: a %T (%s)", e.Value, redact.Digest(fmt.Sprint(e.Value)))
}

// Unwrap returns the panic value if it is an error, so that [errors.Is] and
// [errors.As] see through the panic.
func (e *PanicError) Unwrap() error {
	err, _ := e.Value.(error)
	return err
}

// PermanentError is an error that tells whether trying again can help:
// Permanent reports true when nothing can. The first PermanentError in an
// error's chain decides. A batch handler with a dead-letter setting moves
// such a record's message to its dead-letter queue at once; the
// idempotency guard does not retry a store completion whose error reports
// true. Package idempotency's BodyError, KeyError, PayloadMismatchError and
// QuarantinedError report true, as stores' errors that no retry mends do;
// a record function marks an error of its own with [Permanent].
type PermanentError interface {
	error
	Permanent() bool
}

// Permanent returns err marked as permanent (see [PermanentError]): its
// message and its chain are err's. Permanent(nil) is nil.
func Permanent(err error) error {
	if err == nil {
		return nil
	}
	return &permanentError{err: err}
}

type permanentError struct{ err error }

func (e *permanentError) Error() string   { return e.err.Error() }
func (e *permanentError) Unwrap() error   { return e.err }
func (e *permanentError) Permanent() bool { return true }

// RetryAtError is an error that tells when a new attempt of its record can
// succeed: batch's pacing has the message delivered again just after
// RetryAt, unless RetryAt is the zero time. idempotency.InProgressError is
// one.
type RetryAtError interface {
	error
	RetryAt() time.Time
}

// LoggedError is an error that its record function logged already, or
// deliberately did not log: batch's handlers do not log a failure whose
// error wraps one whose Logged reports true. The errors package
// idempotency's guard returns are LoggedErrors.
type LoggedError interface {
	error
	Logged() bool
}
