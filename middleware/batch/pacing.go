package batch

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"strconv"
	"time"

	"github.com/aws/aws-lambda-go/events"

	"github.com/sqsonce/sqsonce/middleware/failure"
)

// Defaults for the zero values of [Pacing], and SQS's limit.
const (
	// DefaultPacingBase is the wait before a failed record's message comes
	// back after its first receive; each further receive doubles it.
	DefaultPacingBase = 10 * time.Second

	// DefaultPacingCap is the longest wait the doubling reaches: 10 s, 20 s,
	// 40 s … 640 s, then 15 minutes from the eighth receive on.
	DefaultPacingCap = 15 * time.Minute

	// DefaultPacingJitter is the share of each wait drawn at random.
	DefaultPacingJitter = 0.5

	// MaxVisibilityTimeout is the longest visibility timeout SQS accepts.
	MaxVisibilityTimeout = 12 * time.Hour
)

// pacingTimeout bounds the visibility changes of an invocation whose context
// is already done when its records have finished, and is the time they are
// taken to need when the context has no deadline.
const pacingTimeout = 5 * time.Second

// Why a change was not asked for: they reach [Pacing.OnChange].
var (
	// ErrReserveReached: the records' deadline had passed (see
	// [Options.Reserve]) when the change's turn came.
	ErrReserveReached = errors.New("batch: not done: the reserve before the invocation's deadline was reached")

	// ErrVisibilityLimit: 12 hours had passed since the message was
	// received, the most SQS lets a message stay invisible.
	ErrVisibilityLimit = errors.New("batch: visibility not changed: 12 hours have passed since the message was received")
)

// VisibilityChange asks for one received message to become visible again
// (to be delivered again) Timeout from now, instead of when the queue's
// visibility timeout would make it so.
type VisibilityChange struct {
	MessageID      string        // the record's messageId, for logs and hooks
	ReceiptHandle  string        // the record's receiptHandle: what SQS changes
	EventSourceARN string        // the record's queue, arn:{partition}:sqs:{region}:{account}:{name}
	Timeout        time.Duration // from now; never more than SQS accepts (see Pacing)
}

// VisibilityChanger changes the visibility of received messages: the
// contract of both [Pacing] (a failed record's message comes back at a
// chosen moment) and [KeepVisible] (a message stays invisible while its
// record runs). Package sqsvisibility implements it on the SQS API
// (ChangeMessageVisibilityBatch); this package imports no AWS SDK.
type VisibilityChanger interface {
	// ChangeVisibility applies changes. Each applied change makes its
	// message invisible until its Timeout from the call (at least: an
	// implementation may round it up, never down), replacing the timeout
	// the message had, whether the queue's or a change's, as SQS's
	// ChangeMessageVisibility does; a Timeout of 0 makes it visible at
	// once. It returns nil when every change was applied; otherwise a
	// slice of len(changes) whose element i is the error of changes[i],
	// nil for a change applied. Invocations running at once in one process
	// share it, so it must be safe for concurrent use. It must not keep
	// changes after it returns.
	ChangeVisibility(ctx context.Context, changes []VisibilityChange) []error
}

// Pacing makes the failed records of a batch come back when a new attempt
// can succeed, rather than after the queue's visibility timeout. After every
// record of an invocation has finished, and before the handler returns, each
// failed record gets one [VisibilityChange], all in one call of Changer:
//
//   - A record whose key is in progress elsewhere (its error wraps a
//     [RetryAtError] with a non-zero RetryAt, as
//     idempotency.InProgressError does: the holder's lease end) comes back
//     just after that moment: Timeout is RetryAt minus now, plus a random
//     share of Jitter × Base.
//   - A record that ran and failed for any other reason backs off by its
//     message's ApproximateReceiveCount n: min(Cap, Base × 2^(n−1)), of
//     which the last Jitter share is drawn at random.
//   - A record that was not started ([ErrDeadline], [ErrGroupFailed], or the
//     context canceled) is made visible at once (Timeout 0). In a FIFO
//     queue it cannot overtake its group's failed record.
//
// Records that succeeded are left alone: Lambda deletes them.
//
// No change asks for more than SQS accepts, [MaxVisibilityTimeout] since
// the message was received: a timeout is cut to 12 hours since its
// ApproximateFirstReceiveTimestamp (its SentTimestamp without it; the
// invocation's start without either), counted to the latest moment the call
// can be made, less a second, in whole seconds. A message first received
// more than 12 hours ago gets no change but one to 0 (its record reaches
// OnChange with [ErrVisibilityLimit]).
//
// The changes are made by the records' deadline ([Options.Reserve]): a call
// still running then is stopped and its changes fail; when the moment has
// passed none is asked for (each reaches OnChange with [ErrReserveReached]).
// A visibility change never changes a record's outcome: a failed one is
// logged (one line per invocation) and passed to OnChange, and its record
// comes back after the queue's visibility timeout.
type Pacing struct {
	// Changer applies the visibility changes. Nil turns pacing off.
	Changer VisibilityChanger

	// Base is the backoff after a message's first receive. Default
	// [DefaultPacingBase]; negative is invalid.
	Base time.Duration

	// Cap bounds the backoff. Default [DefaultPacingCap]; it must not be
	// below Base nor above [MaxVisibilityTimeout].
	Cap time.Duration

	// Jitter is the share of each wait drawn at random, in (0, 1]: a backoff
	// w becomes a uniform draw in [w × (1−Jitter), w], and a record in
	// progress elsewhere comes back up to Jitter × Base after the holder's
	// lease end. Default [DefaultPacingJitter]; for practically none, set a
	// tiny positive value such as 1e-9.
	Jitter float64

	// OnChange, if set, is called once per change after Changer returned,
	// with the change's error (nil when it was applied), or when the change
	// was not asked for, with [ErrReserveReached] or [ErrVisibilityLimit]:
	// a hook for metrics.
	// It must be safe for concurrent use; a panic inside it is recovered
	// and logged.
	OnChange func(ctx context.Context, change VisibilityChange, err error)
}

