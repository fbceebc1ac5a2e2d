package batch

import (
	"context"
	"errors"
	"log/slog"
	"strings"
	"testing"
	"time"

	"github.com/aws/aws-lambda-go/events"
)

// TestKeepVisibleAtLambdaDeadline: with zero-value options (only the
// Changer set) at Lambda's default 3 s timeout, the message of a record
// that runs 2 s is kept invisible every third of the records' window, to
// the window from then; a quick record's message is never changed; no
// change is made once a record finished, and the failed record's pacing
// change is the last one its message gets.
func TestKeepVisibleAtLambdaDeadline(t *testing.T) {
	ch := &fakeChanger{}
	ctx, cancel := context.WithTimeout(t.Context(), 3*time.Second)
	defer cancel()
	fn := func(ctx context.Context, m events.SQSMessage) (string, error) {
		if m.MessageId == "quick" {
			return "", nil
		}
		select {
		case <-time.After(2 * time.Second):
		case <-ctx.Done():
			return "", ctx.Err()
		}
		return "", errRecord
	}
	recs := []events.SQSMessage{withCount(std("quick", ""), "1"), withCount(std("slow", ""), "1")}
	resp, err := SQS(fn, Options{Logger: quiet(), Pacing: Pacing{Changer: ch}})(ctx, events.SQSEvent{Records: recs})
	if err != nil {
		t.Fatal(err)
	}
	if got := failedIDs(t, resp); len(got) != 1 || got[0] != "slow" {
		t.Fatalf("failed = %q, want slow", got)
	}
	ch.mu.Lock()
	calls := ch.calls
	ch.mu.Unlock()
	if len(calls) < 3 {
		t.Fatalf("%d calls, want at least two keeping slow's message invisible, then pacing", len(calls))
	}
	for i, call := range calls[:len(calls)-1] {
		for _, c := range call {
			if c.MessageID != "slow" {
				t.Errorf("call %d changed %s: a finished record's message", i, c.MessageID)
			}
			// The window: 3 s less the reserve, from the handler's start.
			if c.Timeout < 2400*time.Millisecond || c.Timeout > 2500*time.Millisecond {
				t.Errorf("call %d: timeout %v, want the records' window, about 2.5 s", i, c.Timeout)
			}
		}
	}
	last := calls[len(calls)-1]
	if len(last) != 1 || last[0].MessageID != "slow" || last[0].Timeout < DefaultPacingBase/2 {
		t.Errorf("last call %+v: want pacing's backoff for slow", last)
	}
	t.Logf("a 2 s record at a 3 s deadline: %d calls keeping its message invisible", len(calls)-1)
}

// TestKeepVisibleOff: a negative Every, or no Changer, makes no change
// while records run.
func TestKeepVisibleOff(t *testing.T) {
	ch := &fakeChanger{}
	fn := func(context.Context, events.SQSMessage) (string, error) {
		time.Sleep(300 * time.Millisecond)
		return "", nil
	}
	h := SQS(fn, Options{Logger: quiet(), Pacing: Pacing{Changer: ch}, KeepVisible: KeepVisible{Every: -1}})
	if _, err := h(t.Context(), events.SQSEvent{Records: []events.SQSMessage{std("m", "")}}); err != nil {
		t.Fatal(err)
	}
	if len(ch.calls) != 0 {
		t.Errorf("%d calls with KeepVisible.Every < 0, want none", len(ch.calls))
	}
}

// TestKeepVisibleWithoutDeadline: without a deadline the zero values are
// every 10 s to 30 s; an explicit Every keeps every unfinished record's
// message (running, or waiting for its turn) invisible, and a failed
// change is logged once without changing any record's outcome.
func TestKeepVisibleWithoutDeadline(t *testing.T) {
	if every, timeout, ok := (KeepVisible{}).intervals(0, false); !ok || every != DefaultKeepVisibleEvery || timeout != 30*time.Second {
		t.Errorf("zero value without a deadline: every %v, timeout %v, on %v; want 10 s, 30 s, on", every, timeout, ok)
	}
	if _, _, ok := (KeepVisible{}).intervals(-time.Second, true); ok {
		t.Error("a window already over keeps messages invisible")
	}
	ch := &fakeChanger{fail: map[string]error{"b": errors.New("queue down")}}
	var buf syncBuffer
	fn := func(context.Context, events.SQSMessage) (string, error) {
		time.Sleep(250 * time.Millisecond)
		return "", nil
	}
	h := SQS(fn, Options{Concurrency: 1, Logger: slog.New(slog.NewJSONHandler(&buf, nil)),
		Pacing: Pacing{Changer: ch}, KeepVisible: KeepVisible{Every: 100 * time.Millisecond}})
	resp, err := h(t.Context(), events.SQSEvent{Records: []events.SQSMessage{std("a", ""), std("b", "")}})
	if err != nil || len(resp.BatchItemFailures) != 0 {
		t.Fatalf("%+v, %v: want both records to succeed", resp, err)
	}
	ch.mu.Lock()
	first := ch.calls[0]
	n := len(ch.calls)
	ch.mu.Unlock()
	// While a runs, b waits for its turn: both are kept invisible.
	if len(first) != 2 || first[0].Timeout != 300*time.Millisecond {
		t.Errorf("first call %+v: want a and b, to 3 × Every", first)
	}
	if n < 3 {
		t.Errorf("%d calls over 500 ms at 100 ms, want at least 3", n)
	}
	if got := strings.Count(buf.String(), "keeping messages invisible failed"); got != 1 {
		t.Errorf("%d log lines for the failed changes, want 1:\n%s", got, buf.String())
	}
	if strings.Contains(buf.String(), `"body"`) {
		t.Error("a log line quotes a body")
	}
}

func TestKeepVisibleValidate(t *testing.T) {
	for _, kv := range []KeepVisible{
		{Timeout: -time.Second},
		{Timeout: 13 * time.Hour},
		{Every: time.Second, Timeout: time.Second},
	} {
		if err := (Options{KeepVisible: kv}).Validate(); err == nil || !strings.Contains(err.Error(), "KeepVisible") {
			t.Errorf("%+v: %v, want an error naming KeepVisible", kv, err)
		}
	}
	if err := (Options{KeepVisible: KeepVisible{Every: -1}}).Validate(); err != nil {
		t.Errorf("Every -1 (off): %v", err)
	}
}
