// Package invocation carries a Lambda invocation's deadline in the context
// of work that package batch runs under an earlier one (its records end a
// reserve before the invocation does): the guard's claim leases a key until
// the invocation's deadline, when Lambda may stop the worker, not the
// records'.
package invocation

import (
	"context"
	"time"
)

type deadlineKey struct{}

// WithDeadline returns ctx carrying d as the deadline of the invocation
// its work belongs to.
func WithDeadline(ctx context.Context, d time.Time) context.Context {
	return context.WithValue(ctx, deadlineKey{}, d)
}

// Deadline returns the invocation's deadline ctx carries, if any.
func Deadline(ctx context.Context) (time.Time, bool) {
	d, ok := ctx.Value(deadlineKey{}).(time.Time)
	return d, ok
}
