package batch

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"runtime/debug"
	"sync"
	"sync/atomic"
	"time"

	"github.com/aws/aws-lambda-go/lambdacontext"

	"github.com/sqsonce/sqsonce/internal/invocation"
)

// settings are what every handler of the package runs with: the fields
// [Options] and [StreamOptions] share, with their defaults filled in.
type settings struct {
	concurrency  int
	minRemaining time.Duration // zero: MinRemainingFor's rule, per invocation
	reserve      time.Duration
	logger       *slog.Logger // nil: slog.Default at each invocation
	fullBatch    fullBatchMode
}

// fullBatchMode is when a batch whose every record failed returns a
// *FullBatchFailureError.
type fullBatchMode int

const (
	fullBatchUnlessRetry fullBatchMode = iota // the default: unless every failure is a retry
	fullBatchAlways                           // Powertools' behaviour
	fullBatchNever
)

// fullBatchModeOf is the mode the two options of [Options] and
// [StreamOptions] choose (Validate refuses both set).
func fullBatchModeOf(no, always bool) fullBatchMode {
	switch {
	case no:
		return fullBatchNever
	case always:
		return fullBatchAlways
	}
	return fullBatchUnlessRetry
}

// validateSettings reports the problems of the shared fields of the options
// struct named by name.
func validateSettings(name string, concurrency int, minRemaining, reserve time.Duration) []error {
	var errs []error
	if concurrency < 0 {
		errs = append(errs, fmt.Errorf("batch: %s.Concurrency must not be negative, got %d", name, concurrency))
	}
	if minRemaining < 0 {
		errs = append(errs, fmt.Errorf("batch: %s.MinRemaining must not be negative, got %v", name, minRemaining))
	}
	if reserve < 0 {
		errs = append(errs, fmt.Errorf("batch: %s.Reserve must not be negative, got %v", name, reserve))
	}
	return errs
}

// newSettings fills in the defaults of the shared fields.
func newSettings(concurrency int, minRemaining, reserve time.Duration, logger *slog.Logger, fullBatch fullBatchMode) settings {
	if concurrency == 0 {
		concurrency = DefaultConcurrency
	}
	if reserve == 0 {
		reserve = DefaultReserve
	}
	return settings{concurrency, minRemaining, reserve, logger, fullBatch}
}

// kind is what the engine needs to know of a record type R.
type kind[R any] struct {
	// ident names a record in a log line: its messageId, or its sequence
	// number and event id.
	ident func(*R) []slog.Attr
	// onRecord, if set, passes a record's outcome to the handler's hook.
	onRecord func(ctx context.Context, rec *R, err error)
	// hook names onRecord in the log line of a panic inside it.
	hook string
}

// run is the state of one invocation of a handler over records of type R:
// the engine every handler of the package shares. errs[i] and started[i]
// are written only by the goroutine running record i's lane, and read
// after all lanes are done.
type run[R any] struct {
	cfg         *settings
	kind        *kind[R]
	fn          func(context.Context, R) error
	now         func() time.Time
	ctx         context.Context // the records': parent, ending at deadline
	parent      context.Context // the invocation's
	cancel      context.CancelFunc
	recs        []R
	errs        []error
	started     []bool // whether the record function was called
	log         *slog.Logger
	lanes       lanes
	start       time.Time // when the invocation began, by now
	deadline    time.Time // the records' deadline: the invocation's minus the reserve
	hasDeadline bool
	// minRemaining is the time that must be left before deadline for a
	// record to start: the configured one, or MinRemainingFor's share of
	// the window from start to deadline.
	minRemaining time.Duration
	// finished, if set, is told that record i has its outcome, before
	// the outcome is logged: the SQS handler's keeping visible stops.
	finished func(i int)
}

// newRun prepares an invocation over recs, partitioned into ln. Call
// execute, then use the outcomes, then cancel.
func newRun[R any](ctx context.Context, cfg *settings, k *kind[R], fn func(context.Context, R) error, now func() time.Time, recs []R, ln lanes) *run[R] {
	r := &run[R]{
		cfg:     cfg,
		kind:    k,
		fn:      fn,
		now:     now,
		ctx:     ctx,
		parent:  ctx,
		cancel:  func() {},
		recs:    recs,
		errs:    make([]error, len(recs)),
		started: make([]bool, len(recs)),
		log:     cfg.logger,
		lanes:   ln,
		start:   now(),
	}
	if r.log == nil {
		r.log = slog.Default()
	}
	if lc, ok := lambdacontext.FromContext(ctx); ok && lc.AwsRequestID != "" {
		// Invocations that share a process share its output: each line
		// names its own.
		r.log = r.log.With(slog.String("request_id", lc.AwsRequestID))
	}
	for i := range r.errs {
		r.errs[i] = errIncomplete
	}
	if deadline, ok := ctx.Deadline(); ok {
		// The records, and the handler's own calls after them, end the
		// reserve before the invocation's deadline: the response must
		// reach Lambda before it.
		r.deadline, r.hasDeadline = deadline.Add(-cfg.reserve), true
		r.ctx, r.cancel = context.WithDeadline(invocation.WithDeadline(ctx, deadline), r.deadline)
		r.minRemaining = MinRemainingFor(cfg.minRemaining, r.deadline.Sub(r.start))
	}
	return r
}

