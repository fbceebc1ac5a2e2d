package batch

import (
	"context"
	"log/slog"
	"slices"
	"strings"
	"testing"

	"github.com/aws/aws-lambda-go/events"
)

// nilUnwrap is an error type whose Unwrap dereferences its receiver: a
// typed nil of it panics in every errors.Is and errors.As.
type nilUnwrap struct{ err error }

func (e *nilUnwrap) Error() string { return "failed" }
func (e *nilUnwrap) Unwrap() error { return e.err }

// TestHostileChain: a record whose error panics when unwrapped is
// reported failed and logged, and moved when it was marked permanent.
// Before, errors.As on it in the record's goroutine (logging its failure)
// ended the process, in any configuration.
func TestHostileChain(t *testing.T) {
	errs := map[string]error{
		"hostile":   (*nilUnwrap)(nil),
		"permanent": Permanent((*nilUnwrap)(nil)),
	}
	fn := func(_ context.Context, m events.SQSMessage) (string, error) { return "", errs[m.MessageId] }
	var buf syncBuffer
	mover := &fakeMover{}
	ch := &fakeChanger{}
	resp, err := SQS(fn, Options{Logger: slog.New(slog.NewJSONHandler(&buf, nil)), Pacing: Pacing{Changer: ch}, DeadLetter: DeadLetter{Mover: mover}})(t.Context(),
		events.SQSEvent{Records: []events.SQSMessage{std("ok", ""), std("hostile", ""), std("permanent", "")}})
	if err != nil {
		t.Fatal(err)
	}
	if got, want := failedIDs(t, resp), []string{"hostile"}; !slices.Equal(got, want) {
		t.Errorf("failed = %q, want %q", got, want)
	}
	if len(mover.calls) != 1 || len(mover.calls[0]) != 1 || mover.calls[0][0].Message.MessageId != "permanent" ||
		!strings.Contains(mover.calls[0][0].Reason, "panics when unwrapped") {
		t.Errorf("moves %+v, want the permanent one, its reason saying its error panics", mover.calls)
	}
	logged := false
	for _, l := range logLines(t, buf.buffer()) {
		logged = logged || l["msg"] == "batch: record failed" && l["messageId"] == "hostile"
	}
	if !logged {
		t.Error("the failure was not logged")
	}
	if c := ch.only(t); len(c) != 1 || c[0].MessageID != "hostile" {
		t.Errorf("changes %+v, want hostile's", c)
	}
}
