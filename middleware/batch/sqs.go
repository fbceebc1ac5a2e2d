package batch

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"math/rand/v2"
	"runtime/debug"
	"strings"
	"time"

	"github.com/aws/aws-lambda-go/events"

	"github.com/sqsonce/sqsonce/internal/planted"
)

// SQS returns a Lambda handler for SQS events that runs fn once per record
// and reports the records that failed as a partial batch response. The event
// source mapping must have ReportBatchItemFailures turned on; without it
// Lambda ignores the response and deletes every record of the batch, the
// failed ones included.
//
// Every failure, whether fn returned an error, panicked, or the record was
// not started (see [ErrDeadline], [ErrGroupFailed] and context
// cancellation), is one entry in BatchItemFailures, in the event's record
// order. BatchItemFailures is never nil, so an all-success batch encodes as
// {"batchItemFailures":[]}. The handler returns an error only when every
// record of the batch failed and not every failure is a retry ([IsRetry]):
// a [*FullBatchFailureError] (see [Options.NoFullBatchError] and
// [Options.AlwaysFullBatchError]).
//
// The T results of fn are discarded: fn is generic so that typed record
// functions, such as the idempotency package's, need no adapter.
//
// SQS panics if fn is nil or opts is invalid (see [Options.Validate]).
//
// The returned handler is safe for concurrent use.
func SQS[T any](fn func(context.Context, events.SQSMessage) (T, error), opts Options) func(context.Context, events.SQSEvent) (events.SQSEventResponse, error) {
	return newSQS(fn, opts, time.Now)
}

// newSQS is SQS with the clock as a seam for tests.
func newSQS[T any](fn func(context.Context, events.SQSMessage) (T, error), opts Options, now func() time.Time) func(context.Context, events.SQSEvent) (events.SQSEventResponse, error) {
	return newProcessor(fn, opts, now, rand.Float64).handle
}

// newProcessor is SQS with the clock and the random source of pacing's
// jitter as seams for tests.
func newProcessor[T any](fn func(context.Context, events.SQSMessage) (T, error), opts Options, now func() time.Time, rnd func() float64) *processor {
	if fn == nil {
		panic("batch: SQS: nil record function")
	}
	if err := opts.Validate(); err != nil {
		panic(err)
	}
	opts = opts.withDefaults()
	p := &processor{
		fn:   func(ctx context.Context, msg events.SQSMessage) error { _, err := fn(ctx, msg); return err },
		opts: opts,
		cfg:  newSettings(opts.Concurrency, opts.MinRemaining, opts.Reserve, opts.Logger, fullBatchModeOf(opts.NoFullBatchError, opts.AlwaysFullBatchError)),
		now:  now,
		rand: rnd,
		kind: kind[events.SQSMessage]{
			ident: func(msg *events.SQSMessage) []slog.Attr { return []slog.Attr{slog.String("messageId", msg.MessageId)} },
			hook:  "OnRecord",
		},
	}
	if opts.OnRecord != nil {
		p.kind.onRecord = func(ctx context.Context, msg *events.SQSMessage, err error) { opts.OnRecord(ctx, *msg, err) }
	}
	return p
}

// processor holds what SQS was built with; it is never modified.
type processor struct {
	fn   func(context.Context, events.SQSMessage) error
	opts Options
	cfg  settings
	now  func() time.Time
	rand func() float64 // uniform in [0, 1), for pacing's jitter
	kind kind[events.SQSMessage]
}

// handle is the Lambda handler.
func (p *processor) handle(ctx context.Context, ev events.SQSEvent) (events.SQSEventResponse, error) {
	recs := ev.Records
	if len(recs) == 0 {
		return events.SQSEventResponse{BatchItemFailures: []events.SQSBatchItemFailure{}}, nil
	}
	r := &sqsRun{
		run: newRun(ctx, &p.cfg, &p.kind, p.fn, p.now, recs, planLanes(len(recs), fifoGroup(recs))),
		p:   p,
	}
	defer r.cancel()
	stop := r.keepVisible()
	r.execute()
	stop()
	r.moveToDeadLetter()

	failed := 0
	for i, err := range r.errs {
		if err != nil && !r.isMoved(i) {
			failed++
		}
	}
	out := make([]events.SQSBatchItemFailure, 0, failed)
	for i, err := range r.errs {
		if err != nil && !r.isMoved(i) {
			out = append(out, events.SQSBatchItemFailure{ItemIdentifier: recs[i].MessageId})
		}
	}
	if failed > 0 {
		r.pace()
	}
	return events.SQSEventResponse{BatchItemFailures: out}, r.fullFailure(failed)
}

// sqsRun is one invocation of an SQS handler: the engine's run, and what
// the handler does after it (moves to the dead-letter queue, pacing).
type sqsRun struct {
	*run[events.SQSMessage]
	p     *processor
	moved []bool // whether the message was sent to the dead-letter queue; nil: none was
}

// isMoved reports whether record i's message was sent to the dead-letter
// queue.
func (r *sqsRun) isMoved(i int) bool {
	return r.moved != nil && r.moved[i] || planted.On(planted.LoggedAsSuccess) && errors.As(r.errs[i], new(LoggedError))
}

// callEach calls call on items, and returns one error per item. A panic
// in call, or a result of the wrong length, fails every item: which were
// done is unknown, so none is reported done. name and noun name call and
// the items in that error.
func callEach[T any](items []T, call func([]T) []error, name, noun string) (errs []error) {
	all := func(err error) []error {
		errs := make([]error, len(items))
		for i := range errs {
			errs[i] = err
		}
		return errs
	}
	defer func() {
		if v := recover(); v != nil {
			errs = all(&PanicError{Value: v, Stack: debug.Stack()})
		}
	}()
	errs = call(items)
	switch {
	case errs == nil:
		return make([]error, len(items))
	case len(errs) != len(items):
		return all(fmt.Errorf("batch: %s returned %d errors for %d %s", name, len(errs), len(items), noun))
	}
	return errs
}

// hook runs the hook named name for the message messageID, logging a
// panic inside it instead of letting it out.
func (r *sqsRun) hook(name, messageID string, fn func()) {
	defer func() {
		if v := recover(); v != nil {
			r.log.LogAttrs(r.parent, slog.LevelError, "batch: "+name+" panicked",
				slog.String("messageId", messageID),
				slog.Any("error", &PanicError{Value: v}),
				slog.String("stack", string(debug.Stack())))
		}
	}()
	fn()
}

// fifoGroup returns the group of each record for planLanes: a FIFO queue's
// records are grouped by queue and message group; a standard queue's are
// not.
func fifoGroup(recs []events.SQSMessage) func(i int) (messageGroup, bool) {
	return func(i int) (messageGroup, bool) {
		msg := &recs[i]
		if !isFIFO(msg) {
			return messageGroup{}, false
		}
		return messageGroup{msg.EventSourceARN, msg.Attributes["MessageGroupId"]}, true
	}
}

// messageGroup identifies a FIFO message group.
type messageGroup struct {
	queue, group string
}

// isFIFO reports whether msg comes from a FIFO queue.
func isFIFO(msg *events.SQSMessage) bool {
	return strings.HasSuffix(msg.EventSourceARN, ".fifo")
}
