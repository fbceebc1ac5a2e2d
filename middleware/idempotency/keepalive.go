package idempotency

import (
	"context"
	"errors"
	"fmt"
	"runtime/debug"
	"sync"
	"time"

	"github.com/sqsonce/sqsonce/internal/planted"
	"github.com/sqsonce/sqsonce/middleware/failure"
	"github.com/sqsonce/sqsonce/middleware/idempotency/driver"
)

// defaultKeepAliveLimit is the default [Config.KeepAliveLimit]: twelve
// hours, the longest SQS keeps a received message invisible.
const defaultKeepAliveLimit = 12 * time.Hour

// ErrLeaseNotExtended is the cause ([context.Cause]) of an operation's
// context that the guard ended, a reserve before the lease, because it
// could not keep the claim alive (see [Config.KeepAliveEvery]). The call's
// error wraps it too.
var ErrLeaseNotExtended = errors.New("idempotency: the claim's lease was not kept alive")

// keeper keeps one claim alive while its operation runs: it extends the
// lease every Config.KeepAliveEvery, each time to the claimed lease's
// length from the extension's start, and ends the operation's context
// (with a cause wrapping ErrLeaseNotExtended) a reserve before the last
// lease it made would lapse. Times the worker relies on are read on its
// own clock (time.Now, as the claim's); the leases written on Config.Now,
// as the claim's.
type keeper struct {
	g       *Guard
	ext     driver.Extender
	rec     driver.Record // the claim, with its lease as last extended
	span    time.Duration // the claimed lease's length
	every   time.Duration
	reserve time.Duration
	horizon time.Time // no lease the worker relies on goes past it: the claim plus Config.KeepAliveLimit
	flight  *flight   // the in-process run the claim is made for, if any: its waiters see each extended lease

	cancel context.CancelCauseFunc // ends the operation's context
	parent context.Context         // the call's context, whose values extensions keep
	tick   *time.Timer             // the next extension (fire)

	// inflight counts the extension in progress (fire), so that the
	// operation's return waits for it.
	inflight sync.WaitGroup

	mu      sync.Mutex
	stopped bool      // the operation returned: no extension starts
	end     time.Time // the lease this worker relies on (without the skew margin)
	lastErr error
	n       int // extensions applied
	// Made when the first extension is due, so that an operation that
	// returns before it costs no goroutine, context or watchdog:
	kctx    context.Context    // the extensions' context
	kcancel context.CancelFunc // ends an extension in flight when the operation returned
	dog     *time.Timer        // the watchdog (lapsing)
}

