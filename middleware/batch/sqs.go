package batch

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"math/rand/v2"
	"runtime/debug"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/aws/aws-lambda-go/events"
)

// The reasons a record is reported failed without being started. They reach
// [Options.OnRecord] and the log; a record not started because the context
// was canceled gets an error that wraps [context.Cause] instead.
var (
	// ErrDeadline: less than [Options.MinRemaining] was left before the
	// context's deadline when the record's turn came.
	ErrDeadline = errors.New("batch: record not started: too little time left before the deadline")

	// ErrGroupFailed: an earlier record of the same FIFO message group failed
	// or was not started in this batch, so this one must not run before it.
	ErrGroupFailed = errors.New("batch: record not started: an earlier record of its message group failed")
)

// FullBatchFailureError is the error a handler returns when every record of
// a non-empty batch failed, unless [Options.NoFullBatchError] is set: Lambda
// then counts the invocation as failed (its Errors metric and alarms see
// it, and its event source backs off) and delivers every record again, as
// it would for the failures listed. The response returned with it still
// lists every record, for callers that read it despite the error. Powertools
// for AWS Lambda throws FullBatchFailureError (TypeScript) or
// BatchProcessingError (Python) in the same case.
type FullBatchFailureError struct {
	// Errs holds each record's error, in event order.
	Errs []error
}

// Error names the number of records and the first one's error.
func (e *FullBatchFailureError) Error() string {
	if len(e.Errs) == 0 {
		return "batch: every record failed"
	}
	return fmt.Sprintf("batch: all %d records failed; the first: %v", len(e.Errs), e.Errs[0])
}

// Unwrap returns the records' errors, for [errors.Is] and [errors.As].
func (e *FullBatchFailureError) Unwrap() []error { return e.Errs }

// errNotStarted begins the error of a record not started because the
// context was canceled.
var errNotStarted = errors.New("batch: record not started")

// LoggedError is an error that its record function logged already, or
// deliberately did not log: the handler does not log a failure whose error
// wraps one whose Logged reports true. The errors package idempotency's
// guard returns are LoggedErrors.
type LoggedError interface {
	error
	Logged() bool
}

// errIncomplete marks a record whose run never returned: the goroutine
// running it exited (runtime.Goexit) before the record function returned.
var errIncomplete = errors.New("batch: record did not complete")

// PanicError is the error a record fails with when its function panics.
type PanicError struct {
	// Value is the value passed to panic.
	Value any
	// Stack is the panicking goroutine's stack, as [debug.Stack] formats it.
	Stack []byte
}

// Error returns the panic value; the stack is logged separately.
func (e *PanicError) Error() string {
	return fmt.Sprintf("batch: record panicked: %v", e.Value)
}

// Unwrap returns the panic value if it is an error, so that [errors.Is] and
// [errors.As] see through the panic.
func (e *PanicError) Unwrap() error {
	err, _ := e.Value.(error)
	return err
}

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
// record of the batch failed: a [*FullBatchFailureError], unless
// [Options.NoFullBatchError] is set.
//
// The T results of fn are discarded: fn is generic only so that typed
// record functions, such as those built by the idempotency package, can be
// passed without an adapter.
//
// SQS panics if fn is nil or opts is invalid (see [Options.Validate]), as
// [regexp.MustCompile] does: a configuration error is caught when the
// handler is built at start-up, never per invocation.
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
func newProcessor[T any](fn func(context.Context, events.SQSMessage) (T, error), opts Options, now func() time.Time, rnd func() float64) *processor[T] {
	if fn == nil {
		panic("batch: SQS: nil record function")
	}
	if err := opts.Validate(); err != nil {
		panic(err)
	}
	return &processor[T]{fn: fn, opts: opts.withDefaults(), now: now, rand: rnd}
}

// processor holds what SQS was built with; it is never modified.
type processor[T any] struct {
	fn   func(context.Context, events.SQSMessage) (T, error)
	opts Options
	now  func() time.Time
	rand func() float64 // uniform in [0, 1), for pacing's jitter
}

