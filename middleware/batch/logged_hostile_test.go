package batch

import (
	"context"
	"log/slog"
	"slices"
	"testing"

	"github.com/aws/aws-lambda-go/events"
)

// nilLogged is an error type whose Logged dereferences its receiver: a
// typed nil of it panics there.
type nilLogged struct{ logged bool }

func (e *nilLogged) Error() string { return "failed" }
func (e *nilLogged) Logged() bool  { return e.logged }

// TestHostileLogged: a record whose error panics in its Logged method is
// reported failed and logged. Before, the panic in the record's goroutine
// ended the process.
func TestHostileLogged(t *testing.T) {
	fn := func(_ context.Context, m events.SQSMessage) (string, error) {
		if m.MessageId == "hostile" {
			return "", (*nilLogged)(nil)
		}
		return "", nil
	}
	var buf syncBuffer
	resp, err := SQS(fn, Options{Logger: slog.New(slog.NewJSONHandler(&buf, nil))})(t.Context(),
		events.SQSEvent{Records: []events.SQSMessage{std("ok", ""), std("hostile", "")}})
	if err != nil {
		t.Fatal(err)
	}
	if got, want := failedIDs(t, resp), []string{"hostile"}; !slices.Equal(got, want) {
		t.Errorf("failed = %q, want %q", got, want)
	}
	logged := false
	for _, l := range logLines(t, buf.buffer()) {
		logged = logged || l["msg"] == "batch: record failed" && l["messageId"] == "hostile"
	}
	if !logged {
		t.Error("the failure was not logged")
	}
}
