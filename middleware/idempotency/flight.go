package idempotency

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"time"

	"github.com/sqsonce/sqsonce/internal/planted"
	"github.com/sqsonce/sqsonce/middleware/idempotency/driver"
)

// calls is the state the calls of one guard share: the cache and the
// calls running now.
type calls struct {
	cache *cache // nil when Config.CacheBytes is 0

	mu      sync.Mutex
	flights map[flightID]*flight // calls running now
}

// flight is one run of an operation that other calls of the same key and
// payload in this process wait for instead of running it again.
type flight struct {
	done chan struct{} // closed when out is set; made, under calls.mu, by the first call that waits
	out  outcome
	// callerDone: the running call's own context had ended when its run
	// did, or the operation's context had, a reserve before that call's
	// deadline: a waiter whose context is live and outlasts that deadline
	// (callerDeadline, zero when the call was cancelled or had none) tries
	// again rather than share a failure that was its caller's, not the
	// operation's. callerEnded is the operation's part, set by claimAndRun.
	callerDone, callerEnded bool
	callerDeadline          time.Time

	mu    sync.Mutex
	lease time.Time // the end of the run's lease once claimed, for its waiters' InProgressError
}

// claimed records the end of the lease of the flight's claim, for the
// waiters that stop at their own deadline before the run ends.
func (f *flight) claimed(lease time.Time) {
	f.mu.Lock()
	f.lease = lease
	f.mu.Unlock()
}

// leaseEnd is the end of the flight's lease, or the zero time before its
// claim is made.
func (f *flight) leaseEnd() time.Time {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.lease
}

// run serves a call from the cache, or waits for a call of the same key and
// payload already running in this process and shares its outcome, or claims
// and runs. A waiting call stops waiting when its own context is done (as
// at its own invocation's deadline); the run it waited for goes on, and the
// waiter's key is in progress, with the run's lease, as another process
// would find it in the store.
// flightID is a run's key among the calls running now: its record id,
// payload digest and mode.
type flightID struct {
	id, validation string
	strict         bool
}

func (g *Guard) run(ctx context.Context, id, validation string, strict bool, op func(context.Context) (any, error)) outcome {
	if a, _ := ctx.Value(attachKey{}).(*attachments); a != nil && a.id == id {
		err := fmt.Errorf("idempotency: %s called again from inside its own operation: it would wait for itself", id)
		return outcome{ev: Report{Outcome: OutcomeFailed, Err: err}}
	}
	if out, ok := g.fromCache(id, validation); ok {
		return out
	}
	// A strict call never shares a run that may take a lapsed claim over, so
	// it has flights of its own; a default call shares either kind, since a
	// strict run takes nothing over (and must not be taken over from here).
	fk := flightID{id: id, validation: planted.If(planted.FlightIgnoresPayload, "", validation), strict: strict}
	strictKey := fk
	strictKey.strict = true
	for {
		g.mu.Lock()
		f, running := g.flights[fk]
		if !running && !strict {
			f, running = g.flights[strictKey]
		}
		if !running {
			break // with g.mu held: this call runs
		}
		if f.done == nil {
			f.done = make(chan struct{})
		}
		done := f.done
		g.mu.Unlock()
		select {
		case <-done:
			if f.callerDone && ctxErr(f.out.ev.Err) && ctx.Err() == nil && outlasts(ctx, f.callerDeadline) {
				continue // the run ended for its own caller's context, not ours: try again
			}
			return f.out.shared()
		case <-ctx.Done():
			err := &InProgressError{ID: id, LeaseUntil: f.leaseEnd()}
			return outcome{ev: Report{Outcome: OutcomeInProgress, Source: "shared", Err: err}}
		}
	}
	f := &flight{}
	g.flights[fk] = f
	g.mu.Unlock()
	defer func() {
		g.mu.Lock()
		delete(g.flights, fk)
		done := f.done
		g.mu.Unlock()
		if done != nil { // a call waits
			close(done)
		}
	}()
	f.out = g.claimAndRun(ctx, f, id, validation, strict, op)
	// Read by waiters after done closes.
	if f.callerDone = f.callerEnded || ctx.Err() != nil; f.callerDone && !errors.Is(ctx.Err(), context.Canceled) {
		f.callerDeadline, _ = ctx.Deadline()
	}
	return f.out
}

// outlasts reports whether ctx's deadline is later than d: a waiter whose
// own deadline is no later would meet the running call's end again. A zero
// d (the call was cancelled) or no deadline of ctx's outlasts.
func outlasts(ctx context.Context, d time.Time) bool {
	w, ok := ctx.Deadline()
	return d.IsZero() || !ok || w.After(d)
}

func ctxErr(err error) bool {
	return errors.Is(err, context.Canceled) || errors.Is(err, context.DeadlineExceeded)
}

// shared is the outcome of a call that waited for out's run: the same result
// and error, but nothing ran in it. A waiter fails if the run failed; it is
// in progress or mismatched if the run found the key so (a double run that
// found the winner still running is in progress for its waiters).
func (out outcome) shared() outcome {
	ev := Report{Outcome: OutcomeReplayed, Source: "shared", Err: out.ev.Err}
	switch {
	case out.ev.Err == nil:
	case errors.Is(out.ev.Err, ErrInProgress):
		ev.Outcome = OutcomeInProgress
	case errors.Is(out.ev.Err, ErrQuarantined):
		ev.Outcome = OutcomeQuarantined
	case out.ev.Outcome == OutcomeMismatch:
		ev.Outcome = OutcomeMismatch
	default:
		ev.Outcome = OutcomeFailed
	}
	return outcome{data: out.data, rec: out.rec, ev: ev}
}

func (g *Guard) fromCache(id, validation string) (outcome, bool) {
	if g.cache == nil {
		return outcome{}, false
	}
	rec, ok := g.cache.get(id)
	if !ok {
		return outcome{}, false
	}
	if !rec.ExpiresAt.After(g.cfg.Now()) {
		g.cache.remove(id)
		return outcome{}, false
	}
	if mismatch(rec, validation) && !planted.On(planted.CacheIgnoresPayload) {
		return outcome{ev: Report{Outcome: OutcomeMismatch, Source: "cache", Err: &PayloadMismatchError{ID: id}}}, true
	}
	return outcome{data: rec.Data, rec: rec, ev: Report{Outcome: OutcomeReplayed, Source: "cache"}}, true
}

func (g *Guard) remember(rec driver.Record) {
	if g.cache != nil {
		rec.Attached = nil
		g.cache.add(rec)
	}
}
