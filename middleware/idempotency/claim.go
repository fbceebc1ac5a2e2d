package idempotency

import (
	"bytes"
	"context"
	"crypto/rand"
	"encoding/json"
	"errors"
	"fmt"
	"runtime/debug"
	"strconv"
	"time"

	"github.com/sqsonce/sqsonce/internal/invocation"
	"github.com/sqsonce/sqsonce/internal/planted"
	"github.com/sqsonce/sqsonce/internal/redact"
	"github.com/sqsonce/sqsonce/middleware/failure"
	"github.com/sqsonce/sqsonce/middleware/idempotency/driver"
)

// maxCompleteReserve caps the time kept at the end of a lease for storing
// the result (see opContext).
const maxCompleteReserve = time.Second

// outcome is what one run produced: the result (val when the operation ran
// in this call, data as stored), the record it came from when it came from
// one (for the replay hooks), and the event to report.
type outcome struct {
	val  any
	data []byte
	rec  driver.Record
	ev   Report
}

func mismatch(stored driver.Record, validation string) bool {
	return validation != "" && stored.Validation != "" && stored.Validation != validation
}

// claimAndRun is the state machine of the package doc ("Records and the
// state machine"): claim with one conditional write, run, complete fenced
// by the lease owner token.
// f is the in-process run the claim is made for, if any (see Guard.run).
func (g *Guard) claimAndRun(ctx context.Context, f *flight, id, validation string, strict bool, op func(context.Context) (any, error)) (out outcome) {
	step, ran := "acquire", false // for a panicking Store
	defer func() {
		// A panicking Store must fail this call, not the process, and not
		// the calls sharing it. The record is left as it is.
		if v := recover(); v != nil {
			err := &StoreError{Op: step, ID: id, Err: &failure.PanicError{Value: v, Stack: debug.Stack()}}
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
			return g.existing(ctx, prev, validation, false)
		}
		// A lapsed claim found in strict mode, or a lapsed strict claim, is
		// quarantined, never taken over.
		step = "quarantine"
		out, retry := g.quarantine(ctx, prev, validation, now)
		if !retry || attempt == quarantineAttempts {
			return out
		}
	}
	if f != nil {
		f.claimed(rec.LeaseEnd())
	}
	result := OutcomeClaimed
	if prev.ID != "" {
		result = OutcomeTakenOver
	}

	att := &attachments{id: id, store: g.cfg.Store}
	octx, stop := g.opContext(ctx, f, claimed, now, rec)
	base := octx // ends with the caller's context, a reserve before its deadline, or the lease's
	octx = context.WithValue(octx, attachKey{}, att)
	var done func(error)
	if g.cfg.OnRun != nil {
		if herr := recovered(func() { octx, done = g.cfg.OnRun(octx) }); herr != nil {
			// The hook panicked before the operation started: end the
			// keep-alive and release the claim, which nothing ran under.
			extensions, _, _ := stop()
			att.close()
			step = "release"
			out := g.released(ctx, rec, false, fmt.Errorf("idempotency: Config.OnRun: %w", herr))
			out.ev.Extensions = extensions
			return out
		}
	}
	val, err := callOp(octx, op)
	if f != nil && base.Err() != nil && !errors.Is(context.Cause(base), ErrLeaseNotExtended) {
		f.callerEnded = true // before stop, which ends base
	}
	extensions, late, keepErr := stop()
	defer func() { out.ev.Extensions = extensions }()
	var hookErr error // a panic in OnRun's done: the operation's outcome stands
	if done != nil {
		if herr := recovered(func() { done(err) }); herr != nil {
			hookErr = fmt.Errorf("idempotency: Config.OnRun's done: %w", herr)
		}
	}
	attached := att.close()
	ran = true
	if err != nil {
		step = "release"
		if keepErr != nil && !errors.Is(err, ErrLeaseNotExtended) {
			err = fmt.Errorf("%w (%w)", err, keepErr) // the operation learnt it from its context
		}
		if hookErr != nil {
			err = errors.Join(err, hookErr)
		}
		if late {
			// The operation returned after the lease it relied on ended
			// (its context ended before): another worker may hold the
			// claim, or have quarantined it (strict mode), which a
			// release would clear. The claim is left as it is: a default
			// claim takes it over, a strict one quarantines it.
			return outcome{ev: Report{Outcome: OutcomeFailed, Ran: true,
				Err: fmt.Errorf("%w (it returned after its lease ended: the claim is not released)", err)}}
		}
		return g.released(ctx, rec, true, err)
	}

	data, encErr := encode(val)
	if encErr == nil && bytes.Contains(data, replacementChar) {
		// json.Marshal replaced bytes of a string that were not UTF-8
		// by U+FFFD: every delivery, this one included, gets the
		// result as stored (decoded from data), as replays read it.
		val = nil
	}
	if encErr != nil {
		// The operation ran; never run it again for want of a result. The
		// record completes without one and this delivery fails.
		data, val = nil, nil
		if _, ok := encErr.(*failure.PanicError); !ok {
			encErr = fmt.Errorf("idempotency: encode result of %s: %w", id, encErr)
		}
		result = OutcomeFailed
	}
	kept := driver.PlainForm(data) // what the store is given: data, or its seal
	if g.cfg.Sealer != nil && data != nil {
		if kept, err = g.seal(ctx, rec, data); err != nil {
			// The operation ran: the record completes, its result withheld
			// (never stored in plaintext), and this delivery fails; later
			// ones fail for good (driver.WithheldData), never replay empty.
			data, kept, val = nil, []byte(driver.WithheldData), nil
			encErr, result = fmt.Errorf("idempotency: seal result of %s: %w", id, err), OutcomeFailed
		}
	}
	if hookErr != nil {
		// The result is stored and replayed; this delivery fails, so
		// that the hook's panic is seen.
		encErr, result = errors.Join(encErr, hookErr), OutcomeFailed
	}
	step = "complete"
	rec.Status, rec.Data, rec.Attached = driver.StatusCompleted, kept, attached
	rec.ExpiresAt = g.cfg.Now().Add(g.cfg.ExpiresAfter)
	stored, err := g.complete(ctx, rec)
	if errors.Is(err, driver.ErrLeaseLost) {
		step = "acquire"
		return g.lost(ctx, rec, data, strict, val, result, encErr)
	}
	if err != nil {
		return outcome{ev: Report{Outcome: OutcomeFailed, Ran: true, Err: storeError("complete", id, err)}}
	}
	return g.completed(ctx, rec, stored, data, val, Report{Outcome: result, Ran: true, Err: encErr})
}

