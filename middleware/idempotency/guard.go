package idempotency

import (
	"bytes"
	"context"
	"crypto/rand"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"runtime/debug"
	"sync"
	"time"

	"github.com/sqsonce/sqsonce/internal/redact"
	"github.com/sqsonce/sqsonce/middleware/batch"
	"github.com/sqsonce/sqsonce/middleware/idempotency/driver"
)

// fencedWriteTimeout bounds the store writes made after the operation
// returned when the invocation's own context is already done.
const fencedWriteTimeout = 5 * time.Second

// maxCompleteReserve caps the time kept at the end of a lease for storing
// the result (see opContext).
const maxCompleteReserve = time.Second

// Guard runs operations at most once per idempotency key. Create one with
// [New] at start-up and share it: it is safe for concurrent use.
type Guard struct {
	cfg Config
	*calls
}

// calls is what the views of one guard share: the cache and the calls
// running now.
type calls struct {
	cache *cache // nil when Config.CacheBytes is 0

	mu      sync.Mutex
	flights map[string]*flight // calls running now, by id, payload digest and mode
}

// flight is one run of an operation that other calls of the same key and
// payload in this process wait for instead of running it again.
type flight struct {
	done chan struct{} // closed when out is set
	out  outcome
}

// New fills in cfg's defaults, validates it and returns a Guard. It
// reports every problem of the configuration at once.
func New(cfg Config) (*Guard, error) {
	cfg = cfg.withDefaults()
	if err := cfg.validate(); err != nil {
		return nil, err
	}
	g := &Guard{cfg: cfg, calls: &calls{flights: make(map[string]*flight)}}
	if cfg.CacheBytes > 0 {
		g.cache = newCache(cfg.CacheBytes)
	}
	return g, nil
}

// ID returns the record id of k: "{Namespace}#{digest}", the digest in the
// configured [Format]. It fails when the format cannot hash k (see
// [Format.Hash]).
func (g *Guard) ID(k Selection) (string, error) {
	ns := g.cfg.Namespace
	b := make([]byte, 0, len(ns)+1+64)
	b = append(append(b, ns...), '#')
	b, err := g.cfg.Format.appendHash(b, k)
	if err != nil {
		return "", err
	}
	return string(b), nil
}

// Attach attaches w to the completion of the operation running in ctx: the
// store commits w together with the record's completion, or neither (see
// [driver.Record.Attached]). What w may be depends on the store; package dynamostore
// takes DynamoDB transaction items. Attach returns [ErrNotClaimed] when ctx is
// not the context of an operation run by [Do] or [Wrap], or the operation has
// returned.
//
// Attach asks the store first ([driver.AttachValidator]) and returns its
// error, so that the operation learns at once of a write its completion
// could not commit, rather than after the work is done; a store that
// commits no attached writes fails it with [driver.ErrAttachUnsupported].
func Attach(ctx context.Context, w any) error {
	a, _ := ctx.Value(attachKey{}).(*attachments)
	if a == nil {
		return ErrNotClaimed
	}
	a.mu.Lock()
	defer a.mu.Unlock()
	if a.closed {
		return ErrNotClaimed
	}
	v, ok := a.store.(driver.AttachValidator)
	if !ok {
		return fmt.Errorf("idempotency: attach to %s: %T commits no attached writes: %w", a.id, a.store, driver.ErrAttachUnsupported)
	}
	if err := v.ValidateAttached(a.id, append(a.items[:len(a.items):len(a.items)], w)); err != nil {
		return err
	}
	a.items = append(a.items, w)
	return nil
}

// RecordID returns the id of the record claimed for the operation running in
// ctx ("{namespace}#{digest}"), for logs and for keying the operation's own
// writes, or "" outside an operation run by [Do] or [Wrap].
func RecordID(ctx context.Context) string {
	if a, _ := ctx.Value(attachKey{}).(*attachments); a != nil {
		return a.id
	}
	return ""
}

