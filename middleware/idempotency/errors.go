package idempotency

import (
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/sqsonce/sqsonce/middleware/failure"
)

// prefix begins every error message of the package, once: an error of the
// package that wraps another shows the wrapped one's message without it
// (see detail).
const prefix = "idempotency: "

// detail is err's message without the package prefix, for a message that
// already carries it.
func detail(err error) string {
	if err == nil {
		return "<nil>"
	}
	return strings.TrimPrefix(err.Error(), prefix)
}

// The sentinel errors, for [errors.Is]. The guard returns the first,
// second and fourth as the typed errors below.
var (
	ErrInProgress      = errors.New("idempotency: operation already in progress for this key")
	ErrPayloadMismatch = errors.New("idempotency: key reused with a different payload")
	ErrNoKey           = errors.New("idempotency: no idempotency key") // the input has none: nothing runs
	ErrQuarantined     = errors.New("idempotency: key quarantined: its operation may have run")
	ErrNotClaimed      = errors.New("idempotency: not inside a claimed operation") // Attach outside an operation
)

// InProgressError ([ErrInProgress]) is the error of a call whose key
// another worker holds under a live lease: nothing ran, and the input must
// not be acknowledged. LeaseUntil is the holder's lease end
// ([driver.Record.LeaseEnd]), zero when the record has none: the earliest
// a new delivery can take the key over if the holder died.
type InProgressError struct {
	ID         string // the record id
	LeaseUntil time.Time
}

func (e *InProgressError) Error() string {
	if e.LeaseUntil.IsZero() {
		return fmt.Sprintf("%v: %s", ErrInProgress, e.ID)
	}
	return fmt.Sprintf("%v: %s, lease until %s", ErrInProgress, e.ID, e.LeaseUntil.UTC().Format(time.RFC3339Nano))
}

// Is reports whether target is [ErrInProgress].
func (e *InProgressError) Is(target error) bool { return target == ErrInProgress }

// RetryAt returns LeaseUntil, with which package batch paces the input's
// next delivery ([failure.RetryAtError]).
func (e *InProgressError) RetryAt() time.Time { return e.LeaseUntil }

// QuarantinedError ([ErrQuarantined]) is the error of a call whose key's
// record is quarantined (see [Config.Strict]): nothing ran, and nothing
// will until an operator acts.
type QuarantinedError struct {
	ID    string    // the record id
	Since time.Time // when the record was quarantined
}

func (e *QuarantinedError) Error() string {
	return fmt.Sprintf("%v: %s, quarantined at %s", ErrQuarantined, e.ID, e.Since.UTC().Format(time.RFC3339Nano))
}

// Is reports whether target is [ErrQuarantined].
func (e *QuarantinedError) Is(target error) bool { return target == ErrQuarantined }

// Permanent reports true: the key stays quarantined until an operator
// acts.
func (e *QuarantinedError) Permanent() bool { return true }

// PayloadMismatchError ([ErrPayloadMismatch]) is the error of a call whose
// key was claimed with another payload: nothing ran, and the stored result
// is not returned.
type PayloadMismatchError struct {
	ID string // the record id
}

func (e *PayloadMismatchError) Error() string {
	return fmt.Sprintf("%v: %s", ErrPayloadMismatch, e.ID)
}

// Is reports whether target is [ErrPayloadMismatch].
func (e *PayloadMismatchError) Is(target error) bool { return target == ErrPayloadMismatch }

// StoreError reports that the store failed, panicked or returned a record
// the guard cannot read, in the [driver.Store] method Op: "acquire"
// (nothing ran, unless a call whose lease was lost claimed again),
// "complete" (the operation ran; its result is not stored), "release" (the
// operation failed; its claim lapses with its lease) or "quarantine"
// (nothing ran).
type StoreError struct {
	Op, ID string // the method, the record id
	Err    error
}

func (e *StoreError) Error() string {
	return fmt.Sprintf("idempotency: store %s %s: %s", e.Op, e.ID, detail(e.Err))
}

func (e *StoreError) Unwrap() error { return e.Err }

// KeyError reports that the idempotency key, or the payload to validate,
// could not be taken from an input: nothing was claimed.
type KeyError struct {
	InputID string // the input's id, when known (see WithInputID)
	Source  string // where the key was looked for, e.g. `body field "idempotency_key"`
	Err     error  // wraps ErrNoKey for a missing key, or the parse error
}

func (e *KeyError) Error() string {
	if e.InputID != "" {
		return fmt.Sprintf("idempotency: key from %s of input %s: %s", e.Source, e.InputID, detail(e.Err))
	}
	return fmt.Sprintf("idempotency: key from %s: %s", e.Source, detail(e.Err))
}

func (e *KeyError) Unwrap() error { return e.Err }

// The contracts with package batch: renaming a method breaks this build
// rather than silently turning single logging, pacing or dead-lettering
// off.
var (
	_ failure.LoggedError    = (*reported)(nil)
	_ failure.RetryAtError   = (*InProgressError)(nil)
	_ failure.PermanentError = (*BodyError)(nil)
	_ failure.PermanentError = (*KeyError)(nil)
	_ failure.PermanentError = (*PayloadMismatchError)(nil)
	_ failure.PermanentError = (*QuarantinedError)(nil)
)

// Permanent reports true: the same body fails the same way on every
// delivery.
func (e *BodyError) Permanent() bool { return true }

// Permanent reports true: an input without a key, or with one the format
// cannot hash, fails the same way on every delivery.
func (e *KeyError) Permanent() bool { return true }

// Permanent reports true: the key stays claimed with the other payload
// while its record lives.
func (e *PayloadMismatchError) Permanent() bool { return true }
