package batch

import (
	"bytes"
	"context"
	"errors"
	"log/slog"
	"strings"
	"testing"
	"testing/synctest"
	"time"

	"github.com/aws/aws-lambda-go/events"
)

// TestMinRemainingFor: zero follows the window (a quarter, at most 10 s);
// a positive value is kept.
func TestMinRemainingFor(t *testing.T) {
	for _, tt := range []struct {
		minRemaining, window, want time.Duration
	}{
		{0, 2500 * time.Millisecond, 625 * time.Millisecond}, // Lambda's default 3 s timeout
		{0, 500 * time.Millisecond, 125 * time.Millisecond},  // its 1 s minimum
		{0, 40 * time.Second, 10 * time.Second},
		{0, 15 * time.Minute, DefaultMinRemaining},
		{0, 0, 0},
		{0, -time.Second, 0},
		{90 * time.Second, time.Second, 90 * time.Second},
		{time.Nanosecond, time.Hour, time.Nanosecond},
	} {
		if got := MinRemainingFor(tt.minRemaining, tt.window); got != tt.want {
			t.Errorf("MinRemainingFor(%v, %v) = %v, want %v", tt.minRemaining, tt.window, got, tt.want)
		}
	}
}

// TestCheckTimeout: the default starts a record at every timeout Lambda
// takes; an explicit MinRemaining is refused, with its figures, at a
// timeout whose window is below it.
func TestCheckTimeout(t *testing.T) {
	for _, timeout := range []time.Duration{time.Second, 3 * time.Second, 15 * time.Minute} {
		if err := (Options{}).CheckTimeout(timeout); err != nil {
			t.Errorf("Options{} at %v: %v", timeout, err)
		}
	}
	if err := (Options{MinRemaining: 2 * time.Second}).CheckTimeout(3 * time.Second); err != nil {
		t.Errorf("2s of a 2.5s window: %v", err)
	}
	err := Options{MinRemaining: 10 * time.Second}.CheckTimeout(3 * time.Second)
	if err == nil {
		t.Fatal("MinRemaining 10s at a 3s timeout: no error")
	}
	for _, want := range []string{"3s", "2.5s", "500ms", "10s", "10.5s"} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("%v: does not name %s", err, want)
		}
	}
	if err := (Options{Reserve: 2 * time.Second}).CheckTimeout(time.Second); err == nil || !strings.Contains(err.Error(), "Reserve") {
		t.Errorf("a reserve above the timeout: %v", err)
	}
	if err := (Options{MinRemaining: -1}).CheckTimeout(time.Minute); err == nil {
		t.Error("invalid options: no error")
	}
}

// TestSQSThreeSecondDefaults: with Options{} and Lambda's default 3 s
// timeout, a batch of ten records that take 100 ms each, two at a time,
// all run (the old fixed 10 s threshold started none), and a record not
// started is logged with the figures, never the body. It runs on
// synctest's clock: a loaded machine does not stretch the sleeps.
func TestSQSThreeSecondDefaults(t *testing.T) { synctest.Test(t, testSQSThreeSecondDefaults) }

func testSQSThreeSecondDefaults(t *testing.T) {
	ctx, cancel := context.WithTimeout(t.Context(), 3*time.Second)
	defer cancel()
	var recs []events.SQSMessage
	for i := range 10 {
		recs = append(recs, std(string(rune('a'+i)), "secret body"))
	}
	fn := func(ctx context.Context, m events.SQSMessage) (int, error) {
		time.Sleep(100 * time.Millisecond)
		return 0, nil
	}
	resp, err := SQS(fn, Options{Concurrency: 2})(ctx, events.SQSEvent{Records: recs})
	if err != nil || len(resp.BatchItemFailures) != 0 {
		t.Fatalf("Options{} at 3 s: %v, %v", resp, err)
	}

	// A record whose turn comes with less than a quarter of the window
	// left is not started: the first takes 2 s of the 2.5 s window, the
	// second finds 500 ms, below 625 ms.
	var buf bytes.Buffer
	clock := &fakeClock{t: time.Now()}
	ctx2, cancel2 := context.WithDeadline(t.Context(), clock.now().Add(3*time.Second))
	defer cancel2()
	slow := func(ctx context.Context, m events.SQSMessage) (int, error) {
		clock.advance(2 * time.Second)
		return 0, nil
	}
	opts := Options{Concurrency: 1, Logger: slog.New(slog.NewJSONHandler(&buf, nil))}
	resp, err = newSQS(slow, opts, clock.now)(ctx2, events.SQSEvent{Records: recs[:2]})
	if err != nil || len(resp.BatchItemFailures) != 1 || resp.BatchItemFailures[0].ItemIdentifier != "b" {
		t.Fatalf("second record after 2 s of a 2.5 s window: %+v, %v", resp, err)
	}
	if strings.Contains(buf.String(), "secret") {
		t.Errorf("the log quotes a body:\n%s", buf.String())
	}
	lines := logLines(t, &buf)
	if len(lines) != 1 {
		t.Fatalf("log: %s", buf.String())
	}
	l := lines[0]
	if l["msg"] != "batch: record not started" || l["level"] != "WARN" || l["messageId"] != "b" ||
		l["left"] != "500ms" || l["min_remaining"] != "625ms" || l["window"] != "2.5s" {
		t.Errorf("log line %v, want a WARN with left 500ms, min_remaining 625ms, window 2.5s", l)
	}
	if e, _ := l["error"].(string); !strings.Contains(e, "500ms left") || !strings.Contains(e, "625ms") {
		t.Errorf("error %q: want the figures", e)
	}
}

// TestDeadlineErrorIs: a record's deadline error is ErrDeadline.
func TestDeadlineErrorIs(t *testing.T) {
	var err error = &deadlineError{left: time.Second, minRemaining: 2 * time.Second, window: 3 * time.Second}
	if !errors.Is(err, ErrDeadline) || errors.Is(err, ErrGroupFailed) {
		t.Errorf("%v: Is(ErrDeadline) %v, Is(ErrGroupFailed) %v", err, errors.Is(err, ErrDeadline), errors.Is(err, ErrGroupFailed))
	}
}

// TestNotStarted: the three reasons a record is not started, and nothing
// else.
func TestNotStarted(t *testing.T) {
	ctx, cancel := context.WithCancel(t.Context())
	cancel()
	var errs []error
	rec := func(_ context.Context, _ events.SQSMessage, err error) { errs = append(errs, err) }
	_, _ = SQS(func(context.Context, events.SQSMessage) (int, error) { return 0, nil },
		Options{Concurrency: 1, Logger: quiet(), OnRecord: rec})(ctx, events.SQSEvent{Records: []events.SQSMessage{std("m", "")}})
	if len(errs) != 1 || !NotStarted(errs[0]) {
		t.Errorf("canceled: %v", errs)
	}
	for _, err := range []error{ErrDeadline, ErrGroupFailed, &deadlineError{}} {
		if !NotStarted(err) {
			t.Errorf("NotStarted(%v) = false", err)
		}
	}
	for _, err := range []error{nil, errors.New("boom"), &PanicError{Value: 1}, context.Canceled} {
		if NotStarted(err) {
			t.Errorf("NotStarted(%v) = true", err)
		}
	}
}