func (p Pacing) validate() error {
	var errs []error
	if p.Base < 0 {
		errs = append(errs, fmt.Errorf("batch: Pacing.Base must not be negative, got %v", p.Base))
	}
	if p.Cap < 0 || p.Cap > MaxVisibilityTimeout {
		errs = append(errs, fmt.Errorf("batch: Pacing.Cap must be between 0 and %v, got %v", MaxVisibilityTimeout, p.Cap))
	}
	if p.Jitter < 0 || p.Jitter > 1 {
		errs = append(errs, fmt.Errorf("batch: Pacing.Jitter must be between 0 and 1, got %v", p.Jitter))
	}
	if d := p.withDefaults(); len(errs) == 0 && d.Base > d.Cap {
		errs = append(errs, fmt.Errorf("batch: Pacing.Base %v is above Pacing.Cap %v", d.Base, d.Cap))
	}
	return errors.Join(errs...)
}

func (p Pacing) withDefaults() Pacing {
	if p.Base == 0 {
		p.Base = DefaultPacingBase
	}
	if p.Cap == 0 {
		p.Cap = DefaultPacingCap
	}
	if p.Jitter == 0 {
		p.Jitter = DefaultPacingJitter
	}
	return p
}

// RetryAtError is [failure.RetryAtError]: an error that tells when a new
// attempt of its record can succeed; [Pacing] has the message delivered
// again just after RetryAt, unless RetryAt is the zero time.
type RetryAtError = failure.RetryAtError

// timeout is the visibility timeout of a failed record, as of now; rnd
// draws from [0, 1).
func (p Pacing) timeout(msg *events.SQSMessage, err error, started bool, now time.Time, rnd func() float64) time.Duration {
	if !started {
		return 0
	}
	var d time.Duration
	if at := retryAt(err); !at.IsZero() {
		// Capped before the jitter is added: Sub saturates for a RetryAt
		// far ahead (a lease kept for good), and the sum would overflow.
		d = min(max(at.Sub(now), 0), MaxVisibilityTimeout) + time.Duration(rnd()*p.Jitter*float64(p.Base))
	} else {
		d = p.backoff(receiveCount(msg))
		d -= time.Duration(rnd() * p.Jitter * float64(d))
	}
	return min(max(d, 0), MaxVisibilityTimeout)
}

// retryAt is the RetryAt of err's RetryAtError, if any, or the zero time,
// also when that method of the record function's error panics: the record
// then backs off as any other failure.
func retryAt(err error) time.Time {
	return guarded(time.Time{}, func() time.Time {
		if ra, ok := errors.AsType[RetryAtError](err); ok {
			return ra.RetryAt()
		}
		return time.Time{}
	})
}

// backoff is min(Cap, Base × 2^(n−1)).
func (p Pacing) backoff(n int) time.Duration {
	d := p.Base
	for i := 1; i < n && d < p.Cap; i++ {
		d *= 2
	}
	return min(d, p.Cap)
}

// receiveCount is the message's ApproximateReceiveCount, at least 1.
func receiveCount(msg *events.SQSMessage) int {
	n, err := strconv.Atoi(msg.Attributes["ApproximateReceiveCount"])
	if err != nil || n < 1 {
		return 1
	}
	return n
}