type attachKey struct{}

type attachments struct {
	id     string // the record's id
	store  driver.Store
	mu     sync.Mutex
	closed bool
	items  []any
}

func (a *attachments) close() []any {
	a.mu.Lock()
	defer a.mu.Unlock()
	a.closed = true
	return a.items
}

// call is one request to run an operation.
type call struct {
	key      Selection
	payload  Selection
	source   string // where the key came from, for a KeyError
	validate bool
	strict   bool // this call is strict, whatever Config.Strict says
	inputID  string
}

// fail reports a call that failed before anything was claimed, with err
// (a *KeyError or *BodyError), and returns the error the call returns.
func (g *Guard) fail(ctx context.Context, c call, err error) error {
	g.report(ctx, Report{Outcome: OutcomeFailed, InputID: c.inputID, Err: err})
	return &reported{err}
}

// outcome is what one run produced: the result (val when the operation ran
// in this call, data as stored), the record it came from when it came from
// one (for the replay hooks), and the event to report.
type outcome struct {
	val  any
	data []byte
	rec  driver.Record
	ev   Report
}

// keySource names a call's key in a KeyError: its selector, else where it
// came from.
func keySource(c call) string {
	if c.key.Selector != "" {
		return c.key.Selector
	}
	return c.source
}

func do[T any](ctx context.Context, g *Guard, c call, fn func(context.Context) (T, error), hook func(context.Context, T, Report) (T, error)) (T, error) {
	var zero T
	start := g.cfg.Now()
	if len(c.key.Value) == 0 {
		return zero, g.fail(ctx, c, &KeyError{InputID: c.inputID, Source: c.source, Err: ErrNoKey})
	}
	id, err := g.ID(c.key)
	var validation string
	if err == nil && c.validate {
		if validation, err = g.cfg.Format.Hash(c.payload); err != nil {
			err = fmt.Errorf("payload for validation: %w", err)
		}
	}
	if err != nil {
		return zero, g.fail(ctx, c, &KeyError{InputID: c.inputID, Source: keySource(c), Err: err})
	}
	op := func(ctx context.Context) (any, error) { return fn(ctx) }
	out := g.run(ctx, id, validation, g.cfg.Strict || c.strict, op)
	out.ev.ID, out.ev.InputID = id, c.inputID
	replay := out.ev.Err == nil && (out.ev.Outcome == OutcomeReplayed || out.ev.Outcome == OutcomeDoubleRun)
	var v T
	if out.ev.Err == nil {
		if err := decode(out, &v); err != nil {
			out.ev.Outcome, out.ev.Err = OutcomeFailed, fmt.Errorf("idempotency: decode stored result of %s into %T: %w", id, v, err)
		}
	}
	if replay && hook != nil && out.ev.Err == nil {
		var err error
		if v, err = hook(ctx, v, out.ev); err != nil {
			out.ev.Outcome, out.ev.Err = OutcomeFailed, fmt.Errorf("idempotency: replay hook for %s: %w", id, err)
		}
	}
	out.ev.Duration = g.cfg.Now().Sub(start)
	g.report(ctx, out.ev)
	if out.ev.Err != nil {
		return zero, &reported{out.ev.Err}
	}
	return v, nil
}

// decode sets *v to the call's result: the value the operation returned
// when it ran in this call, else the stored result (the zero value when
// none was stored).
func decode[T any](out outcome, v *T) error {
	if r, ok := out.val.(T); ok && out.ev.Ran {
		*v = r
		return nil
	}
	if len(out.data) == 0 { // completed without a stored result
		return nil
	}
	return json.Unmarshal(out.data, v)
}

