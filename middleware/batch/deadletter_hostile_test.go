package batch

import (
	"context"
	"slices"
	"strings"
	"testing"

	"github.com/aws/aws-lambda-go/events"
)

// nilErr is an error type whose methods dereference their receiver: a
// typed nil of it panics in Error (and Permanent).
type nilErr struct{ msg string }

func (e *nilErr) Error() string   { return e.msg }
func (e *nilErr) Permanent() bool { return e.msg != "" }

// TestDeadLetterHostileErrors: a record whose error panics in its Error or
// Permanent method does not take the handler down with DeadLetter on, as
// it does not without it: a permanent one is moved with a reason saying
// so, one whose permanence is unknown stays failed. Before, the panic
// escaped the handler and failed the whole batch, the records that
// succeeded included, at every delivery.
func TestDeadLetterHostileErrors(t *testing.T) {
	errs := map[string]error{
		"error-panics":     Permanent((*nilErr)(nil)), // marked permanent; its text panics
		"permanent-panics": (*nilErr)(nil),            // its Permanent panics
		"fine":             Permanent(errRecord),
	}
	fn := func(_ context.Context, m events.SQSMessage) (string, error) { return "", errs[m.MessageId] }
	recs := []events.SQSMessage{std("ok", ""), std("error-panics", ""), std("permanent-panics", ""), std("fine", "")}
	mover := &fakeMover{}
	ch := &fakeChanger{}
	var resp events.SQSEventResponse
	var err error
	func() {
		defer func() {
			if v := recover(); v != nil {
				t.Fatalf("the handler panicked: %v", v)
			}
		}()
		resp, err = SQS(fn, Options{Logger: quiet(), Pacing: Pacing{Changer: ch}, DeadLetter: DeadLetter{Mover: mover}})(t.Context(), events.SQSEvent{Records: recs})
	}()
	if err != nil {
		t.Fatal(err)
	}
	if got, want := failedIDs(t, resp), []string{"permanent-panics"}; !slices.Equal(got, want) {
		t.Errorf("failed = %q, want %q", got, want)
	}
	if len(mover.calls) != 1 {
		t.Fatalf("%d mover calls, want 1", len(mover.calls))
	}
	var asked []string
	for _, m := range mover.calls[0] {
		asked = append(asked, m.Message.MessageId)
		if m.Message.MessageId == "error-panics" && (!strings.Contains(m.Reason, "panicked") || m.ErrorType != "*batch.nilErr") {
			t.Errorf("reason %q, type %q: want one saying the error's text panicked, and its type", m.Reason, m.ErrorType)
		}
	}
	if want := []string{"error-panics", "fine"}; !slices.Equal(asked, want) {
		t.Errorf("moves asked for %q, want %q", asked, want)
	}
}
