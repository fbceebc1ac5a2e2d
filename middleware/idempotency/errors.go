package idempotency

import (
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/sqsonce/sqsonce/middleware/batch"
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

// Sentinel errors. Callers branch on them with [errors.Is].
var (
	// ErrInProgress reports that another worker holds a live lease on the
	// key. The delivery must not be acknowledged: the batch decorator reports
	// it as a batch item failure, and SQS delivers it again later. The guard
	// returns it as an [*InProgressError], which tells when the lease ends.
	ErrInProgress = errors.New("idempotency: operation already in progress for this key")

	// ErrPayloadMismatch reports that the key was reused with a different
	// payload than the one it was first claimed with. The stored result is
	// not returned; retrying does not help. The guard returns it as a
	// [*PayloadMismatchError], which names the record.
	ErrPayloadMismatch = errors.New("idempotency: key reused with a different payload")

	// ErrNoKey reports that no idempotency key could be found. The operation
	// is never run without one.
	ErrNoKey = errors.New("idempotency: no idempotency key")

	// ErrQuarantined reports that the key's record is quarantined: a
	// strict guard found its lease lapsed with the operation's outcome
	// unknown (see [Config.Strict]). Nothing ran; nothing will run for the
	// key until an operator releases or resolves the record, or it
	// expires. The guard returns it as a [*QuarantinedError].
	ErrQuarantined = errors.New("idempotency: key quarantined: its operation may have run")

	// ErrNotClaimed is returned by [Attach] outside an operation run by the
	// guard.
	ErrNotClaimed = errors.New("idempotency: not inside a claimed operation")
)

// InProgressError is the error of a call whose key another worker holds
// under a live lease: nothing ran. [errors.Is](err, [ErrInProgress]) is true
// for it. Calls of the same key in this process that waited for the call
// that found the lease get the same error.
//
// LeaseUntil is the holder's lease end ([driver.Record.LeaseEnd]: its deadline
// plus [Config.SkewMargin]): the earliest moment a new delivery can take
// the key over (or, for a strict claim, quarantine it) if the holder died,
// and the latest at which it can find the result if the holder finishes.
// It is the zero time when the record carries no lease end (one written by
// another library without it).
type InProgressError struct {
	ID         string    // the record id
	LeaseUntil time.Time // the holder's lease end; zero when unknown
}

func (e *InProgressError) Error() string {
	if e.LeaseUntil.IsZero() {
		return fmt.Sprintf("%v: %s", ErrInProgress, e.ID)
	}
	return fmt.Sprintf("%v: %s, lease until %s", ErrInProgress, e.ID, e.LeaseUntil.UTC().Format(time.RFC3339Nano))
}

// Is reports whether target is [ErrInProgress].
func (e *InProgressError) Is(target error) bool { return target == ErrInProgress }

// RetryAt returns LeaseUntil: when a new delivery of the message can
// succeed. Package batch paces the message's next delivery with it (see
// [github.com/sqsonce/sqsonce/middleware/batch.RetryAtError]).
func (e *InProgressError) RetryAt() time.Time { return e.LeaseUntil }

// QuarantinedError is the error of a call whose key's record is
// quarantined (see [Config.Strict]): nothing ran, and retrying does not
// help until an operator acts. [errors.Is](err, [ErrQuarantined]) is true
// for it, and it is a [batch.PermanentError] that reports true, so that
// package batch can move its message to the dead-letter queue at once.
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
// acts (batch.PermanentError).
func (e *QuarantinedError) Permanent() bool { return true }

// PayloadMismatchError is the error of a call whose key was claimed with
// another payload: nothing ran and the stored result is not returned.
// [errors.Is](err, [ErrPayloadMismatch]) is true for it.
type PayloadMismatchError struct {
	ID string // the record id
}

func (e *PayloadMismatchError) Error() string {
	return fmt.Sprintf("%v: %s", ErrPayloadMismatch, e.ID)
}

// Is reports whether target is [ErrPayloadMismatch].
func (e *PayloadMismatchError) Is(target error) bool { return target == ErrPayloadMismatch }

// StoreError reports that the store failed, panicked or returned a record
// the guard cannot read. Op is the [driver.Store] method: "acquire" (nothing ran,
// unless a completion that found its lease lost was claiming the key
// again), "complete" (the operation ran; its result is not recorded) or
// "release" (the operation failed; its claim lapses with its lease); in
// strict mode also "quarantine" (nothing ran; the lapsed claim may or may
// not be marked, and the next strict call tries again).
type StoreError struct {
	Op  string // "acquire", "complete", "release" or "quarantine"
	ID  string // the record id
	Err error  // the store's error
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
	_ batch.LoggedError    = (*reported)(nil)
	_ batch.RetryAtError   = (*InProgressError)(nil)
	_ batch.PermanentError = (*BodyError)(nil)
	_ batch.PermanentError = (*KeyError)(nil)
	_ batch.PermanentError = (*PayloadMismatchError)(nil)
	_ batch.PermanentError = (*QuarantinedError)(nil)
)

// Permanent reports true: the same body fails the same way on every
// delivery. Package batch moves such a message to the dead-letter queue at
// once when it is configured to (batch.PermanentError).
func (e *BodyError) Permanent() bool { return true }

// Permanent reports true: a message without a key, or with one the format
// cannot hash, fails the same way on every delivery (batch.PermanentError).
func (e *KeyError) Permanent() bool { return true }

// Permanent reports true: the key stays claimed with the other payload
// while its record lives (batch.PermanentError).
func (e *PayloadMismatchError) Permanent() bool { return true }
