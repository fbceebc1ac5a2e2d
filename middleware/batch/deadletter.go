package batch

import (
	"context"
	"errors"
	"fmt"
	"log/slog"

	"github.com/aws/aws-lambda-go/events"

	"github.com/sqsonce/sqsonce/middleware/failure"
)

// PermanentError is [failure.PermanentError]: an error whose Permanent
// reports whether trying again can help. With [Options.DeadLetter] set, a
// message whose record failed with one that reports true is moved to its
// queue's dead-letter queue at once.
type PermanentError = failure.PermanentError

// Permanent returns err marked as permanent; it is [failure.Permanent].
func Permanent(err error) error { return failure.Permanent(err) }

// permanent returns the PermanentError that makes err permanent, or nil.
func permanent(err error) PermanentError {
	if p, ok := errors.AsType[PermanentError](err); ok && p.Permanent() {
		return p
	}
	return nil
}

// guarded is f(), or fallback when f panics: for the methods of a record
// function's error, which may panic (a typed nil of its type). The panic's
// value is not kept: it may hold message content.
func guarded[T any](fallback T, f func() T) (v T) {
	defer func() {
		if recover() != nil {
			v = fallback
		}
	}()
	return f()
}

// permanentOf is permanent for an error of the record function: one whose
// methods panic is not known to be permanent, and its message stays failed.
func permanentOf(err error) PermanentError {
	return guarded(nil, func() PermanentError { return permanent(err) })
}

// reasonOf is err's message, or, when its Error method panics, a reason
// saying so.
func reasonOf(err error) string {
	// A closure, not the method value err.Error, which would dereference a
	// typed nil of a value receiver here, unguarded.
	return guarded(fmt.Sprintf("batch: the record's error (%T) panicked in its Error method", err),
		func() string { return err.Error() })
}

// errorType names the type of the error that made a record's failure
// permanent, as Lambda names error types: the marked error's for one
// marked by [Permanent].
func errorType(p PermanentError) string {
	marked := fmt.Sprintf("%T", Permanent(errors.ErrUnsupported))
	if fmt.Sprintf("%T", p) == marked {
		return fmt.Sprintf("%T", errors.Unwrap(p))
	}
	return fmt.Sprintf("%T", p)
}

// ErrNotDeleted is wrapped by the error a [DeadLetterMover] returns for a
// message it sent to the dead-letter queue but could not delete from its
// queue.
var ErrNotDeleted = errors.New("batch: sent to the dead-letter queue, not deleted from its queue")

// DeadLetterMove asks for one received message to be moved to its queue's
// dead-letter queue.
type DeadLetterMove struct {
	// Message is the record as it was received: body, attributes, message
	// attributes, receipt handle and queue.
	Message events.SQSMessage

	// Reason is the message of the record's error; ErrorType the Go type of
	// the error that made it permanent (e.g. "*idempotency.BodyError").
	// Neither quotes the message's content: the errors of this module
	// never do, and a record function's own errors must not either.
	Reason, ErrorType string
}

// DeadLetterMover moves received messages to their queue's dead-letter
// queue. Package sqsdlq implements it on the SQS API; this package imports
// no AWS SDK.
type DeadLetterMover interface {
	// MoveToDeadLetter sends each message to its queue's dead-letter
	// queue, and deletes it from its queue once sent, never before. It
	// returns nil when every message was sent and deleted; otherwise a
	// slice of len(moves) whose element i is nil for a message sent and
	// deleted, an error wrapping [ErrNotDeleted] for one sent and not
	// deleted, and any other error for one not sent (and so not deleted).
	// It must not keep moves after it returns.
	MoveToDeadLetter(ctx context.Context, moves []DeadLetterMove) []error
}

