package idempotency

import (
	"context"

	"github.com/sqsonce/sqsonce/middleware/idempotency/driver"
)

// replayHookKey carries the hook of [OnReplay] to the call it wraps.
type replayHookKey struct{}

// OnReplay returns h with hook called on every result h returns from a
// record rather than from its own run (outcomes replayed, and double_run
// without an error): hook gets the result and its record, and returns the
// result h returns instead; an error from hook fails the call. It is the
// typed form of [Config.ReplayHook], which runs first when both are set.
//
// h must be a function made by this package ([Wrap], [WrapPayload],
// [WrapJSON], [WrapEvent]) or one that calls [Do] or [DoPayload] with
// result type T; calls the operation makes are not hooked. OnReplay panics
// if h or hook is nil.
func OnReplay[In, T any](h func(context.Context, In) (T, error), hook func(ctx context.Context, result T, rec driver.Record) (T, error)) func(context.Context, In) (T, error) {
	if h == nil || hook == nil {
		panic("idempotency: OnReplay: nil function or hook")
	}
	return func(ctx context.Context, in In) (T, error) {
		return h(context.WithValue(ctx, replayHookKey{}, hook), in)
	}
}