// run serves a call from the cache, or waits for a call of the same key and
// payload already running in this process and shares its outcome, or claims
// and runs. A waiting call stops waiting when its own context is done; the
// run it waited for goes on.
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
	fk := id + "\x00" + validation
	strictKey := fk + "\x00strict"
	if strict {
		fk = strictKey
	}
	for {
		g.mu.Lock()
		f, running := g.flights[fk]
		if !running && !strict {
			f, running = g.flights[strictKey]
		}
		if !running {
			break // with g.mu held: this call runs
		}
		g.mu.Unlock()
		select {
		case <-f.done:
			if ctxErr(f.out.ev.Err) && ctx.Err() == nil {
				continue // the run ended for its own caller's context, not ours: try again
			}
			return f.out.shared()
		case <-ctx.Done():
			err := fmt.Errorf("idempotency: waiting for a call of the same key in this process: %w", context.Cause(ctx))
			return outcome{ev: Report{Outcome: OutcomeFailed, Source: "shared", Err: err}}
		}
	}
	f := &flight{done: make(chan struct{})}
	g.flights[fk] = f
	g.mu.Unlock()
	defer func() {
		g.mu.Lock()
		delete(g.flights, fk)
		g.mu.Unlock()
		close(f.done)
	}()
	f.out = g.claimAndRun(ctx, id, validation, strict, op)
	return f.out
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
	if mismatch(rec, validation) {
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

func mismatch(stored driver.Record, validation string) bool {
	return validation != "" && stored.Validation != "" && stored.Validation != validation
}

// claimAndRun is the state machine of the package doc ("Records and the
// state machine"): claim with one conditional write, run, complete fenced
// by the lease owner token.
func (g *Guard) claimAndRun(ctx context.Context, id, validation string, strict bool, op func(context.Context) (any, error)) (out outcome) {
	step, ran := "acquire", false // for a panicking Store
	defer func() {
		// A panicking Store must fail this call, not the process, and not
		// the calls sharing it. The record is left as it is.
		if v := recover(); v != nil {
			err := &StoreError{Op: step, ID: id, Err: &batch.PanicError{Value: v, Stack: debug.Stack()}}
			out = outcome{ev: Report{Outcome: OutcomeFailed, Ran: ran, Err: err}}
		}
	}()
	if err := ctx.Err(); err != nil {
		return outcome{ev: Report{Outcome: OutcomeFailed, Err: fmt.Errorf("idempotency: not claimed: %w", context.Cause(ctx))}}
	}
	claimed := time.Now() // the operation's timer counts from here, before the lease is computed
	var (
		now  time.Time
		rec  driver.Record
		prev driver.Record
	)
	for attempt := 1; ; attempt++ {
		now = g.cfg.Now()
		rec = g.claim(ctx, id, validation, strict, now)
		var loaded bool
		var err error
		step = "acquire"
		prev, loaded, err = g.acquire(ctx, rec, strict, now)
		if err != nil {
			return outcome{ev: Report{Outcome: OutcomeFailed, Err: storeError("acquire", id, err)}}
		}
		if !loaded {
			break
		}
		if !(strict || prev.Strict()) || !lapsed(prev, validation, now) {
			return g.existing(prev, validation, false)
		}
		// A lapsed claim found in strict mode, or a lapsed strict claim, is
		// quarantined, never taken over.
		step = "quarantine"
		out, retry := g.quarantine(ctx, prev, validation, now)
		if !retry || attempt == quarantineAttempts {
			return out
		}
	}
	result := OutcomeClaimed
	if prev.ID != "" {
		result = OutcomeTakenOver
	}

	att := &attachments{id: id, store: g.cfg.Store}
	octx, cancel := g.opContext(ctx, claimed, now)
	val, err := callOp(context.WithValue(octx, attachKey{}, att), op)
	cancel()
	attached := att.close()
	ran = true
	if err != nil {
		step = "release"
		ev := Report{Outcome: OutcomeReleased, Ran: true, Err: err}
		if rerr := g.release(ctx, id, rec.Owner); rerr != nil {
			ev.Outcome, ev.Err = OutcomeFailed, errors.Join(err, rerr)
		}
		return outcome{ev: ev}
	}

	data, encErr := encode(val)
	if encErr != nil {
		// The operation ran; never run it again for want of a result. The
		// record completes without one and this delivery fails.
		data, val = nil, nil
		if _, ok := encErr.(*batch.PanicError); !ok {
			encErr = fmt.Errorf("idempotency: encode result of %s: %w", id, encErr)
		}
		result = OutcomeFailed
	}
	step = "complete"
	rec.Status, rec.Data, rec.Attached = driver.StatusCompleted, data, attached
	rec.ExpiresAt = g.cfg.Now().Add(g.cfg.ExpiresAfter)
	stored, err := g.complete(ctx, rec)
	if errors.Is(err, driver.ErrLeaseLost) {
		step = "acquire"
		return g.lost(ctx, rec, strict, val, result, encErr)
	}
	if err != nil {
		return outcome{ev: Report{Outcome: OutcomeFailed, Ran: true, Err: storeError("complete", id, err)}}
	}
	return g.completed(rec, stored, val, Report{Outcome: result, Ran: true, Err: encErr})
}

// completed is the outcome of a completion that stored stored as the
// result. When the store kept less than the operation returned (a result too
// large for it), every delivery, this one included, gets what it kept.
func (g *Guard) completed(rec driver.Record, stored []byte, val any, ev Report) outcome {
	if !bytes.Equal(stored, rec.Data) {
		val = nil
	}
	rec.Data, rec.Attached = stored, nil
	g.remember(rec)
	return outcome{val: val, data: stored, rec: rec, ev: ev}
}

// lost handles a completion that found the lease taken over: the winner's
// outcome stands if it completed (or it still runs), and this call reports
// the double run; if the record is free again, this call's result is
// recorded under a new claim.
func (g *Guard) lost(ctx context.Context, done driver.Record, strict bool, val any, result Outcome, encErr error) outcome {
	ctx, cancel := writeContext(ctx)
	defer cancel()
	now := g.cfg.Now()
	rec := g.claim(ctx, done.ID, done.Validation, strict, now)
	prev, loaded, err := g.acquire(ctx, rec, strict, now)
	if err != nil {
		return outcome{ev: Report{Outcome: OutcomeFailed, Ran: true, Err: storeError("acquire", done.ID, errors.Join(driver.ErrLeaseLost, err))}}
	}
	if loaded {
		out := g.existing(prev, done.Validation, true)
		if out.ev.Outcome == OutcomeReplayed || out.ev.Outcome == OutcomeInProgress {
			out.ev.Outcome = OutcomeDoubleRun // another worker ran it too
		}
		return out
	}
	rec.Status, rec.Data, rec.Attached, rec.ExpiresAt = driver.StatusCompleted, done.Data, done.Attached, done.ExpiresAt
	stored, err := g.complete(ctx, rec)
	if err != nil {
		return outcome{ev: Report{Outcome: OutcomeFailed, Ran: true, Err: storeError("complete", done.ID, err)}}
	}
	return g.completed(rec, stored, val, Report{Outcome: result, Ran: true, Err: encErr})
}

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

// lapsed reports whether a claim that found prev must quarantine it (see
// quarantines): an INPROGRESS claim, not quarantined yet, whose lease
// (driver.Record.LeaseEnd) ended before now (a record without a lease end is
// never taken over either way), for the call's own payload.
func lapsed(prev driver.Record, validation string, now time.Time) bool {
	end := prev.LeaseEnd()
	return prev.Status == driver.StatusInProgress && prev.Quarantined.IsZero() && !mismatch(prev, validation) &&
		!end.IsZero() && end.Before(now)
}

// quarantineAttempts bounds the rounds of a strict claim that found a
// lapsed claim whose record changed before it could be quarantined.
const quarantineAttempts = 3

// quarantine marks the lapsed claim prev quarantined, with one conditional
// write, and reports the outcome. When the record changed first and the
// store returned it (another call quarantined it, its worker completed
// it), that record decides; when the store cannot tell, retry is true and
// the caller claims again.
func (g *Guard) quarantine(ctx context.Context, prev driver.Record, validation string, now time.Time) (out outcome, retry bool) {
	got, err := g.cfg.Store.Quarantine(ctx, prev, now)
	switch {
	case err == nil:
		err := &QuarantinedError{ID: prev.ID, Since: got.Quarantined}
		return outcome{rec: got, ev: Report{Outcome: OutcomeQuarantined, Err: err}}, false
	case !errors.Is(err, driver.ErrLeaseLost):
		return outcome{ev: Report{Outcome: OutcomeFailed, Err: storeError("quarantine", prev.ID, err)}}, false
	case got.ID != "" && (got.Status != driver.StatusInProgress || !got.Quarantined.IsZero() || mismatch(got, validation)):
		return g.existing(got, validation, false), false
	}
	return outcome{ev: Report{Outcome: OutcomeFailed, Err: storeError("quarantine", prev.ID, err)}}, true
}

// existing is the outcome of finding a record that blocked the claim.
func (g *Guard) existing(prev driver.Record, validation string, ran bool) outcome {
	if mismatch(prev, validation) {
		return outcome{ev: Report{Outcome: OutcomeMismatch, Ran: ran, Err: &PayloadMismatchError{ID: prev.ID}}}
	}
	if prev.Status == driver.StatusInProgress && !prev.Quarantined.IsZero() {
		err := &QuarantinedError{ID: prev.ID, Since: prev.Quarantined}
		return outcome{rec: prev, ev: Report{Outcome: OutcomeQuarantined, Source: "store", Ran: ran, Err: err}}
	}
	switch prev.Status {
	case driver.StatusCompleted:
		g.remember(prev)
		return outcome{data: prev.Data, rec: prev, ev: Report{Outcome: OutcomeReplayed, Source: "store", Ran: ran}}
	case driver.StatusInProgress:
		err := &InProgressError{ID: prev.ID, LeaseUntil: prev.LeaseEnd()}
		return outcome{ev: Report{Outcome: OutcomeInProgress, Ran: ran, Err: err}}
	default:
		err := storeError("acquire", prev.ID, fmt.Errorf("record has unknown status %s", redact.String(string(prev.Status))))
		return outcome{ev: Report{Outcome: OutcomeFailed, Ran: ran, Err: err}}
	}
}

// claim is a new INPROGRESS record with a fresh owner token. The lease ends
// at the context's deadline (the Lambda invocation's), else after
// Config.Lease, plus Config.SkewMargin for clocks that disagree. In strict
// mode the lease end is the record's StrictLease, and its LeaseUntil the
// record's expiry, so that no reader of LeaseUntil takes the claim over.
func (g *Guard) claim(ctx context.Context, id, validation string, strict bool, now time.Time) driver.Record {
	lease := now.Add(g.cfg.Lease)
	if d, ok := ctx.Deadline(); ok && d.After(now) {
		lease = d
	}
	rec := driver.Record{
		ID:         id,
		Status:     driver.StatusInProgress,
		ExpiresAt:  now.Add(g.cfg.ExpiresAfter),
		LeaseUntil: lease.Add(g.cfg.SkewMargin),
		Validation: validation,
		Owner:      rand.Text(),
	}
	if strict {
		rec.StrictLease, rec.LeaseUntil = rec.LeaseUntil, rec.ExpiresAt
	}
	return rec
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
		stored, err := g.completeOnce(wctx, rec)
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

func (g *Guard) completeOnce(ctx context.Context, rec driver.Record) ([]byte, error) {
	return g.cfg.Store.Complete(ctx, rec)
}

// writeContext is the context of a store write made after the operation
// returned: ctx itself while it is live, else a detached one bounded by
// fencedWriteTimeout, since the work is done and recording it (or freeing
// its key) is still worth a try.
func writeContext(ctx context.Context) (context.Context, context.CancelFunc) {
	if ctx.Err() == nil {
		return ctx, func() {}
	}
	return context.WithTimeout(context.WithoutCancel(ctx), fencedWriteTimeout)
}

// retryable reports whether a failed Complete may succeed if tried again.
func retryable(err error) bool {
	if p, ok := errors.AsType[batch.PermanentError](err); ok && p.Permanent() {
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

// opContext is the context an operation runs with: ctx, ending a reserve
// before the lease this worker may rely on ends, so that an operation that
// honours its context returns in time for its result to be stored before
// another worker can take the key over. That lease ends at ctx's deadline
// (as inside Lambda) or, without one, Config.Lease after the claim was
// made (the stored lease end adds Config.SkewMargin for other workers'
// clocks). The Lease timer counts from claimed, the real time taken before
// the claim was written, as the lease does, however long the write took.
// The reserve is a tenth of the lease, at most maxCompleteReserve. Call
// cancel when the operation has returned.
func (g *Guard) opContext(ctx context.Context, claimed, now time.Time) (context.Context, context.CancelFunc) {
	end, span := claimed.Add(g.cfg.Lease), g.cfg.Lease
	if d, ok := ctx.Deadline(); ok && d.After(now) { // as claim decides
		end, span = d, d.Sub(claimed)
	}
	return context.WithDeadline(ctx, end.Add(-max(min(span/10, maxCompleteReserve), 0)))
}

// encode is the JSON encoding of val, with a panic in a MarshalJSON method
// turned into a *batch.PanicError.
func encode(val any) (data []byte, err error) {
	defer func() {
		if v := recover(); v != nil {
			err = &batch.PanicError{Value: v, Stack: debug.Stack()}
		}
	}()
	return json.Marshal(val)
}

// callOp runs op, turning a panic into a *batch.PanicError.
func callOp(ctx context.Context, op func(context.Context) (any, error)) (val any, err error) {
	defer func() {
		if v := recover(); v != nil {
			err = &batch.PanicError{Value: v, Stack: debug.Stack()}
		}
	}()
	return op(ctx)
}

func storeError(op, id string, err error) error {
	var se *StoreError
	if errors.As(err, &se) {
		return err
	}
	return &StoreError{Op: op, ID: id, Err: err}
}

// report logs ev at its outcome's level and passes it to Config.OnOutcome.
func (g *Guard) report(ctx context.Context, ev Report) {
	if level := level(ev.Outcome); g.cfg.Logger.Enabled(ctx, level) {
		attrs := []slog.Attr{
			slog.String("outcome", string(ev.Outcome)),
			slog.String("record_id", ev.ID),
			slog.String("input_id", ev.InputID),
			slog.Bool("ran", ev.Ran),
			slog.Duration("duration", ev.Duration),
		}
		if ev.Source != "" {
			attrs = append(attrs, slog.String("source", ev.Source))
		}
		if ev.Err != nil {
			attrs = append(attrs, slog.String("error", ev.Err.Error()))
			if pe, ok := errors.AsType[*batch.PanicError](ev.Err); ok {
				attrs = append(attrs, slog.String("stack", string(pe.Stack)))
			}
		}
		g.cfg.Logger.LogAttrs(ctx, level, "idempotency", attrs...)
	}
	if g.cfg.OnOutcome != nil {
		g.cfg.OnOutcome(ctx, ev)
	}
}

// reported is an error the guard has reported: logged at its outcome's
// level (or not, as the logger's handler chose) and passed to
// [Config.OnOutcome]. It is a batch.LoggedError: its Logged method tells
// package batch, which does not import this package, not to log it a
// second time (asserted in contracts_test.go).
type reported struct{ err error }

func (e *reported) Error() string { return e.err.Error() }
func (e *reported) Unwrap() error { return e.err }

// Logged reports that the error was logged already.
func (*reported) Logged() bool { return true }