// opContext is the context an operation runs with, and the function to
// call when it returned: it stops the keep-alive and reports how many
// extensions it made, whether the lease the worker relied on had ended
// (another worker may hold the claim, or have quarantined it), and, when
// it ended the context, why.
//
// The lease this worker relies on ends at ctx's deadline (as inside
// Lambda) or, without one, Config.Lease after claimed, the real time taken
// before the claim was written (the stored lease end adds
// Config.SkewMargin for other workers' clocks). Without keep-alive (a
// store that does not implement driver.Extender, or a negative
// Config.KeepAliveEvery) the context ends a reserve before that lease
// does, so that an operation that honours its context returns in time for
// its result to be stored before another worker can take the key over.
// With it, the lease is extended while the operation runs, and the
// context ends a reserve before the last extended lease would lapse (a
// refused or failed extension), at the claim's Config.KeepAliveLimit, or
// at ctx's own end, whichever comes first. Either way no lease it relies
// on goes past Config.ExpiresAfter less Config.SkewMargin after claimed:
// the record expires, for a reader whose clock runs SkewMargin ahead,
// no sooner. The reserve is a tenth of the lease, at most
// maxCompleteReserve.
func (g *Guard) opContext(ctx context.Context, f *flight, claimed, now time.Time, rec driver.Record) (context.Context, func() (extensions int, lapsed bool, cause error)) {
	end, span := claimed.Add(g.cfg.Lease), g.cfg.Lease
	if d, ok := ctx.Deadline(); ok && d.After(now) { // as claim decides
		end, span = d, d.Sub(claimed)
	}
	// A reader whose clock runs up to SkewMargin ahead takes the record as
	// expired that much before its expiry (written after claimed): no
	// lease the worker relies on, claimed or extended, goes past that.
	ceiling := claimed.Add(g.cfg.ExpiresAfter - planted.If(planted.KeepAliveToExpiry, 0, g.cfg.SkewMargin))
	if ceiling.Before(end) {
		end = ceiling
	}
	reserve := max(min(span/10, maxCompleteReserve), 0)
	ext, ok := g.cfg.Store.(driver.Extender)
	if !ok || g.cfg.KeepAliveEvery < 0 || span <= 0 {
		octx, cancel := context.WithDeadline(ctx, end.Add(-reserve))
		return octx, func() (int, bool, error) {
			lapsed := !time.Now().Before(end)
			cancel()
			return 0, lapsed, nil
		}
	}
	every := g.cfg.KeepAliveEvery
	if every == 0 || every > span/2 {
		every = span / 3
		if g.cfg.KeepAliveEvery > 0 {
			every = span / 2
		}
	}
	every = max(every, time.Millisecond)
	horizon := claimed.Add(g.cfg.KeepAliveLimit)
	if horizon.Before(end) {
		horizon = end // the limit bounds extensions, never the claimed lease
	}
	// The expiry binds too when it cut the claimed lease (end) before a
	// shorter limit could.
	limitedByExpiry := !horizon.Before(ceiling)
	if limitedByExpiry {
		horizon = ceiling
	}
	// The context ends a reserve before the invocation's end, as without
	// keep-alive, or before the horizon, whichever comes first: one
	// deadline, with the horizon's cause only when the horizon is first.
	var lctx context.Context
	var lcancel context.CancelFunc
	if d, ok := ctx.Deadline(); ok && !horizon.Before(d) {
		lctx, lcancel = context.WithDeadline(ctx, d.Add(-reserve))
	} else {
		limited := fmt.Errorf("%w: it reached Config.KeepAliveLimit (%v)", ErrLeaseNotExtended, g.cfg.KeepAliveLimit)
		if limitedByExpiry {
			limited = fmt.Errorf("%w: it reached the record's expiry (Config.ExpiresAfter, %v) less Config.SkewMargin (%v)", ErrLeaseNotExtended, g.cfg.ExpiresAfter, g.cfg.SkewMargin)
		}
		lctx, lcancel = context.WithDeadlineCause(ctx, horizon.Add(-reserve), limited)
	}
	octx, cancel := context.WithCancelCause(lctx)
	k := &keeper{
		g: g, ext: ext, rec: rec, span: span, every: every, reserve: reserve, horizon: horizon,
		cancel: cancel, parent: ctx, end: end, flight: f,
	}
	k.mu.Lock() // fire reads k.tick under k.mu
	k.tick = time.AfterFunc(time.Until(claimed.Add(every)), k.fire)
	k.mu.Unlock()
	return octx, func() (int, bool, error) {
		cause := context.Cause(octx) // as the operation returned
		k.mu.Lock()
		lapsed := !time.Now().Before(k.end)
		k.stopped = true
		k.tick.Stop()
		if k.kcancel != nil {
			k.kcancel()
		}
		k.mu.Unlock()
		k.inflight.Wait()
		k.mu.Lock()
		if k.dog != nil {
			k.dog.Stop()
		}
		n := k.n
		k.mu.Unlock()
		cancel(nil)
		lcancel()
		if !errors.Is(cause, ErrLeaseNotExtended) {
			cause = nil
		}
		return n, lapsed, cause
	}
}

