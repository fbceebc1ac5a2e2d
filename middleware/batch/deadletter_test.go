package batch

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/aws/aws-lambda-go/events"
)

// fakeMover records the moves it is asked for; a message whose id is in
// notSent is not sent, one in notDeleted is sent and not deleted.
type fakeMover struct {
	mu         sync.Mutex
	calls      [][]DeadLetterMove
	notSent    map[string]bool
	notDeleted map[string]bool
	panics     bool
}

func (f *fakeMover) MoveToDeadLetter(_ context.Context, moves []DeadLetterMove) []error {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.calls = append(f.calls, slices.Clone(moves))
	if f.panics {
		panic("mover down")
	}
	var errs []error
	for i, m := range moves {
		var err error
		switch id := m.Message.MessageId; {
		case f.notSent[id]:
			err = errors.New("send throttled")
		case f.notDeleted[id]:
			err = fmt.Errorf("delete throttled: %w", ErrNotDeleted)
		}
		if err != nil {
			if errs == nil {
				errs = make([]error, len(moves))
			}
			errs[i] = err
		}
	}
	return errs
}

// transient is an error that says it is not permanent, wrapping one that
// says it is: the first in the chain decides.
type transient struct{ err error }

func (e transient) Error() string   { return "transient: " + e.err.Error() }
func (e transient) Unwrap() error   { return e.err }
func (e transient) Permanent() bool { return false }

// keyError stands for idempotency.KeyError: a library error that is
// permanent by its type.
type keyError struct{}

func (keyError) Error() string   { return "no key" }
func (keyError) Permanent() bool { return true }

func TestDeadLetter(t *testing.T) {
	errs := map[string]error{
		"perm":       fmt.Errorf("wrapped: %w", keyError{}),
		"marked":     Permanent(errors.New("card declined")),
		"notSent":    Permanent(errRecord),
		"notDeleted": Permanent(errRecord),
		"plain":      errRecord,
		"transient":  transient{keyError{}},
		"f-head":     keyError{},
	}
	fn := func(_ context.Context, m events.SQSMessage) (string, error) { return "", errs[m.MessageId] }
	recs := []events.SQSMessage{
		withCount(std("ok", ""), "1"),
		withCount(std("perm", ""), "1"),
		withCount(std("marked", ""), "1"),
		withCount(std("notSent", ""), "1"),
		withCount(std("notDeleted", ""), "1"),
		withCount(std("plain", ""), "1"),
		withCount(std("transient", ""), "1"),
		fifo("f-head", "G", ""),
		fifo("f-next", "G", ""),
	}
	mover := &fakeMover{notSent: map[string]bool{"notSent": true}, notDeleted: map[string]bool{"notDeleted": true}}
	ch := &fakeChanger{}
	var buf syncBuffer
	var mu sync.Mutex
	moved := map[string]error{}
	opts := Options{
		Logger: slog.New(slog.NewJSONHandler(&buf, nil)),
		Pacing: Pacing{Changer: ch},
		DeadLetter: DeadLetter{Mover: mover, OnMove: func(_ context.Context, m events.SQSMessage, err error) {
			mu.Lock()
			defer mu.Unlock()
			moved[m.MessageId] = err
		}},
	}
	resp, err := SQS(fn, opts)(t.Context(), events.SQSEvent{Records: recs})
	if err != nil {
		t.Fatal(err)
	}
	if len(mover.calls) != 1 {
		t.Fatalf("MoveToDeadLetter called %d times, want once", len(mover.calls))
	}
	var asked []string
	for _, m := range mover.calls[0] {
		asked = append(asked, m.Message.MessageId)
		if m.Reason != errs[m.Message.MessageId].Error() {
			t.Errorf("%s: reason %q, want the record's error", m.Message.MessageId, m.Reason)
		}
	}
	if want := []string{"perm", "marked", "notSent", "notDeleted", "f-head"}; !slices.Equal(asked, want) {
		t.Errorf("moves asked for %q, want the permanent failures that started %q", asked, want)
	}
	types := map[string]string{}
	for _, m := range mover.calls[0] {
		types[m.Message.MessageId] = m.ErrorType
	}
	if types["perm"] != "batch.keyError" || types["marked"] != "*errors.errorString" {
		t.Errorf("error types %v: want the permanent error's type, the marked error's for Permanent", types)
	}
	// Sent (deleted or not): out of the failures, not paced.
	if got, want := failedIDs(t, resp), []string{"notSent", "plain", "transient", "f-next"}; !slices.Equal(got, want) {
		t.Errorf("failed = %q, want %q", got, want)
	}
	var paced []string
	for _, c := range ch.only(t) {
		paced = append(paced, c.MessageID)
	}
	if want := []string{"notSent", "plain", "transient", "f-next"}; !slices.Equal(paced, want) {
		t.Errorf("paced %q, want the failures still reported %q", paced, want)
	}
	for id, want := range map[string]error{"perm": nil, "marked": nil, "f-head": nil, "notDeleted": ErrNotDeleted} {
		if got, ok := moved[id]; !ok || (want == nil) != (got == nil) || (want != nil && !errors.Is(got, want)) {
			t.Errorf("OnMove for %s: %v (called %v), want %v", id, got, ok, want)
		}
	}
	if got := moved["notSent"]; got == nil || errors.Is(got, ErrNotDeleted) {
		t.Errorf("OnMove for notSent: %v, want its send error", got)
	}
	lines := 0
	for _, l := range logLines(t, buf.buffer()) {
		if strings.HasPrefix(l["msg"].(string), "batch: message moved to the dead-letter queue") {
			lines++
		}
		if strings.HasPrefix(l["msg"].(string), "batch: moves to the dead-letter queue failed") && (l["failed"] != float64(1) || l["messageId"] != "notSent") {
			t.Errorf("failed-moves line %v", l)
		}
	}
	if lines != 4 {
		t.Errorf("%d lines for moved messages, want 4", lines)
	}
}