// DeadLetter moves the messages whose record failed permanently (see
// [PermanentError]) to their queue's dead-letter queue at once, instead of
// letting SQS deliver them again until its redrive policy's
// maxReceiveCount. After every record of an invocation has finished, and
// before pacing, the permanent failures go to Mover in one call:
//
//   - A message sent and deleted, or sent and not deleted, is no longer
//     reported in BatchItemFailures: Lambda then deletes it too, so the one
//     whose delete failed is deleted unless the response is lost. It is
//     not paced, and it does not count toward a whole-batch failure.
//   - A message not sent stays failed, as without DeadLetter: SQS delivers
//     it again and its own redrive moves it after maxReceiveCount receives.
//     It is paced like any other failure.
//
// A record that failed without starting ([ErrDeadline], [ErrGroupFailed],
// cancellation) is never moved: in a FIFO group, the records after a
// moved one are reported failed without starting, as after any failure,
// and SQS delivers them again, in order. The moves are made by the
// records' deadline ([Options.Reserve]): when it has passed, none is
// asked for and the messages stay failed. One WARN line is logged per
// message moved, and one per invocation for the moves that failed or were
// skipped.
type DeadLetter struct {
	// Mover sends the messages and deletes them. Nil turns moving off.
	Mover DeadLetterMover

	// OnMove, if set, is called once per permanent failure after Mover
	// returned, with the move's error: nil when the message was sent and
	// deleted, one wrapping ErrNotDeleted when it was sent only,
	// [ErrReserveReached] when it was not asked for. It must be safe for
	// concurrent use; a panic inside it is recovered and logged.
	OnMove func(ctx context.Context, msg events.SQSMessage, err error)
}

// moveToDeadLetter moves the permanent failures, if moving is on, and
// marks those sent as moved.
func (r *sqsRun) moveToDeadLetter() {
	dl := r.p.opts.DeadLetter
	if dl.Mover == nil {
		return
	}
	var moves []DeadLetterMove
	var idx []int
	for i, err := range r.errs {
		if err == nil || !r.started[i] {
			continue
		}
		if p := permanentOf(err); p != nil {
			moves = append(moves, DeadLetterMove{Message: r.recs[i], Reason: reasonOf(err), ErrorType: errorType(p)})
			idx = append(idx, i)
		}
	}
	if len(moves) == 0 {
		return
	}
	ctx, cancel, _ := r.tailContext()
	defer cancel()
	if ctx == nil {
		r.log.LogAttrs(r.parent, slog.LevelWarn, "batch: moves to the dead-letter queue skipped: the reserve before the invocation's deadline was reached; the messages come back, and SQS's redrive moves them",
			slog.Int("moves", len(moves)), slog.Duration("reserve", r.p.opts.Reserve))
		for j := range moves {
			r.onMove(&moves[j].Message, ErrReserveReached)
		}
		return
	}
	// Which were sent is unknown after a result of the wrong length: none
	// is reported moved, so that none is lost; a message that was sent
	// comes back and is sent again.
	errs := callEach(moves, func(m []DeadLetterMove) []error { return dl.Mover.MoveToDeadLetter(ctx, m) },
		"DeadLetterMover", "moves")
	failed, first := 0, -1
	for j, err := range errs {
		i := idx[j]
		if err == nil || errors.Is(err, ErrNotDeleted) {
			if r.moved == nil {
				r.moved = make([]bool, len(r.recs))
			}
			r.moved[i] = true
			attrs := []slog.Attr{slog.String("messageId", moves[j].Message.MessageId), slog.String("error_type", moves[j].ErrorType)}
			if err != nil {
				attrs = append(attrs, slog.Any("delete_error", err))
			}
			r.log.LogAttrs(r.parent, slog.LevelWarn, "batch: message moved to the dead-letter queue: its record failed permanently", attrs...)
		} else if failed++; first < 0 {
			first = j
		}
		r.onMove(&moves[j].Message, err)
	}
	if failed > 0 {
		r.log.LogAttrs(r.parent, slog.LevelWarn, "batch: moves to the dead-letter queue failed; those messages come back, and SQS's redrive moves them",
			slog.Int("failed", failed), slog.Int("moves", len(moves)),
			slog.String("messageId", moves[first].Message.MessageId), slog.Any("error", errs[first]))
	}
}

// onMove calls the OnMove hook, containing a panic inside it.
func (r *sqsRun) onMove(msg *events.SQSMessage, err error) {
	if r.p.opts.DeadLetter.OnMove == nil {
		return
	}
	r.hook("DeadLetter.OnMove", msg.MessageId, func() { r.p.opts.DeadLetter.OnMove(r.parent, *msg, err) })
}
