package oteltrace

import (
	"context"
	"errors"
	"reflect"

	"github.com/sqsonce/sqsonce/middleware/batch"
	"github.com/sqsonce/sqsonce/middleware/idempotency"
	"github.com/sqsonce/sqsonce/middleware/idempotency/driver"
)

// classTypes are the error types of the guard and of package batch, by the
// name a span gives them, tried in order: the first in err's chain names it.
var classTypes = []struct {
	name string
	is   func(error) bool
}{
	{"*idempotency.KeyError", isType[*idempotency.KeyError]},
	{"*idempotency.BodyError", isType[*idempotency.BodyError]},
	{"*idempotency.InProgressError", isType[*idempotency.InProgressError]},
	{"*idempotency.PayloadMismatchError", isType[*idempotency.PayloadMismatchError]},
	{"*idempotency.QuarantinedError", isType[*idempotency.QuarantinedError]},
	{"*idempotency.StoreError", isType[*idempotency.StoreError]},
	{"*batch.PanicError", isType[*batch.PanicError]},
}

// classSentinels are the sentinel errors a span names.
var classSentinels = []struct {
	name string
	err  error
}{
	{"idempotency.ErrLeaseNotExtended", idempotency.ErrLeaseNotExtended},
	{"idempotency.ErrInProgress", idempotency.ErrInProgress},
	{"idempotency.ErrQuarantined", idempotency.ErrQuarantined},
	{"idempotency.ErrPayloadMismatch", idempotency.ErrPayloadMismatch},
	{"idempotency.ErrNoKey", idempotency.ErrNoKey},
	{"idempotency.ErrNotClaimed", idempotency.ErrNotClaimed},
	{"driver.ErrLeaseLost", driver.ErrLeaseLost},
	{"driver.ErrAttachUnsupported", driver.ErrAttachUnsupported},
	{"batch.ErrDeadline", batch.ErrDeadline},
	{"batch.ErrGroupFailed", batch.ErrGroupFailed},
	{"batch.ErrReserveReached", batch.ErrReserveReached},
	{"context.DeadlineExceeded", context.DeadlineExceeded},
	{"context.Canceled", context.Canceled},
}

func isType[E error](err error) bool {
	_, ok := errors.AsType[E](err)
	return ok
}

// errorClass names err's class, never its text (an operation's error may
// quote its input): the guard's or package batch's error type in its chain,
// else a sentinel it wraps, else the Go type of the first error in its
// chain that is not a mere wrapper (fmt.Errorf's, errors.Join's, the guard's
// own).
func errorClass(err error) string {
	for _, t := range classTypes {
		if t.is(err) {
			return t.name
		}
	}
	for _, s := range classSentinels {
		if errors.Is(err, s.err) {
			return s.name
		}
	}
	for {
		var next error
		switch e := err.(type) {
		case interface{ Unwrap() error }:
			if !wrapper(err) {
				return typeName(err)
			}
			next = e.Unwrap()
		case interface{ Unwrap() []error }:
			if !wrapper(err) {
				return typeName(err)
			}
			if errs := e.Unwrap(); len(errs) > 0 {
				next = errs[0]
			}
		default:
			return typeName(err)
		}
		if next == nil {
			return typeName(err)
		}
		err = next
	}
}

// typeName is err's Go type as %T prints it, without formatting.
func typeName(err error) string { return reflect.TypeOf(err).String() }

// wrapper reports whether err only wraps others: its type tells nothing.
func wrapper(err error) bool {
	switch typeName(err) {
	case "*fmt.wrapError", "*fmt.wrapErrors", "*errors.joinError", "*idempotency.reported":
		return true
	}
	return false
}