// completed is the outcome of a completion that gave the store rec.Data
// (data, or its seal) and stored stored as the result. When the store kept
// less than the operation returned (a result too large for it), every
// delivery, this one included, gets what it kept; a sealed result it kept
// otherwise (an earlier attempt's) is opened.
func (g *Guard) completed(ctx context.Context, rec driver.Record, stored, data []byte, val any, ev Report) outcome {
	withheld := driver.IsWithheld(rec.Data)
	if !bytes.Equal(stored, rec.Data) {
		val, withheld = nil, false
		var err error
		octx, cancel := writeContext(ctx) // as the completion's: the work is done
		data, err = driver.OpenData(octx, g.cfg.Sealer, rec.ID, stored)
		cancel()
		if err != nil {
			return outcome{ev: Report{Outcome: OutcomeFailed, Ran: true, Err: err}}
		}
	}
	kept := rec.Data
	rec.Data, rec.Attached = data, nil
	if planted.On(planted.CacheKeepsSealed) {
		rec.Data = sealedAsText(kept)
	}
	if !withheld { // a duplicate reads the record, and fails
		g.remember(rec)
	}
	return outcome{val: val, data: data, rec: rec, ev: ev}
}

// lost handles a completion that found the lease taken over: the winner's
// outcome stands if it completed (or it still runs), and this call reports
// the double run; if the record is free again, this call's result is
// recorded under a new claim.
func (g *Guard) lost(ctx context.Context, done driver.Record, data []byte, strict bool, val any, result Outcome, encErr error) outcome {
	ctx, cancel := writeContext(ctx)
	defer cancel()
	now := g.cfg.Now()
	rec := g.claim(ctx, done.ID, done.Validation, strict, now)
	prev, loaded, err := g.acquire(ctx, rec, strict, now)
	if err != nil {
		return outcome{ev: Report{Outcome: OutcomeFailed, Ran: true, Err: storeError("acquire", done.ID, errors.Join(driver.ErrLeaseLost, err))}}
	}
	if loaded {
		out := g.existing(ctx, prev, done.Validation, true)
		if out.ev.Outcome == OutcomeReplayed || out.ev.Outcome == OutcomeInProgress {
			out.ev.Outcome = planted.If(planted.LostAsClaimed, result, OutcomeDoubleRun) // another worker ran it too
		}
		return out
	}
	rec.Status, rec.Data, rec.Attached, rec.ExpiresAt = driver.StatusCompleted, done.Data, done.Attached, done.ExpiresAt
	stored, err := g.complete(ctx, rec)
	if err != nil {
		return outcome{ev: Report{Outcome: OutcomeFailed, Ran: true, Err: storeError("complete", done.ID, err)}}
	}
	return g.completed(ctx, rec, stored, data, val, Report{Outcome: result, Ran: true, Err: encErr})
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
	got, err := g.markQuarantined(ctx, prev, now)
	switch {
	case err == nil:
		err := &QuarantinedError{ID: prev.ID, Since: got.Quarantined}
		return outcome{rec: got, ev: Report{Outcome: OutcomeQuarantined, Err: err}}, false
	case !errors.Is(err, driver.ErrLeaseLost):
		return outcome{ev: Report{Outcome: OutcomeFailed, Err: storeError("quarantine", prev.ID, err)}}, false
	case got.ID != "" && (got.Status != driver.StatusInProgress || !got.Quarantined.IsZero() || mismatch(got, validation)):
		return g.existing(ctx, got, validation, false), false
	}
	return outcome{ev: Report{Outcome: OutcomeFailed, Err: storeError("quarantine", prev.ID, err)}}, true
}

