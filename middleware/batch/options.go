package batch

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"time"

	"github.com/aws/aws-lambda-go/events"
)

// Defaults for the zero values of [Options].
const (
	// DefaultConcurrency is the number of records a handler runs at once.
	DefaultConcurrency = 10

	// DefaultMinRemaining caps the time that must be left before the
	// records' deadline for a record to start when [Options.MinRemaining]
	// is zero: the threshold is then MinRemainingShare of the time the
	// invocation had for its records, at most this (see
	// [MinRemainingFor]).
	DefaultMinRemaining = 10 * time.Second

	// MinRemainingShare is the share of an invocation's records' window
	// (from the handler's start to the records' deadline) that must be
	// left for a record to start, when [Options.MinRemaining] is zero.
	MinRemainingShare = 4 // a quarter

	// DefaultReserve is the time the handler keeps free before the
	// invocation's deadline to return its response.
	DefaultReserve = 500 * time.Millisecond
)

// Options configures the handler built by [SQS]. The zero value of every
// field is a documented default, so Options{} is a valid configuration.
type Options struct {
	// Concurrency is the largest number of records in flight at once: records
	// of a standard queue, or message groups of a FIFO queue (each group runs
	// one record at a time). 1 runs the whole batch sequentially, in event
	// order. Default [DefaultConcurrency]; negative is invalid.
	Concurrency int

	// MinRemaining is the time that must be left before the records'
	// deadline (the context's, minus Reserve) for a record to start: a
	// record that has not started when less than MinRemaining remains is
	// reported failed without running ([ErrDeadline]), so that SQS
	// redelivers it instead of Lambda killing it half way. It has no effect
	// when the context has no deadline; negative is invalid.
	//
	// Zero follows the invocation: a quarter ([MinRemainingShare]) of the
	// records' window, the time from the handler's start to the records'
	// deadline, at most [DefaultMinRemaining] (see [MinRemainingFor]). A
	// function at Lambda's default timeout of 3 s has a window of 2.5 s and
	// starts records until 625 ms are left; at 40 s or more the threshold is
	// 10 s. A record started at the threshold still gets nine tenths of it
	// for its operation under package idempotency's guard, which keeps a
	// tenth of the time left (at most a second) to store the result. Set
	// MinRemaining to the longest a record takes when that is more; to start
	// records until the records' deadline itself, set a tiny positive value
	// such as [time.Nanosecond].
	MinRemaining time.Duration

	// Reserve is the time kept free before the context's deadline (the
	// invocation's) for the handler to return its response: the records run
	// under a context that ends Reserve before the deadline, and the
	// handler's own calls after them (dead-letter moves, visibility changes)
	// run until that moment only (see "Deadline" in the package doc).
	// Default [DefaultReserve]; negative is invalid; for practically none,
	// set [time.Nanosecond].
	Reserve time.Duration

	// Logger receives at most one line per failed record, with its
	// messageId and error (and, after a panic, the stack), never its body:
	// ERROR for a record that failed or panicked, WARN for one not started.
	// Inside Lambda every line carries the invocation's request_id, since
	// invocations running at once in one process share its output. A
	// record that succeeded is not logged, nor is a failure whose error
	// says it was logged already (see "Failures" in the package doc). Nil
	// means [slog.Default] as it is at each invocation; the logger's handler
	// level filters the lines, and [slog.DiscardHandler] turns them off.
	Logger *slog.Logger

	// OnRecord, if set, is called exactly once for every record of every
	// event, after the record finished or was reported failed without
	// starting: err is nil on success and otherwise the reason the record
	// failed. It is called from the goroutines that run the records, so it
	// must be safe for concurrent use; a panic inside it is recovered and
	// logged and does not change the record's outcome.
	OnRecord func(ctx context.Context, msg events.SQSMessage, err error)

	// NoFullBatchError, when true, makes a batch in which every record
	// failed return its response like any other, without an error. By
	// default such a batch returns a [*FullBatchFailureError], unless every
	// failure is a retry ([IsRetry]: a key in progress elsewhere), so that
	// a routine duplicate does not count in the function's Errors metric
	// (see "Failures" in the package doc). Either way every record is
	// delivered again.
	NoFullBatchError bool

	// AlwaysFullBatchError, when true, returns a [*FullBatchFailureError]
	// whenever every record of a batch failed, retries included: the
	// behaviour of Powertools for AWS Lambda. It must not be set with
	// NoFullBatchError.
	AlwaysFullBatchError bool

	// DeadLetter, when its Mover is set, moves a message whose record
	// failed permanently (see [PermanentError]) to its queue's dead-letter
	// queue at once, instead of letting SQS deliver it again until its
	// maxReceiveCount. The zero value turns moving off. See [DeadLetter].
	DeadLetter DeadLetter

	// Pacing, when its Changer is set, changes the visibility of the failed
	// records' messages so that they come back when a new attempt can
	// succeed: just after the lease of a key in progress elsewhere ends, or
	// after an exponential backoff. The zero value turns pacing off. See
	// [Pacing].
	Pacing Pacing

	// KeepVisible keeps the messages of the records that have not
	// finished invisible, through Pacing.Changer, so that SQS does not
	// deliver them again while their records run. It is on whenever
	// Pacing.Changer is set; its zero value follows the invocation. See
	// [KeepVisible].
	KeepVisible KeepVisible
}