// handle is the Lambda handler.
func (p *processor[T]) handle(ctx context.Context, ev events.SQSEvent) (events.SQSEventResponse, error) {
	recs := ev.Records
	if len(recs) == 0 {
		return events.SQSEventResponse{BatchItemFailures: []events.SQSBatchItemFailure{}}, nil
	}

	r := &run[T]{
		p:       p,
		ctx:     ctx,
		parent:  ctx,
		recs:    recs,
		errs:    make([]error, len(recs)),
		started: make([]bool, len(recs)),
		log:     p.opts.Logger,
		start:   p.now(),
	}
	if r.log == nil {
		r.log = slog.Default()
	}
	for i := range r.errs {
		r.errs[i] = errIncomplete
	}
	if deadline, ok := ctx.Deadline(); ok {
		// The records, and the handler's own calls after them, end Reserve
		// before the invocation's deadline: the response must reach Lambda
		// before it.
		r.deadline, r.hasDeadline = deadline.Add(-p.opts.Reserve), true
		var cancel context.CancelFunc
		r.ctx, cancel = context.WithDeadline(ctx, r.deadline)
		defer cancel()
	}
	r.lanes = planLanes(recs)

	n := r.lanes.count()
	if workers := min(p.opts.Concurrency, n); workers == 1 {
		for k := range n {
			r.lane(k)
		}
	} else {
		var next atomic.Int64
		var wg sync.WaitGroup
		for range workers {
			wg.Go(func() {
				for {
					k := int(next.Add(1) - 1)
					if k >= n {
						return
					}
					r.lane(k)
				}
			})
		}
		wg.Wait()
	}

	for i, err := range r.errs {
		if err == errIncomplete {
			r.finish(i, err)
		}
	}
	r.moved = make([]bool, len(recs))
	r.moveToDeadLetter()
	failed := 0
	for i, err := range r.errs {
		if err != nil && !r.moved[i] {
			failed++
		}
	}
	out := make([]events.SQSBatchItemFailure, 0, failed)
	for i, err := range r.errs {
		if err != nil && !r.moved[i] {
			out = append(out, events.SQSBatchItemFailure{ItemIdentifier: recs[i].MessageId})
		}
	}
	if failed > 0 {
		r.pace()
	}
	resp := events.SQSEventResponse{BatchItemFailures: out}
	if failed == len(recs) && !p.opts.NoFullBatchError {
		return resp, &FullBatchFailureError{Errs: slices.Clone(r.errs)}
	}
	return resp, nil
}

// run is the state of one invocation. errs[i] and started[i] are written
// only by the goroutine running record i's lane, and read after all lanes
// are done.
type run[T any] struct {
	p           *processor[T]
	ctx         context.Context // the records': parent, ending at deadline
	parent      context.Context // the invocation's
	recs        []events.SQSMessage
	errs        []error
	started     []bool // whether the record function was called
	moved       []bool // whether the message was sent to the dead-letter queue
	log         *slog.Logger
	lanes       lanes
	start       time.Time // when the invocation began, by p.now
	deadline    time.Time // the records' deadline: the invocation's minus Reserve
	hasDeadline bool
}

// lane runs the records of lane k one after another, in event order. After
// a record fails, the rest of the lane are reported failed without starting.
func (r *run[T]) lane(k int) {
	lo, hi := r.lanes.bounds(k)
	failed := false
	for j := lo; j < hi; j++ {
		i := r.lanes.record(j)
		var err error
		if failed {
			err = ErrGroupFailed
		} else if err = r.mayStart(); err == nil {
			r.started[i] = true
			err = r.call(i)
		}
		r.finish(i, err)
		failed = err != nil
	}
}

// mayStart returns why a record must not start now, or nil.
func (r *run[T]) mayStart() error {
	if r.hasDeadline && r.deadline.Sub(r.p.now()) < r.p.opts.MinRemaining {
		return ErrDeadline
	}
	if r.ctx.Err() != nil {
		return fmt.Errorf("%w: %w", errNotStarted, context.Cause(r.ctx))
	}
	return nil
}

// call runs the record function on record i, turning a panic into a
// *PanicError.
func (r *run[T]) call(i int) (err error) {
	defer func() {
		if v := recover(); v != nil {
			err = &PanicError{Value: v, Stack: debug.Stack()}
		}
	}()
	_, err = r.p.fn(r.ctx, r.recs[i])
	return err
}