// pace changes the visibility of the failed records, if pacing is on, by
// the records' deadline (see [Options.Reserve]).
func (r *sqsRun) pace() {
	pc := r.p.opts.Pacing
	if pc.Changer == nil {
		return
	}
	ctx, cancel, callBy := r.tailContext()
	defer cancel()
	now := r.p.now()
	var changes []VisibilityChange
	var beyond []VisibilityChange // past SQS's limit: not asked for
	for i, err := range r.errs {
		if err == nil || r.isMoved(i) {
			continue
		}
		msg := &r.recs[i]
		c := VisibilityChange{
			MessageID:      msg.MessageId,
			ReceiptHandle:  msg.ReceiptHandle,
			EventSourceARN: msg.EventSourceARN,
			Timeout:        pc.timeout(msg, err, r.started[i], now, r.p.rand),
		}
		if limit := visibilityLimit(msg, r.start, callBy); c.Timeout > 0 && c.Timeout > limit {
			if limit <= 0 {
				beyond = append(beyond, c)
				continue
			}
			c.Timeout = limit
		}
		changes = append(changes, c)
	}
	if len(beyond) > 0 {
		r.log.LogAttrs(r.parent, slog.LevelWarn, "batch: visibility changes not asked for: 12 hours have passed since their messages were received; they come back after the queue's visibility timeout",
			slog.Int("skipped", len(beyond)), slog.String("messageId", beyond[0].MessageID))
		r.changed(beyond, nil, ErrVisibilityLimit)
	}
	if len(changes) == 0 {
		return
	}
	if ctx == nil {
		r.log.LogAttrs(r.parent, slog.LevelWarn, "batch: pacing skipped: the reserve before the invocation's deadline was reached; the failed records come back after the queue's visibility timeout",
			slog.Int("changes", len(changes)), slog.Duration("reserve", r.p.opts.Reserve))
		r.changed(changes, nil, ErrReserveReached)
		return
	}
	errs := callEach(changes, func(c []VisibilityChange) []error { return pc.Changer.ChangeVisibility(ctx, c) },
		"VisibilityChanger", "changes")
	failed, first := 0, -1
	for i, err := range errs {
		if err != nil {
			if failed++; first < 0 {
				first = i
			}
		}
	}
	switch {
	case failed > 0 && ctx.Err() != nil && r.hasDeadline:
		r.log.LogAttrs(r.parent, slog.LevelWarn, "batch: pacing cut short: the reserve before the invocation's deadline was reached; the messages whose change failed come back after the queue's visibility timeout",
			slog.Int("failed", failed), slog.Int("changes", len(changes)), slog.Duration("reserve", r.p.opts.Reserve),
			slog.String("messageId", changes[first].MessageID), slog.Any("error", errs[first]))
	case failed > 0:
		r.log.LogAttrs(r.parent, slog.LevelWarn, "batch: visibility changes failed; their messages come back after the queue's visibility timeout",
			slog.Int("failed", failed), slog.Int("changes", len(changes)),
			slog.String("messageId", changes[first].MessageID), slog.Any("error", errs[first]))
	}
	r.changed(changes, errs, nil)
}

// limitMargin is taken off the time left under SQS's 12-hour limit for
// the clocks of SQS and this host to disagree.
const limitMargin = time.Second

// visibilityLimit is the longest visibility timeout SQS can accept for msg
// in a call made no later than callBy: 12 hours since the message was
// received, less the time elapsed by then, in whole seconds (sqsvisibility
// rounds up). The receive is taken to be the message's
// ApproximateFirstReceiveTimestamp, which is never later than the receive
// of this delivery (equal to it on the first), so the limit is never above
// SQS's; without it, its SentTimestamp, earlier still; without either, the
// invocation's start (a record from a test or another source).
func visibilityLimit(msg *events.SQSMessage, start, callBy time.Time) time.Duration {
	received := start
	for _, attr := range []string{"ApproximateFirstReceiveTimestamp", "SentTimestamp"} {
		if ms, err := strconv.ParseInt(msg.Attributes[attr], 10, 64); err == nil && ms > 0 {
			received = time.UnixMilli(ms)
			break
		}
	}
	left := MaxVisibilityTimeout - callBy.Sub(received) - limitMargin
	return left.Truncate(time.Second)
}

// changed passes each change and its outcome to OnChange, if set: errs[i],
// or err for all when errs is nil.
func (r *sqsRun) changed(changes []VisibilityChange, errs []error, err error) {
	if r.p.opts.Pacing.OnChange == nil {
		return
	}
	for i := range changes {
		e := err
		if errs != nil {
			e = errs[i]
		}
		r.onChange(changes[i], e)
	}
}

// onChange calls the OnChange hook, containing a panic inside it.
func (r *sqsRun) onChange(c VisibilityChange, err error) {
	r.hook("Pacing.OnChange", c.MessageID, func() { r.p.opts.Pacing.OnChange(r.parent, c, err) })
}
