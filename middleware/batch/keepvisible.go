package batch

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"sync"
	"time"
)

// Defaults for the zero values of [KeepVisible] without a deadline.
const (
	// DefaultKeepVisibleEvery is how often the messages of an invocation
	// without a deadline are kept invisible: a third of SQS's default
	// visibility timeout (30 s).
	DefaultKeepVisibleEvery = 10 * time.Second

	// KeepVisibleTimeouts is the visibility timeout each extension sets,
	// in Every: three, so that two extensions may fail before a message
	// comes back.
	KeepVisibleTimeouts = 3
)

// KeepVisible keeps the messages of an invocation's records invisible
// while their records have not finished, so that SQS does not deliver a
// message again (to another consumer) while the record that holds it is
// alive: every Every from the invocation's start, each message whose
// record has not finished (running, or waiting for its turn) gets one
// [VisibilityChange] to Timeout from then, in one call of
// [Pacing.Changer] per tick. It is on whenever Pacing.Changer is set; a
// record that has finished is never changed by it (pacing then makes the
// failed records' change).
//
// Package idempotency's guard keeps a running operation's claim alive in
// the same way, with the same defaults; keeping its message invisible
// spares the delivery that would find the key in progress, and the
// consumer it would hold. Inside Lambda a queue's visibility timeout is
// at least the function's, so the changes matter only to an operation
// that outlives its invocation's deadline (Lambda Managed Instances do
// not stop it) or a worker without a deadline.
//
// A change never shortens the visibility the queue gave the message:
// with QueueTimeout set, a message is changed only once a change ends
// after QueueTimeout from the invocation's start (the message was
// received before it), which the queue gave it at most. Without it, the
// handler does not know the queue's timeout: with a deadline, no change
// is made before the invocation's deadline (Lambda requires the queue's
// timeout to be at least the function's, so the queue keeps the message
// invisible until about then); a change made after it, for a record still
// running, may end before a longer queue timeout would have. Without a
// deadline every tick changes, as configured.
//
// The changes run under a context that ignores the invocation's end (each
// bounded by Every, at most 5 s), since a record still running after it
// still holds its message. They never hold the response back: once the
// last record has finished, a change in flight is canceled and no other
// is made, so the handler goes on at once (pacing then makes the failed
// records' changes). No change asks for more than SQS accepts (12
// hours since the message was received, as for pacing): once that is
// reached the message is no longer changed. A failed change never changes
// a record's outcome: it is logged (the first of an invocation) and its
// message comes back after the last timeout applied.
type KeepVisible struct {
	// Every is the interval of the changes. Zero: a third of the records'
	// window when the context has a deadline (833 ms at Lambda's default
	// 3 s timeout), else [DefaultKeepVisibleEvery]. Negative turns keeping
	// visible off.
	Every time.Duration

	// Timeout is the visibility timeout each change sets, from then. Zero:
	// [KeepVisibleTimeouts] × Every (the records' window, with a
	// deadline; 30 s without one). It must be above Every, at least a
	// millisecond and at most [MaxVisibilityTimeout]; sqsvisibility rounds
	// it up to whole seconds. With Timeout set and Every zero, Every is
	// the shorter of its default and Timeout / [KeepVisibleTimeouts].
	Timeout time.Duration

	// QueueTimeout is the visibility timeout of the records' queue, when
	// known: no change is made that would end before it, from the
	// invocation's start. Zero: unknown (see above). It must not be
	// negative nor above [MaxVisibilityTimeout].
	QueueTimeout time.Duration
}

func (k KeepVisible) validate() error {
	var errs []error
	if k.Timeout < 0 || k.Timeout > MaxVisibilityTimeout || k.Timeout > 0 && k.Timeout < time.Millisecond {
		errs = append(errs, fmt.Errorf("batch: KeepVisible.Timeout must be 0 or between 1ms and %v, got %v", MaxVisibilityTimeout, k.Timeout))
	}
	if k.Every > 0 && k.Timeout > 0 && k.Timeout <= k.Every {
		errs = append(errs, fmt.Errorf("batch: KeepVisible.Timeout %v must be above KeepVisible.Every %v", k.Timeout, k.Every))
	}
	if k.Every >= MaxVisibilityTimeout {
		errs = append(errs, fmt.Errorf("batch: KeepVisible.Every %v must be below %v, the longest visibility timeout", k.Every, MaxVisibilityTimeout))
	}
	if k.QueueTimeout < 0 || k.QueueTimeout > MaxVisibilityTimeout {
		errs = append(errs, fmt.Errorf("batch: KeepVisible.QueueTimeout must be between 0 and %v, got %v", MaxVisibilityTimeout, k.QueueTimeout))
	}
	return errors.Join(errs...)
}

// intervals returns the interval and timeout of an invocation whose
// records' window is window (zero without a deadline); ok is false when
// keeping visible is off.
func (k KeepVisible) intervals(window time.Duration, hasDeadline bool) (every, timeout time.Duration, ok bool) {
	every, timeout = k.Every, k.Timeout
	switch {
	case every < 0:
		return 0, 0, false
	case every > 0:
	case hasDeadline:
		every = window / KeepVisibleTimeouts
	default:
		every = DefaultKeepVisibleEvery
	}
	if k.Every == 0 && timeout > 0 {
		every = min(every, timeout/KeepVisibleTimeouts) // below the timeout asked for
	}
	if every <= 0 {
		return 0, 0, false // a window already over: no record starts
	}
	if timeout == 0 {
		timeout = min(KeepVisibleTimeouts*every, MaxVisibilityTimeout)
	}
	if timeout <= every {
		return 0, 0, false
	}
	return every, timeout, true
}