// finish records the outcome of record i, logs a failure and calls OnRecord.
func (r *run[T]) finish(i int, err error) {
	r.errs[i] = err
	msg := &r.recs[i]
	if err != nil {
		r.logFailure(msg, err)
	}
	if r.p.opts.OnRecord != nil {
		r.onRecord(msg, err)
	}
}

// logFailure logs the failure of msg in one line: at WARN for a record not
// started, at ERROR (with the stack after a panic) for one that failed;
// nothing for an error the record function logged itself (see [Options]).
func (r *run[T]) logFailure(msg *events.SQSMessage, err error) {
	if l, ok := errors.AsType[LoggedError](err); ok && l.Logged() {
		return
	}
	switch pe, panicked := errors.AsType[*PanicError](err); {
	case panicked:
		r.log.LogAttrs(r.ctx, slog.LevelError, "batch: record panicked",
			slog.String("messageId", msg.MessageId),
			slog.Any("error", err),
			slog.String("stack", string(pe.Stack)))
	case errors.Is(err, ErrDeadline) || errors.Is(err, ErrGroupFailed) || errors.Is(err, errNotStarted):
		r.log.LogAttrs(r.ctx, slog.LevelWarn, "batch: record not started",
			slog.String("messageId", msg.MessageId),
			slog.Any("error", err))
	default:
		r.log.LogAttrs(r.ctx, slog.LevelError, "batch: record failed",
			slog.String("messageId", msg.MessageId),
			slog.Any("error", err))
	}
}

// onRecord calls the OnRecord hook, containing a panic inside it.
func (r *run[T]) onRecord(msg *events.SQSMessage, err error) {
	defer func() {
		if v := recover(); v != nil {
			r.log.LogAttrs(r.ctx, slog.LevelError, "batch: OnRecord panicked",
				slog.String("messageId", msg.MessageId),
				slog.Any("error", &PanicError{Value: v}),
				slog.String("stack", string(debug.Stack())))
		}
	}()
	r.p.opts.OnRecord(r.ctx, *msg, err)
}

// lanes partitions the records of an event into lanes: the records of one
// lane run one after another, in event order, and lanes run concurrently.
// A record of a standard queue is a lane by itself; the records of a FIFO
// queue's message group form one lane.
type lanes struct {
	n int
	// order lists record indices lane after lane; lane k is
	// order[start[k]:start[k+1]]. Both are nil when every lane is a single
	// record, lane k being record k.
	order []int
	start []int
}

// fifoGroup identifies a FIFO message group.
type fifoGroup struct {
	queue, group string
}

// isFIFO reports whether msg comes from a FIFO queue.
func isFIFO(msg *events.SQSMessage) bool {
	return strings.HasSuffix(msg.EventSourceARN, ".fifo")
}

// planLanes partitions recs into lanes, numbered in the order of their first
// record.
func planLanes(recs []events.SQSMessage) lanes {
	fifo := false
	for i := range recs {
		if isFIFO(&recs[i]) {
			fifo = true
			break
		}
	}
	if !fifo {
		return lanes{n: len(recs)}
	}

	laneOf := make([]int, len(recs))
	groups := make(map[fifoGroup]int)
	var size []int
	for i := range recs {
		msg := &recs[i]
		k := len(size)
		if isFIFO(msg) {
			g := fifoGroup{msg.EventSourceARN, msg.Attributes["MessageGroupId"]}
			if existing, ok := groups[g]; ok {
				k = existing
			} else {
				groups[g] = k
			}
		}
		if k == len(size) {
			size = append(size, 0)
		}
		size[k]++
		laneOf[i] = k
	}

	start := make([]int, len(size)+1)
	for k, s := range size {
		start[k+1] = start[k] + s
	}
	order := make([]int, len(recs))
	fill := append([]int(nil), start[:len(size)]...)
	for i, k := range laneOf {
		order[fill[k]] = i
		fill[k]++
	}
	return lanes{n: len(size), order: order, start: start}
}

// count returns the number of lanes.
func (l *lanes) count() int { return l.n }

// bounds returns the positions of lane k's records, for record.
func (l *lanes) bounds(k int) (lo, hi int) {
	if l.start == nil {
		return k, k + 1
	}
	return l.start[k], l.start[k+1]
}

// record returns the index in the event of the record at position j.
func (l *lanes) record(j int) int {
	if l.order == nil {
		return j
	}
	return l.order[j]
}
