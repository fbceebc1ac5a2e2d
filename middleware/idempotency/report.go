package idempotency

import (
	"context"
	"errors"
	"log/slog"
	"time"

	"github.com/sqsonce/sqsonce/middleware/failure"
)

// Outcome names what the guard did with one call. Each call has one,
// passed to Config.OnOutcome in a [Report] and logged in one line at its
// level (below); a slog handler filters the lines.
type Outcome string

// The outcomes, with the level of each.
const (
	// OutcomeClaimed (DEBUG): the key was free, the operation ran and its
	// result was stored.
	OutcomeClaimed Outcome = "claimed"
	// OutcomeTakenOver (INFO): an expired record or a lapsed lease was
	// taken over, the operation ran and its result was stored.
	OutcomeTakenOver Outcome = "taken_over"
	// OutcomeReplayed (INFO): the stored result was returned without
	// running the operation.
	OutcomeReplayed Outcome = "replayed"
	// OutcomeInProgress (WARN): another worker holds a live lease; nothing
	// ran, and the input is retried later.
	OutcomeInProgress Outcome = "in_progress"
	// OutcomeMismatch (ERROR): the key was reused with another payload
	// (see [WithPayload]); nothing ran.
	OutcomeMismatch Outcome = "mismatch"
	// OutcomeReleased (ERROR): the operation failed or panicked, or
	// Config.OnRun panicked before it ran (Ran false), and its claim was
	// released, so that a later delivery can run it again.
	OutcomeReleased Outcome = "released"
	// OutcomeFailed (ERROR): a key, body or store error; a result that
	// could not be encoded, or a panic in OnRun's done (its result stored);
	// or an operation that failed after its lease ended, its claim not
	// released (another worker may hold or have quarantined it). The input
	// is retried.
	OutcomeFailed Outcome = "failed"
	// OutcomeDoubleRun (ERROR): the operation ran in this call after its
	// lease had passed, and another worker took the key over and ran it
	// too: the one outcome in which the operation ran twice.
	OutcomeDoubleRun Outcome = "double_run"
	// OutcomeQuarantined (ERROR): the key's record is quarantined (see
	// [Config.Strict]); nothing ran.
	OutcomeQuarantined Outcome = "quarantined"
)

// level is the level at which the guard logs an outcome (see Outcome).
func level(o Outcome) slog.Level {
	switch o {
	case OutcomeClaimed:
		return slog.LevelDebug
	case OutcomeTakenOver, OutcomeReplayed:
		return slog.LevelInfo
	case OutcomeInProgress:
		return slog.LevelWarn
	}
	return slog.LevelError
}

// Report describes one call's outcome.
type Report struct {
	Outcome  Outcome       // what happened: one of the Outcome constants
	ID       string        // the record id; empty when no key could be made
	InputID  string        // the input's id (see WithInputID); empty for Do
	Tenant   string        // the invocation's TenantID (lambdacontext), scoping the record id unless Config.Tenancy is TenancyOff
	Source   string        // where the outcome came from when not from this call's own claim: "store", "cache" or "shared" (another call's run in this process)
	Ran      bool          // whether the operation was run by this call (set for double_run too, whose result was discarded)
	Duration time.Duration // from the call's start to its outcome
	Err      error         // the error returned to the caller, if any

	// Extensions is how many times the guard extended the claim's lease
	// while the operation ran (see [Config.KeepAliveEvery]); logged when
	// not zero.
	Extensions int
}

// fail reports a call that failed before anything was claimed, with err
// (a *KeyError or *BodyError), and returns the error the call returns.
func (g *Guard) fail(ctx context.Context, c call, err error) error {
	g.report(ctx, Report{Outcome: OutcomeFailed, InputID: c.inputID, Tenant: reportedTenant(ctx), Err: err})
	return &reported{err}
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
		if ev.Extensions > 0 {
			attrs = append(attrs, slog.Int("extensions", ev.Extensions))
		}
		if id := requestIDOf(ctx); id != "" {
			attrs = append(attrs, slog.String("request_id", id))
		}
		if ev.Tenant != "" {
			attrs = append(attrs, slog.String("tenant", ev.Tenant))
		}
		if ev.Err != nil {
			attrs = append(attrs, slog.String("error", ev.Err.Error()))
			if pe, ok := errors.AsType[*failure.PanicError](ev.Err); ok {
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
// [Config.OnOutcome]. It is a failure.LoggedError: its Logged method tells
// package batch, which does not import this package, not to log it a
// second time (asserted in contracts_test.go).
type reported struct{ err error }

func (e *reported) Error() string { return e.err.Error() }

func (e *reported) Unwrap() error { return e.err }

// Logged reports that the error was logged already.
func (*reported) Logged() bool { return true }