// execute runs the lanes, at most cfg.concurrency at a time, and gives
// every record an outcome.
func (r *run[R]) execute() {
	n := r.lanes.count()
	if workers := min(r.cfg.concurrency, n); workers == 1 {
		growStack() // the caller's: once here, not while a record runs
		for k := range n {
			r.lane(k)
		}
	} else {
		var next atomic.Int64
		var wg sync.WaitGroup
		for range workers {
			wg.Go(func() {
				growStack()
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
}

// fullFailure returns the error of an invocation in which failed of its
// records are reported failed: a *FullBatchFailureError when that is every
// record of a non-empty batch, unless it is turned off or, by default,
// every failure is a retry (see [IsRetry]).
func (r *run[R]) fullFailure(failed int) error {
	if failed == 0 || failed != len(r.recs) || r.cfg.fullBatch == fullBatchNever {
		return nil
	}
	if r.cfg.fullBatch == fullBatchUnlessRetry && r.allRetries() {
		return nil
	}
	return &FullBatchFailureError{Errs: append([]error(nil), r.errs...)}
}

// allRetries reports whether every record's failure is one SQS should
// simply deliver again later: a retry ([IsRetry]), or a record not
// started behind an earlier record of its group ([ErrGroupFailed]), which
// failed in this batch too. At least one must be a retry.
func (r *run[R]) allRetries() bool {
	retries := 0
	for _, err := range r.errs {
		switch {
		case IsRetry(err):
			retries++
		case errors.Is(err, ErrGroupFailed):
		default:
			return false
		}
	}
	return retries > 0
}

// lane runs the records of lane k one after another, in event order. After
// a record fails, the rest of the lane are reported failed without starting.
func (r *run[R]) lane(k int) {
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
func (r *run[R]) mayStart() error {
	if r.hasDeadline {
		if left := r.deadline.Sub(r.now()); left < r.minRemaining {
			return &deadlineError{left: left, minRemaining: r.minRemaining, window: r.deadline.Sub(r.start)}
		}
	}
	if r.ctx.Err() != nil {
		return fmt.Errorf("%w: %w", errNotStarted, context.Cause(r.ctx))
	}
	return nil
}

// call runs the record function on record i, turning a panic into a
// *PanicError, and an error whose chain panics into a *chainError.
func (r *run[R]) call(i int) (err error) {
	defer func() {
		if v := recover(); v != nil {
			err = &PanicError{Value: v, Stack: debug.Stack()}
		}
	}()
	return unwrappable(r.fn(r.ctx, r.recs[i]))
}

// chainError stands for a record function's error whose Unwrap, Is or As
// method panics (a typed nil of its type): every errors.Is and errors.As
// on it would panic, in the record's goroutine too, ending the process.
// It is permanent when the error was marked so outside the panicking part.
type chainError struct {
	typ       string // the error's Go type
	permanent bool
}

func (e *chainError) Error() string {
	return "batch: the record's error (" + e.typ + ") panics when unwrapped"
}

// Permanent reports whether the error was marked permanent.
func (e *chainError) Permanent() bool { return e.permanent }

// errProbe is a sentinel no error chain holds.
var errProbe = errors.New("batch: probe")

// probeTarget is a type no error chain holds.
type probeTarget struct{ error }

// unwrappable returns err, or a *chainError for it when walking its chain
// panics.
func unwrappable(err error) error {
	if err == nil || walks(err) {
		return err
	}
	return &chainError{typ: fmt.Sprintf("%T", err), permanent: permanentOf(err) != nil}
}

// walks reports whether errors.Is and errors.As go through err's chain
// without a panic: both call every Unwrap, and each Is or As method, of
// a chain they do not match.
func walks(err error) bool {
	return guarded(false, func() bool {
		var t *probeTarget
		_, _ = errors.Is(err, errProbe), errors.As(err, &t)
		return true
	})
}

// finish records the outcome of record i, logs a failure and calls the
// hook.
func (r *run[R]) finish(i int, err error) {
	r.errs[i] = err
	if r.finished != nil {
		r.finished(i)
	}
	rec := &r.recs[i]
	if err != nil {
		r.logFailure(rec, err)
	}
	if r.kind.onRecord != nil {
		r.onRecord(rec, err)
	}
}

// logFailure logs the failure of rec in one line: at WARN for a record not
// started, at ERROR (with the stack after a panic) for one that failed;
// nothing for an error the record function logged itself (see
// [LoggedError]).
func (r *run[R]) logFailure(rec *R, err error) {
	if loggedAlready(err) {
		return
	}
	attrs := append(r.kind.ident(rec), slog.Any("error", err))
	if de, ok := errors.AsType[*deadlineError](err); ok {
		// The figures, so that a threshold the timeout cannot meet shows.
		attrs = append(attrs, slog.String("left", de.left.Round(time.Millisecond).String()),
			slog.String("min_remaining", de.minRemaining.Round(time.Millisecond).String()), slog.String("window", de.window.Round(time.Millisecond).String()))
	}
	switch pe, panicked := errors.AsType[*PanicError](err); {
	case panicked:
		r.log.LogAttrs(r.ctx, slog.LevelError, "batch: record panicked", append(attrs, slog.String("stack", string(pe.Stack)))...)
	case NotStarted(err):
		r.log.LogAttrs(r.ctx, slog.LevelWarn, "batch: record not started", attrs...)
	default:
		r.log.LogAttrs(r.ctx, slog.LevelError, "batch: record failed", attrs...)
	}
}

// loggedAlready reports whether err is a LoggedError that says it was
// logged; false when its Logged method panics, so that the failure is
// logged, and the panic does not end the process from the record's
// goroutine.
func loggedAlready(err error) bool {
	return guarded(false, func() bool {
		l, ok := errors.AsType[LoggedError](err)
		return ok && l.Logged()
	})
}

// onRecord calls the OnRecord hook, containing a panic inside it.
func (r *run[R]) onRecord(rec *R, err error) {
	defer func() {
		if v := recover(); v != nil {
			attrs := append(r.kind.ident(rec), slog.Any("error", &PanicError{Value: v}), slog.String("stack", string(debug.Stack())))
			r.log.LogAttrs(r.ctx, slog.LevelError, "batch: "+r.kind.hook+" panicked", attrs...)
		}
	}()
	r.kind.onRecord(r.ctx, rec, err)
}

// tailContext returns the context of the handler's own calls after the
// records, and the latest moment they can be made. With a deadline that is
// the records' deadline, and ctx is nil once it has passed (the reserve is
// reached: make no call). Without one the calls run under the invocation's
// context, or, once that is done, a detached one bounded by pacingTimeout.
func (r *run[R]) tailContext() (ctx context.Context, cancel context.CancelFunc, callBy time.Time) {
	now := r.now()
	if r.hasDeadline {
		if !now.Before(r.deadline) {
			return nil, func() {}, r.deadline
		}
		end := r.deadline
		if r.parent.Err() != nil {
			end = minTime(end, time.Now().Add(pacingTimeout))
		}
		ctx, cancel = context.WithDeadline(context.WithoutCancel(r.parent), end)
		return ctx, cancel, r.deadline
	}
	if r.parent.Err() == nil {
		return r.parent, func() {}, now.Add(pacingTimeout)
	}
	ctx, cancel = context.WithTimeout(context.WithoutCancel(r.parent), pacingTimeout)
	return ctx, cancel, now.Add(pacingTimeout)
}

func minTime(a, b time.Time) time.Time {
	if b.Before(a) {
		return b
	}
	return a
}

// lanes partitions the records of an event into lanes: the records of one
// lane run one after another, in event order, and lanes run concurrently.
// A record without a group is a lane by itself; the records of one group
// (a FIFO queue's message group, a stream's partition key) form one lane.
type lanes struct {
	n int
	// order lists record indices lane after lane; lane k is
	// order[start[k]:start[k+1]]. Both are nil when every lane is a single
	// record, lane k being record k.
	order []int
	start []int
}

// planLanes partitions n records into lanes, numbered in the order of their
// first record: group(i) returns the group key of record i, and whether it
// has one. A counting sort: two passes, no per-lane slices.
func planLanes[K comparable](n int, group func(i int) (key K, ok bool)) lanes {
	grouped := false
	for i := range n {
		if _, ok := group(i); ok {
			grouped = true
			break
		}
	}
	if !grouped {
		return lanes{n: n} // a standard queue's records: no allocation
	}

	laneOf := make([]int, n)
	groups := make(map[K]int)
	var size []int
	for i := range n {
		k := len(size)
		if key, ok := group(i); ok {
			if existing, ok := groups[key]; ok {
				k = existing
			} else {
				groups[key] = k
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
	order := make([]int, n)
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
