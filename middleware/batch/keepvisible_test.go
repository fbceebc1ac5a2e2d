package batch

import (
	"context"
	"errors"
	"log/slog"
	"slices"
	"strings"
	"sync"
	"testing"
	"testing/synctest"
	"time"

	"github.com/aws/aws-lambda-go/events"
)

// timedChanger is a fakeChanger that records when each call was made.
type timedChanger struct {
	fakeChanger
	tmu sync.Mutex
	at  []time.Time
}

func (c *timedChanger) ChangeVisibility(ctx context.Context, changes []VisibilityChange) []error {
	c.tmu.Lock()
	c.at = append(c.at, time.Now())
	c.tmu.Unlock()
	return c.fakeChanger.ChangeVisibility(ctx, changes)
}

// calls returns the calls made and when, after the handler returned.
func (c *timedChanger) record() ([][]VisibilityChange, []time.Time) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.tmu.Lock()
	defer c.tmu.Unlock()
	return slices.Clone(c.calls), slices.Clone(c.at)
}

// atLambdaDeadline runs a quick record and a slow one (2 s, then failing)
// at Lambda's default 3 s timeout on synctest's clock, with kv, and returns
// the changer's calls, when each was made, and the invocation's start.
func atLambdaDeadline(t *testing.T, kv KeepVisible) ([][]VisibilityChange, []time.Time, time.Time) {
	t.Helper()
	ch := &timedChanger{}
	start := time.Now()
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
	resp, err := SQS(fn, Options{Logger: quiet(), Pacing: Pacing{Changer: ch}, KeepVisible: kv})(ctx, events.SQSEvent{Records: recs})
	if err != nil {
		t.Fatal(err)
	}
	if got := failedIDs(t, resp); len(got) != 1 || got[0] != "slow" {
		t.Fatalf("failed = %q, want slow", got)
	}
	calls, at := ch.record()
	if len(calls) == 0 {
		t.Fatal("no call: want pacing's for slow at least")
	}
	last := calls[len(calls)-1]
	if len(last) != 1 || last[0].MessageID != "slow" || last[0].Timeout < DefaultPacingBase/2 {
		t.Errorf("last call %+v: want pacing's backoff for slow", last)
	}
	return calls[:len(calls)-1], at[:len(at)-1], start
}

// TestKeepVisibleNeverShortensQueue: with zero-value options (only the
// Changer set) at Lambda's default 3 s timeout, the handler does not know
// the queue's visibility timeout, which Lambda requires to be at least the
// function's: no change is made before the invocation's deadline, so a
// 2 s record's message keeps the visibility the queue gave it (at 833 ms
// changes to 2.5 s from then used to bring it back after about 5 s when
// the queue's timeout was 18 s). The failed record's pacing change is the
// only one its message gets.
func TestKeepVisibleNeverShortensQueue(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		if kept, at, start := atLambdaDeadline(t, KeepVisible{}); len(kept) != 0 {
			t.Errorf("%d changes keeping messages invisible before the deadline (first %v after the start: %+v), want none", len(kept), at[0].Sub(start), kept[0])
		}
	})
}

// TestKeepVisibleQueueTimeout: with the queue's visibility timeout known,
// a change is made only when it ends after that timeout from the
// invocation's start: none for a 2 s record on an 18 s queue; on a 1 s
// queue the slow record's message is kept invisible every third of the
// records' window (833 ms), to about the window from then (2.5 s), each change
// ending after the queue's 1 s; a finished record's message is never
// changed.
func TestKeepVisibleQueueTimeout(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		if kept, _, _ := atLambdaDeadline(t, KeepVisible{QueueTimeout: 18 * time.Second}); len(kept) != 0 {
			t.Errorf("queue timeout 18 s: %d changes %+v, want none", len(kept), kept)
		}
		kept, at, start := atLambdaDeadline(t, KeepVisible{QueueTimeout: time.Second})
		if len(kept) != 2 {
			t.Fatalf("queue timeout 1 s: %d changes, want two (at 833 ms and 1.67 s)", len(kept))
		}
		for i, call := range kept {
			for _, c := range call {
				if c.MessageID != "slow" || c.Timeout < 2400*time.Millisecond || c.Timeout > 2500*time.Millisecond {
					t.Errorf("call %d: %+v, want slow's message to the records' window, 2.5 s", i, c)
				}
				if end := at[i].Add(c.Timeout); !end.After(start.Add(time.Second)) {
					t.Errorf("call %d ends %v after the start, before the queue's 1 s", i, end.Sub(start))
				}
			}
		}
	})
}

