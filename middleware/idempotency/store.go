package idempotency

import (
	"context"
	"errors"
	"time"

	"github.com/sqsonce/sqsonce/middleware/failure"
	"github.com/sqsonce/sqsonce/middleware/idempotency/driver"
)

// fencedWriteTimeout bounds, from its start, each store write made after
// the operation returned when the call's own context is already done; a
// context its deadline ended bounds them sooner (deadlineWriteGrace).
const fencedWriteTimeout = 5 * time.Second

// deadlineWriteGrace is how long past the call's deadline the writes made
// after the operation returned may run when that deadline ends the call's
// context, before they start or while they run. The caller's response is
// still to be sent: under batch the deadline is the records' (the
// invocation's less batch.DefaultReserve, 500 ms), and writes that run on
// past the reserve make Lambda lose the batch's response, so that every
// record of the batch comes back. 200 ms is within that reserve, and ample
// for a healthy store's write.
const deadlineWriteGrace = 200 * time.Millisecond

// lateWriteFloor is the least time such a write gets from its start, past
// deadlineWriteGrace too: an operation may run on well past its deadline
// (Lambda Managed Instances do not stop it, and keep-alive keeps its
// claim), and a healthy store must still store its result. It is below
// deadlineWriteGrace, so that writes that follow one another (a seal,
// then the completion) still end within batch's reserve.
const lateWriteFloor = 100 * time.Millisecond

// acquire is the store's Acquire: a strict call's without taking a lapsed
// claim over. A claim refused by a lapsed claim quarantines it when the
// call is strict or the claim is (whose record no claim takes over).
func (g *Guard) acquire(ctx context.Context, rec driver.Record, strict bool, now time.Time) (driver.Record, bool, error) {
	mode := driver.Takeover
	if strict {
		mode = driver.NoTakeover
	}
	return g.cfg.Store.Acquire(ctx, rec, now, mode)
}

// complete stores the completion and returns the result the store kept,
// retrying errors that may pass (see retryable) with backoff while the
// attempts and the context's deadline allow. The first attempt is made even
// when ctx is already done: the work is done.
func (g *Guard) complete(ctx context.Context, rec driver.Record) ([]byte, error) {
	wctx, cancel := writeContext(ctx)
	defer cancel()
	backoff := 20 * time.Millisecond
	for attempt := 1; ; attempt++ {
		stored, err := g.cfg.Store.Complete(wctx, rec)
		if err == nil || !retryable(err) || attempt >= g.cfg.CompleteAttempts {
			return stored, err
		}
		if d, ok := ctx.Deadline(); ok && time.Until(d) < backoff {
			return nil, err
		}
		t := time.NewTimer(backoff)
		select {
		case <-t.C:
		case <-ctx.Done():
			t.Stop()
			return nil, err
		}
		backoff *= 2
	}
}

// markQuarantined is the store's Quarantine of the lapsed claim prev.
func (g *Guard) markQuarantined(ctx context.Context, prev driver.Record, now time.Time) (driver.Record, error) {
	return g.cfg.Store.Quarantine(ctx, prev, now)
}

// detachWithin is how near its context's deadline a write made after the
// operation returned must start to be given deadlineWriteGrace past it: a
// store write takes milliseconds, and one that starts earlier ends long
// before the deadline unless the store stalls. Writes started earlier take
// ctx itself, which allocates nothing.
const detachWithin = time.Second

// writeContext is the context of a store write made after the operation
// returned: ctx itself while it is live and its deadline (if any) more
// than detachWithin away, else a detached one, since the work is done and
// recording it (or freeing its key) is still worth a try. A write made
// while ctx is live, within detachWithin of its deadline, ends
// deadlineWriteGrace after that deadline, or when ctx is cancelled (not by
// its deadline): one started just before the deadline gets the same grace
// as one started just after it. A write made once ctx's deadline ended
// it ends deadlineWriteGrace after that deadline (but no sooner than
// lateWriteFloor from now), and never later than fencedWriteTimeout from
// now, which alone bounds a write made after ctx was cancelled.
func writeContext(ctx context.Context) (context.Context, context.CancelFunc) {
	err := ctx.Err()
	d, hasDeadline := ctx.Deadline()
	if err == nil {
		if !hasDeadline || time.Until(d) > detachWithin {
			return ctx, func() {}
		}
		wctx, cancel := context.WithDeadline(context.WithoutCancel(ctx), d.Add(deadlineWriteGrace))
		stop := context.AfterFunc(ctx, func() {
			if !errors.Is(ctx.Err(), context.DeadlineExceeded) {
				cancel()
			}
		})
		return wctx, func() { stop(); cancel() }
	}
	now := time.Now()
	end := now.Add(fencedWriteTimeout)
	if hasDeadline && errors.Is(err, context.DeadlineExceeded) {
		bound := d.Add(deadlineWriteGrace)
		if floor := now.Add(lateWriteFloor); bound.Before(floor) {
			bound = floor
		}
		if bound.Before(end) {
			end = bound
		}
	}
	return context.WithDeadline(context.WithoutCancel(ctx), end)
}

// retryable reports whether a failed Complete may succeed if tried again.
func retryable(err error) bool {
	if p, ok := errors.AsType[failure.PermanentError](err); ok && p.Permanent() {
		return false
	}
	return !errors.Is(err, driver.ErrLeaseLost) && !errors.Is(err, driver.ErrAttachUnsupported) &&
		!errors.Is(err, context.Canceled)
}

func (g *Guard) release(ctx context.Context, id, owner string) error {
	wctx, cancel := writeContext(ctx)
	defer cancel()
	if err := g.cfg.Store.Release(wctx, id, owner); err != nil {
		return storeError("release", id, err)
	}
	return nil
}

func storeError(op, id string, err error) error {
	var se *StoreError
	if errors.As(err, &se) {
		return err
	}
	return &StoreError{Op: op, ID: id, Err: err}
}
