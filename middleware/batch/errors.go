package batch

import (
	"errors"
	"fmt"
	"time"

	"github.com/sqsonce/sqsonce/middleware/failure"
)

// The reasons a record is reported failed without being started. They reach
// the OnRecord hook of [Options] and [StreamOptions], and the log; a record
// not started because the context was canceled gets an error that wraps
// [context.Cause] instead.
var (
	// ErrDeadline: less than MinRemaining ([Options], [StreamOptions]) was
	// left before the records' deadline when the record's turn came. The
	// error a record gets is ErrDeadline for [errors.Is], and its message
	// and log line give the time left, the threshold and the window.
	ErrDeadline = errors.New("batch: record not started: too little time left before the deadline")

	// ErrGroupFailed: an earlier record of the same group (a FIFO queue's
	// message group, a stream's partition key or item key) failed or was
	// not started in this batch, so this one must not run before it.
	ErrGroupFailed = errors.New("batch: record not started: an earlier record of its group failed")
)

// FullBatchFailureError is the error a handler returns when every record of
// a non-empty batch failed and at least one failure is not a retry (see
// [IsRetry]): Lambda then counts the invocation as failed (its Errors
// metric and alarms see it, and its event source backs off) and delivers
// every record again, as it would for the failures listed. A batch whose
// every failure is a retry (a lone duplicate in progress elsewhere) returns
// its response without an error, so that a routine duplicate does not
// count as an error; [Options.AlwaysFullBatchError] returns this error then
// too, and [Options.NoFullBatchError] never. The response returned with it
// still lists every record, for callers that read it despite the error.
// Powertools for AWS Lambda throws FullBatchFailureError (TypeScript) or
// BatchProcessingError (Python) whenever every record failed.
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

// deadlineError is the error of a record not started for lack of time:
// it is [ErrDeadline], with the figures of the decision.
type deadlineError struct {
	left         time.Duration // before the records' deadline, when the record's turn came
	minRemaining time.Duration // the threshold
	window       time.Duration // from the handler's start to the records' deadline
}

func (e *deadlineError) Error() string {
	return fmt.Sprintf("batch: record not started: %v left before the records' deadline, below the minimum of %v (Options.MinRemaining; the window was %v)",
		e.left.Round(time.Millisecond), e.minRemaining.Round(time.Millisecond), e.window.Round(time.Millisecond))
}

// Is reports whether target is [ErrDeadline].
func (e *deadlineError) Is(target error) bool { return target == ErrDeadline }

// NotStarted reports whether err is the error of a record the handler
// reported failed without starting it: [ErrDeadline], [ErrGroupFailed], or
// a context canceled before its turn. Such a record's function was never
// called; an [Options.OnRecord] hook (a metric of records not started)
// tells them apart with it.
func NotStarted(err error) bool {
	return errors.Is(err, ErrDeadline) || errors.Is(err, ErrGroupFailed) || errors.Is(err, errNotStarted)
}

// IsRetry reports whether err is the failure of a record that SQS should
// simply deliver again later, with nothing wrong: its error wraps a
// [RetryAtError], as idempotency.InProgressError does for a key whose claim
// another invocation holds. A batch whose every failure is a retry returns
// no [*FullBatchFailureError] by default.
func IsRetry(err error) bool {
	_, ok := errors.AsType[RetryAtError](err)
	return ok
}

// errNotStarted begins the error of a record not started because the
// context was canceled.
var errNotStarted = errors.New("batch: record not started")

// LoggedError is [failure.LoggedError]: an error its record function
// logged already, or deliberately did not log; the handler does not log it.
type LoggedError = failure.LoggedError

// errIncomplete marks a record whose run never returned: the goroutine
// running it exited (runtime.Goexit) before the record function returned.
var errIncomplete = errors.New("batch: record did not complete")

// PanicError is [failure.PanicError]: the error a record fails with when
// its function panics.
type PanicError = failure.PanicError