// Validate reports whether o is a valid configuration, with every problem
// at once. [SQS] calls it and panics on the error it returns; call Validate
// first to handle the error instead, for instance when the values come from
// the environment.
func (o Options) Validate() error {
	errs := validateSettings("Options", o.Concurrency, o.MinRemaining, o.Reserve)
	if o.NoFullBatchError && o.AlwaysFullBatchError {
		errs = append(errs, errors.New("batch: Options.NoFullBatchError and Options.AlwaysFullBatchError are both set: choose one"))
	}
	if o.DeadLetter.OnMove != nil && o.DeadLetter.Mover == nil {
		errs = append(errs, errors.New("batch: Options.DeadLetter.OnMove is set without a Mover: it would never be called"))
	}
	return errors.Join(append(errs, o.Pacing.validate(), o.KeepVisible.validate())...)
}

// MinRemainingFor returns the minimum remaining time of an invocation
// whose records' deadline is window away when the handler starts, for a
// handler built with minRemaining ([Options.MinRemaining],
// [StreamOptions.MinRemaining]): minRemaining when it is positive, else
// window / [MinRemainingShare], at most [DefaultMinRemaining] (zero for a
// window that is not positive).
func MinRemainingFor(minRemaining, window time.Duration) time.Duration {
	if minRemaining > 0 {
		return minRemaining
	}
	return max(min(window/MinRemainingShare, DefaultMinRemaining), 0)
}

// CheckTimeout reports whether a handler built with o can start a record
// in an invocation of a function whose timeout is timeout: nil when the
// first record of a batch delivered at once would start, else an error
// naming the figures. The records' window is then timeout minus
// [Options.Reserve]; the default MinRemaining always lets the first record
// start, an explicit one must be below the window. A deploy tool checks
// this before it sets a function's timeout (package infra's construct
// does at synth): Lambda does not tell a function its timeout.
func (o Options) CheckTimeout(timeout time.Duration) error {
	if err := o.Validate(); err != nil {
		return err
	}
	o = o.withDefaults()
	window := timeout - o.Reserve
	if window <= 0 {
		return fmt.Errorf("batch: a function timeout of %v leaves no time for records: the handler keeps Options.Reserve (%v) before the deadline to return", timeout, o.Reserve)
	}
	if need := MinRemainingFor(o.MinRemaining, window); window < need {
		return fmt.Errorf("batch: no record could start at a function timeout of %v: the records' window is %v (the timeout minus Options.Reserve %v), below Options.MinRemaining %v; "+
			"raise the timeout above %v or lower MinRemaining (zero follows the invocation)", timeout, window, o.Reserve, need, need+o.Reserve)
	}
	return nil
}

// withDefaults returns o with every zero field set to its default.
func (o Options) withDefaults() Options {
	s := newSettings(o.Concurrency, o.MinRemaining, o.Reserve, o.Logger, fullBatchModeOf(o.NoFullBatchError, o.AlwaysFullBatchError))
	o.Concurrency, o.MinRemaining, o.Reserve = s.concurrency, s.minRemaining, s.reserve
	o.Pacing = o.Pacing.withDefaults()
	return o
}