// TestKeepVisibleAfterDeadline: without the queue's timeout, a record
// still running after the invocation's deadline (as on Lambda Managed
// Instances, which do not stop it) has its message kept invisible from
// the deadline on.
func TestKeepVisibleAfterDeadline(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		ch := &timedChanger{}
		start := time.Now()
		ctx, cancel := context.WithTimeout(t.Context(), 3*time.Second)
		defer cancel()
		fn := func(ctx context.Context, m events.SQSMessage) (string, error) {
			time.Sleep(5 * time.Second) // ignores its context
			return "", nil
		}
		if _, err := SQS(fn, Options{Logger: quiet(), Pacing: Pacing{Changer: ch}})(ctx, events.SQSEvent{Records: []events.SQSMessage{std("slow", "")}}); err != nil {
			t.Fatal(err)
		}
		calls, at := ch.record()
		if len(calls) == 0 {
			t.Fatal("no change for a record running past its deadline")
		}
		for i := range calls {
			if at[i].Before(start.Add(3 * time.Second)) {
				t.Errorf("call %d at %v, before the deadline", i, at[i].Sub(start))
			}
		}
	})
}

// TestKeepVisibleTimeoutBelowDefaultEvery: a Timeout below the default
// interval, with the zero Every, derives an interval below it, with a
// deadline (the 833 ms of a 3 s invocation is not below 800 ms) and
// without one (10 s); the changes are made, each to Timeout (keeping
// visible used to be silently off).
func TestKeepVisibleTimeoutBelowDefaultEvery(t *testing.T) {
	kv := KeepVisible{Timeout: 800 * time.Millisecond}
	for _, hasDeadline := range []bool{true, false} {
		if every, timeout, ok := kv.intervals(2500*time.Millisecond, hasDeadline); !ok || every <= 0 || every >= timeout || timeout != kv.Timeout {
			t.Errorf("deadline %v: every %v, timeout %v, on %v; want on, every below 800 ms", hasDeadline, every, timeout, ok)
		}
	}
	synctest.Test(t, func(t *testing.T) {
		ch := &timedChanger{}
		fn := func(context.Context, events.SQSMessage) (string, error) {
			time.Sleep(2 * time.Second)
			return "", nil
		}
		if _, err := SQS(fn, Options{Logger: quiet(), Pacing: Pacing{Changer: ch}, KeepVisible: kv})(t.Context(), events.SQSEvent{Records: []events.SQSMessage{std("m", "")}}); err != nil {
			t.Fatal(err)
		}
		calls, at := ch.record()
		if len(calls) < 2 {
			t.Fatalf("%d changes over a 2 s record with Timeout 800 ms, want several", len(calls))
		}
		prev := at[0].Add(-time.Nanosecond)
		for i, call := range calls {
			if len(call) != 1 || call[0].Timeout != kv.Timeout {
				t.Errorf("call %d: %+v, want m's message to 800 ms", i, call)
			}
			if i > 0 && at[i].Sub(prev) >= kv.Timeout {
				t.Errorf("call %d came %v after the previous one, not below the timeout", i, at[i].Sub(prev))
			}
			prev = at[i]
		}
	})
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
		{Timeout: time.Microsecond},
		{Every: MaxVisibilityTimeout},
		{QueueTimeout: -time.Second},
		{QueueTimeout: 13 * time.Hour},
	} {
		if err := (Options{KeepVisible: kv}).Validate(); err == nil || !strings.Contains(err.Error(), "KeepVisible") {
			t.Errorf("%+v: %v, want an error naming KeepVisible", kv, err)
		}
	}
	if err := (Options{KeepVisible: KeepVisible{Every: -1}}).Validate(); err != nil {
		t.Errorf("Every -1 (off): %v", err)
	}
}