// visKeeper keeps the messages of one invocation's unfinished records
// invisible.
type visKeeper struct {
	r       *sqsRun
	every   time.Duration
	timeout time.Duration
	stopc   chan struct{}
	done    chan struct{}

	// ctx is the base of the changes' contexts: it ignores the
	// invocation's end, and stop cancels it once every record has
	// finished, so that a change in flight does not hold the response.
	ctx    context.Context
	cancel context.CancelFunc

	// floor is the end of the visibility the queue gave the messages, at
	// most, when known: a change ends after it or is not made. quiet is
	// the moment before which no change is made (without a known floor,
	// the invocation's deadline). Either may be zero.
	floor, quiet time.Time

	mu       sync.Mutex
	finished []bool // record i has its outcome: not changed any more
	beyond   []bool // record i reached SQS's 12-hour limit
}

// keepVisible starts keeping the messages of the run's records invisible,
// when a Changer is set and keeping visible is on, and returns the
// function that stops it, to be called once every record has finished: it
// cancels a change in flight and returns once the Changer has.
func (r *sqsRun) keepVisible() (stop func()) {
	if r.p.opts.Pacing.Changer == nil {
		return func() {}
	}
	every, timeout, ok := r.p.opts.KeepVisible.intervals(r.deadline.Sub(r.start), r.hasDeadline)
	if !ok {
		return func() {}
	}
	k := &visKeeper{r: r, every: every, timeout: timeout, stopc: make(chan struct{}), done: make(chan struct{}),
		finished: make([]bool, len(r.recs)), beyond: make([]bool, len(r.recs))}
	k.ctx, k.cancel = context.WithCancel(context.WithoutCancel(r.parent))
	if qt := r.p.opts.KeepVisible.QueueTimeout; qt > 0 {
		k.floor = r.start.Add(qt)
	} else if r.hasDeadline {
		k.quiet = r.deadline.Add(r.cfg.reserve) // the invocation's
	}
	r.finished = k.finish
	go k.run()
	return func() {
		// Every record has finished: a change in flight (from a tick just
		// before the last one did) is moot, and waiting for it, up to
		// Every, could take the handler past the deadline and lose the
		// response. Canceled, it leaves its message as SQS had it, or as
		// the call would have: no worse than a call cut by its timeout.
		// Should SQS apply it after a failed record's pacing change, it
		// replaces pacing's, as a failed pacing change would.
		close(k.stopc)
		k.cancel()
		<-k.done
	}
}

// finish marks record i finished: its message is not changed any more.
func (k *visKeeper) finish(i int) {
	k.mu.Lock()
	k.finished[i] = true
	k.mu.Unlock()
}

func (k *visKeeper) run() {
	defer close(k.done)
	t := time.NewTicker(k.every)
	defer t.Stop()
	warned := false
	for {
		select {
		case <-k.stopc:
			return
		case <-t.C:
		}
		select {
		case <-k.stopc: // both were ready: select may have taken the tick
			return
		default:
		}
		if err := k.extend(); err != nil && !warned && k.ctx.Err() == nil { // canceled by stop: moot
			warned = true
			k.r.log.LogAttrs(k.r.parent, slog.LevelWarn, "batch: keeping messages invisible failed; a message whose change failed comes back after the last timeout applied",
				slog.Any("error", err))
		}
	}
}

// extend makes one change for each message whose record has not finished.
func (k *visKeeper) extend() error {
	r := k.r
	callTimeout := min(k.every, pacingTimeout)
	now := r.p.now()
	if now.Before(k.quiet) {
		return nil // the queue's own timeout keeps the messages invisible
	}
	var changes []VisibilityChange
	k.mu.Lock()
	for i := range r.recs {
		if k.finished[i] || k.beyond[i] {
			continue
		}
		msg := &r.recs[i]
		c := VisibilityChange{MessageID: msg.MessageId, ReceiptHandle: msg.ReceiptHandle, EventSourceARN: msg.EventSourceARN, Timeout: k.timeout}
		if limit := visibilityLimit(msg, r.start, now.Add(callTimeout)); c.Timeout > limit {
			if limit <= 0 {
				k.beyond[i] = true
				r.log.LogAttrs(r.parent, slog.LevelWarn, "batch: message no longer kept invisible: 12 hours have passed since it was received",
					slog.String("messageId", msg.MessageId))
				continue
			}
			c.Timeout = limit
		}
		if !k.floor.IsZero() && !now.Add(c.Timeout).After(k.floor) {
			continue // it would not end after what the queue gave the message
		}
		changes = append(changes, c)
	}
	k.mu.Unlock()
	if len(changes) == 0 {
		return nil
	}
	ctx, cancel := context.WithTimeout(k.ctx, callTimeout)
	defer cancel()
	errs := callEach(changes, func(c []VisibilityChange) []error { return r.p.opts.Pacing.Changer.ChangeVisibility(ctx, c) },
		"VisibilityChanger", "changes")
	for i, err := range errs {
		if err != nil {
			return fmt.Errorf("messageId %s: %w", changes[i].MessageID, err)
		}
	}
	return nil
}