// TestDeadLetterWholeBatch: a batch whose every record was moved is not a
// failed batch; one whose moves all failed is.
func TestDeadLetterWholeBatch(t *testing.T) {
	fn := func(context.Context, events.SQSMessage) (string, error) { return "", Permanent(errRecord) }
	recs := []events.SQSMessage{std("m1", ""), std("m2", "")}
	resp, err := SQS(fn, Options{Logger: quiet(), DeadLetter: DeadLetter{Mover: &fakeMover{}}})(t.Context(), events.SQSEvent{Records: recs})
	if err != nil || len(resp.BatchItemFailures) != 0 {
		t.Errorf("every record moved: %v, %v; want no failure and no error", resp, err)
	}
	for _, m := range []*fakeMover{{notSent: map[string]bool{"m1": true, "m2": true}}, {panics: true}} {
		resp, err = SQS(fn, Options{Logger: quiet(), DeadLetter: DeadLetter{Mover: m}})(t.Context(), events.SQSEvent{Records: recs})
		checkErr(t, resp, err, len(recs))
		if len(resp.BatchItemFailures) != 2 {
			t.Errorf("moves failed (mover panics %v): %v, want both records failed", m.panics, resp)
		}
	}
}

// TestDeadLetterWithinReserve: with no time left before the records'
// deadline, no move is asked for and the messages stay failed.
func TestDeadLetterWithinReserve(t *testing.T) {
	const reserve = 200 * time.Millisecond
	ctx, cancel := context.WithDeadline(t.Context(), time.Now().Add(2*reserve))
	defer cancel()
	fn := func(ctx context.Context, m events.SQSMessage) (string, error) {
		<-ctx.Done()
		return "", Permanent(ctx.Err())
	}
	mover := &fakeMover{}
	var got error
	opts := Options{MinRemaining: time.Nanosecond, Reserve: reserve, Logger: quiet(),
		DeadLetter: DeadLetter{Mover: mover, OnMove: func(_ context.Context, _ events.SQSMessage, err error) { got = err }}}
	resp, err := SQS(fn, opts)(ctx, events.SQSEvent{Records: []events.SQSMessage{std("m1", ""), std("m2", "ok")}})
	checkErr(t, resp, err, 2)
	if len(mover.calls) != 0 || !errors.Is(got, ErrReserveReached) {
		t.Errorf("%d mover calls, OnMove err %v; want none and ErrReserveReached", len(mover.calls), got)
	}
}

func TestPermanent(t *testing.T) {
	if Permanent(nil) != nil {
		t.Error("Permanent(nil) is not nil")
	}
	err := Permanent(errRecord)
	if !errors.Is(err, errRecord) || err.Error() != errRecord.Error() {
		t.Errorf("Permanent(err) = %v: want err's message and chain", err)
	}
	if p := permanent(fmt.Errorf("x: %w", err)); p == nil {
		t.Error("a wrapped Permanent error is not permanent")
	}
	if p := permanent(transient{err}); p != nil {
		t.Error("the first PermanentError in the chain says false, and still permanent")
	}
	if err := (Options{DeadLetter: DeadLetter{OnMove: func(context.Context, events.SQSMessage, error) {}}}).Validate(); err == nil {
		t.Error("OnMove without a Mover is valid")
	}
}