// existing is the outcome of finding a record that blocked the claim. A
// sealed result is opened (see Config.Sealer); one that does not open
// fails the call.
func (g *Guard) existing(ctx context.Context, prev driver.Record, validation string, ran bool) outcome {
	if mismatch(prev, validation) {
		return outcome{ev: Report{Outcome: OutcomeMismatch, Ran: ran, Err: &PayloadMismatchError{ID: prev.ID}}}
	}
	if prev.Status == driver.StatusInProgress && !prev.Quarantined.IsZero() {
		err := &QuarantinedError{ID: prev.ID, Since: prev.Quarantined}
		return outcome{rec: prev, ev: Report{Outcome: OutcomeQuarantined, Source: "store", Ran: ran, Err: err}}
	}
	switch planted.If(planted.InProgressReplayed, driver.StatusCompleted, prev.Status) {
	case driver.StatusCompleted:
		data, err := driver.OpenData(ctx, g.cfg.Sealer, prev.ID, prev.Data)
		if planted.On(planted.NoSealerReplays) && g.cfg.Sealer == nil {
			data, err = sealedAsText(prev.Data), nil
		}
		if err != nil {
			return outcome{ev: Report{Outcome: OutcomeFailed, Ran: ran, Err: err}}
		}
		prev.Data = data
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
		if inv, ok := invocation.Deadline(ctx); ok && inv.After(d) {
			// Under package batch, whose records end a reserve before
			// the invocation: an operation that outlives its context
			// runs on until the invocation's deadline, when Lambda may
			// stop it; no other worker takes the key over before.
			lease = inv
		}
	}
	rec := driver.Record{
		ID:         id,
		Status:     driver.StatusInProgress,
		ExpiresAt:  now.Add(g.cfg.ExpiresAfter),
		LeaseUntil: lease.Add(planted.If(planted.NoSkewMargin, 0, g.cfg.SkewMargin)),
		Validation: validation,
		Owner:      rand.Text(),
	}
	if strict {
		rec.StrictLease, rec.LeaseUntil = rec.LeaseUntil, planted.If(planted.StrictLeaseReadable, rec.LeaseUntil, rec.ExpiresAt)
	}
	return rec
}

// released releases the claim rec after err (the operation's, when ran):
// OutcomeReleased, or OutcomeFailed with the release's error joined.
func (g *Guard) released(ctx context.Context, rec driver.Record, ran bool, err error) outcome {
	ev := Report{Outcome: OutcomeReleased, Ran: ran, Err: err}
	if rerr := g.release(ctx, rec.ID, rec.Owner); rerr != nil {
		ev.Outcome, ev.Err = OutcomeFailed, errors.Join(err, rerr)
	}
	return outcome{ev: ev}
}

// seal is data, the result of the claim rec, sealed by Config.Sealer for
// its completion, with a panic of the Sealer (or of the store's
// driver.DataFitter) turned into a *failure.PanicError. It is compressed
// before it is sealed only where the store would not keep it sealed
// uncompressed (driver.SealDataFor), a form older releases cannot open.
// It runs in the context of the write that follows (writeContext): the
// operation has run, and a result that can still be stored is not
// withheld because the call's context ended while it ran.
func (g *Guard) seal(ctx context.Context, rec driver.Record, data []byte) (sealed []byte, err error) {
	ctx, cancel := writeContext(ctx)
	defer cancel()
	rec.Status, rec.Data = driver.StatusCompleted, data
	if perr := recovered(func() { sealed, err = driver.SealDataFor(ctx, g.cfg.Sealer, g.cfg.Store, rec) }); perr != nil {
		return nil, perr
	}
	return sealed, err
}

// replacementChar is the escape json.Marshal writes for each byte of a
// string that is not UTF-8 (U+FFFD as such, it writes unescaped).
var replacementChar = []byte(`\ufffd`)

// encode is the JSON encoding of val, with a panic in a MarshalJSON method
// turned into a *failure.PanicError.
func encode(val any) (data []byte, err error) {
	if perr := recovered(func() { data, err = json.Marshal(val) }); perr != nil {
		return nil, perr
	}
	return data, err
}

// recovered runs f, turning a panic into a *failure.PanicError: a hook of
// Config, the operation, the Sealer, a MarshalJSON method, the user's
// selectors, WithCheck and OnReplay.
func recovered(f func()) (err error) {
	defer func() {
		if v := recover(); v != nil {
			err = &failure.PanicError{Value: v, Stack: debug.Stack()}
		}
	}()
	f()
	return nil
}

// callOp runs op, turning a panic into a *failure.PanicError.
func callOp(ctx context.Context, op func(context.Context) (any, error)) (val any, err error) {
	if perr := recovered(func() { val, err = op(ctx) }); perr != nil {
		return nil, perr
	}
	return val, err
}

// sealedAsText is a stored result as a reader that takes it for plain
// gets it: a sealed one as a JSON string of its sealed text (the form
// earlier builds stored). Only planted defects call it.
func sealedAsText(data []byte) []byte {
	if !driver.IsSealed(data) || data[0] == '"' {
		return data
	}
	return strconv.AppendQuote(nil, string(data))
}