// lapsing ends the operation's context when no extension was applied in
// time: the watchdog's function, run a reserve before the lease lapses.
func (k *keeper) lapsing() {
	k.mu.Lock()
	defer k.mu.Unlock()
	if time.Now().Before(k.end.Add(-k.reserve)) {
		return // an extension moved the lease since the timer fired
	}
	if !k.end.Before(k.horizon) {
		return // the lease reached the limit, whose own deadline ends the context now, with its cause
	}
	if k.lastErr != nil {
		k.cancel(fmt.Errorf("%w: no extension was applied before the lease would lapse: %w", ErrLeaseNotExtended, k.lastErr))
	} else {
		k.cancel(fmt.Errorf("%w: no extension was applied before the lease would lapse", ErrLeaseNotExtended))
	}
}

// fire is one extension, due now: the tick's function. The first arms the
// watchdog. After an extension it sets the tick to every k.every from the
// extension's start; after an extension that failed with an error that may
// pass, to soon, until the watchdog ends the context; none after one
// refused, or once the lease reached the horizon.
func (k *keeper) fire() {
	k.mu.Lock()
	if k.stopped {
		k.mu.Unlock()
		return
	}
	k.inflight.Add(1)
	defer k.inflight.Done()
	if k.kctx == nil {
		k.kctx, k.kcancel = context.WithCancel(context.WithoutCancel(k.parent))
		k.dog = time.AfterFunc(time.Until(k.end.Add(-k.reserve)), k.lapsing)
	}
	end, rec := k.end, k.rec
	k.mu.Unlock()
	next, ok := k.step(end, rec)
	if !ok {
		return
	}
	k.mu.Lock()
	if !k.stopped {
		k.tick.Reset(next)
	}
	k.mu.Unlock()
}

// step extends the lease the worker relies on (end) unless it reached the
// horizon, and returns when the next extension is due, if any.
func (k *keeper) step(end time.Time, rec driver.Record) (time.Duration, bool) {
	if !end.Before(k.horizon) {
		return 0, false // at the limit: the context ends there
	}
	start := time.Now()
	length := min(k.span, k.horizon.Sub(start))
	if length <= 0 {
		return 0, false
	}
	// An extension never shortens the stored lease: a claim under
	// package batch leases the key to the invocation's deadline, past the
	// record's window the span is counted from.
	until := later(k.g.cfg.Now().Add(length+k.g.cfg.SkewMargin), rec.LeaseEnd())
	if rec.Strict() {
		rec.StrictLease = until
	} else {
		rec.LeaseUntil = until
	}
	err := k.extend(rec)
	switch {
	case err == nil:
		k.mu.Lock()
		k.rec, k.n, k.lastErr = rec, k.n+1, nil
		if newEnd := start.Add(length); newEnd.After(k.end) {
			k.end = newEnd
			k.dog.Reset(time.Until(newEnd.Add(-k.reserve)))
		}
		k.mu.Unlock()
		if k.flight != nil {
			// Waiters that stop at their own deadline report the
			// lease as it is now, for their records' pacing.
			k.flight.claimed(rec.LeaseEnd())
		}
		return time.Until(start.Add(k.every)), true
	case errors.Is(err, driver.ErrLeaseLost):
		k.cancel(fmt.Errorf("%w: the extension was refused: %w", ErrLeaseNotExtended, err))
		return 0, false
	default:
		if k.kctx.Err() != nil {
			return 0, false
		}
		k.mu.Lock()
		k.lastErr = err
		k.mu.Unlock()
		return min(k.every/4, 100*time.Millisecond), true
	}
}

// extend is one extension, bounded by the lease it extends (an extension
// applied after that is of no use to the operation), with a panicking
// store's panic turned into an error.
func (k *keeper) extend(rec driver.Record) (err error) {
	k.mu.Lock()
	end := k.end
	k.mu.Unlock()
	ctx, cancel := context.WithDeadline(k.kctx, end.Add(k.g.cfg.SkewMargin))
	defer cancel()
	defer func() {
		if v := recover(); v != nil {
			err = &failure.PanicError{Value: v, Stack: debug.Stack()}
		}
	}()
	if err := k.ext.Extend(ctx, rec, k.g.cfg.Now()); err != nil {
		return storeError("extend", rec.ID, err)
	}
	return nil
}

// later returns the later of a and b.
func later(a, b time.Time) time.Time {
	if a.Before(b) {
		return b
	}
	return a
}
