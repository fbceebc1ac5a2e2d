package batch

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"log/slog"
	"math/rand/v2"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/aws/aws-lambda-go/events"
)

// fakeChanger records the changes it is asked for and fails those whose
// message id is in fail.
type fakeChanger struct {
	mu     sync.Mutex
	calls  [][]VisibilityChange
	ctxErr []error // ctx.Err() at each call
	fail   map[string]error
	panics bool
	short  bool // return too few errors
}

func (f *fakeChanger) ChangeVisibility(ctx context.Context, changes []VisibilityChange) []error {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.calls = append(f.calls, slices.Clone(changes))
	f.ctxErr = append(f.ctxErr, ctx.Err())
	if f.panics {
		panic("changer down")
	}
	if f.short {
		return []error{errors.New("one")}
	}
	var errs []error
	for i, c := range changes {
		if err := f.fail[c.MessageID]; err != nil {
			if errs == nil {
				errs = make([]error, len(changes))
			}
			errs[i] = err
		}
	}
	return errs
}

func (f *fakeChanger) only(t *testing.T) []VisibilityChange {
	t.Helper()
	f.mu.Lock()
	defer f.mu.Unlock()
	if len(f.calls) != 1 {
		t.Fatalf("ChangeVisibility called %d times, want once per invocation", len(f.calls))
	}
	return f.calls[0]
}

// inProgress is an error that knows when a new attempt can succeed, as
// idempotency.InProgressError does.
type inProgress struct{ at time.Time }

func (e inProgress) Error() string      { return "in progress until " + e.at.String() }
func (e inProgress) RetryAt() time.Time { return e.at }

// withCount sets a record's ApproximateReceiveCount.
func withCount(m events.SQSMessage, n string) events.SQSMessage {
	m.Attributes = map[string]string{"ApproximateReceiveCount": n}
	m.ReceiptHandle = "rh-" + m.MessageId
	return m
}

func half() float64 { return 0.5 }

func TestPacingTimeouts(t *testing.T) {
	now := time.Now()
	errs := map[string]error{
		"inprog":   fmt.Errorf("wrapped: %w", inProgress{at: now.Add(90 * time.Second)}),
		"past":     inProgress{at: now.Add(-time.Minute)},
		"far":      inProgress{at: now.Add(48 * time.Hour)},
		"unknown":  inProgress{}, // no lease end: backs off
		"first":    errRecord,
		"third":    errRecord,
		"hundred":  errRecord,
		"garbage":  errRecord,
		"f-head":   errRecord,
		"panicker": nil,
	}
	fn := func(_ context.Context, m events.SQSMessage) (string, error) {
		if m.MessageId == "panicker" {
			panic("boom")
		}
		return "", errs[m.MessageId]
	}
	fifoRec := func(id string) events.SQSMessage {
		m := fifo(id, "G", "")
		m.ReceiptHandle = "rh-" + id
		m.Attributes["ApproximateReceiveCount"] = "2"
		return m
	}
	recs := []events.SQSMessage{
		withCount(std("ok", ""), "1"),
		withCount(std("inprog", ""), "4"),
		withCount(std("past", ""), "1"),
		withCount(std("far", ""), "1"),
		withCount(std("unknown", ""), "2"),
		withCount(std("first", ""), "1"),
		withCount(std("third", ""), "3"),
		withCount(std("hundred", ""), "100"),
		withCount(std("garbage", ""), "x"),
		withCount(std("panicker", ""), "2"),
		fifoRec("f-head"),
		fifoRec("f-next"),
	}
	ch := &fakeChanger{}
	opts := Options{Logger: quiet(), Pacing: Pacing{Changer: ch}}
	resp, err := newProcessor(fn, opts, func() time.Time { return now }, half).handle(t.Context(), events.SQSEvent{Records: recs})
	if err != nil {
		t.Fatal(err)
	}
	jitterAfterLease := time.Duration(0.5 * DefaultPacingJitter * float64(DefaultPacingBase)) // 2.5 s
	backoff := func(d time.Duration) time.Duration { return d - time.Duration(0.5*DefaultPacingJitter*float64(d)) }
	want := map[string]time.Duration{
		"inprog":   90*time.Second + jitterAfterLease,
		"past":     jitterAfterLease,
		"far":      MaxVisibilityTimeout,
		"unknown":  backoff(20 * time.Second),
		"first":    backoff(10 * time.Second),
		"third":    backoff(40 * time.Second),
		"hundred":  backoff(DefaultPacingCap),
		"garbage":  backoff(10 * time.Second),
		"panicker": backoff(20 * time.Second),
		"f-head":   backoff(20 * time.Second),
		"f-next":   0, // not started: its group's head failed
	}
	got := map[string]time.Duration{}
	var order []string
	for _, c := range ch.only(t) {
		got[c.MessageID] = c.Timeout
		order = append(order, c.MessageID)
		if c.ReceiptHandle != "rh-"+c.MessageID || c.EventSourceARN == "" {
			t.Errorf("%s: change %+v does not carry the record's receipt handle and queue", c.MessageID, c)
		}
	}
	for id, w := range want {
		if g, ok := got[id]; !ok || g != w {
			t.Errorf("%s: timeout %v (present %v), want %v", id, g, ok, w)
		}
	}
	if _, ok := got["ok"]; ok {
		t.Error("a record that succeeded had its visibility changed")
	}
	if failed := failedIDs(t, resp); !slices.Equal(failed, order) {
		t.Errorf("changes for %q, want one per failed record in event order %q", order, failed)
	}
}

func TestPacingNotStarted(t *testing.T) {
	start := time.Now()
	ctx, cancel := context.WithDeadline(t.Context(), start.Add(DefaultMinRemaining/2))
	defer cancel()
	ch := &fakeChanger{}
	recs := []events.SQSMessage{withCount(std("m1", ""), "7"), withCount(std("m2", ""), "7")}
	opts := Options{Logger: quiet(), Pacing: Pacing{Changer: ch}}
	if _, err := newProcessor(byBody, opts, func() time.Time { return start }, half).handle(ctx, events.SQSEvent{Records: recs}); err != nil {
		t.Fatal(err)
	}
	for _, c := range ch.only(t) {
		if c.Timeout != 0 {
			t.Errorf("%s not started for lack of time: timeout %v, want 0 (another invocation can run it now)", c.MessageID, c.Timeout)
		}
	}
}

func TestPacingJitterBounds(t *testing.T) {
	p := Pacing{Jitter: 0.3}.withDefaults()
	now := time.Now()
	r := rand.New(rand.NewPCG(1, 2))
	msg := withCount(std("m", ""), "3")
	lo, hi := time.Duration(0.7*float64(40*time.Second)), 40*time.Second
	seenLow, seenHigh := false, false
	for range 10000 {
		d := p.timeout(&msg, errRecord, true, now, r.Float64)
		if d < lo || d > hi {
			t.Fatalf("backoff %v outside [%v, %v]", d, lo, hi)
		}
		seenLow = seenLow || d < lo+time.Second
		seenHigh = seenHigh || d > hi-time.Second
		at := inProgress{at: now.Add(time.Minute)}
		if d := p.timeout(&msg, at, true, now, r.Float64); d < time.Minute || d > time.Minute+3*time.Second {
			t.Fatalf("in-progress timeout %v outside [1m, 1m3s]", d)
		}
	}
	if !seenLow || !seenHigh {
		t.Errorf("10000 draws did not reach both ends of [%v, %v]: not jittered across the range", lo, hi)
	}
}

func TestPacingFailuresDoNotChangeOutcomes(t *testing.T) {
	recs := []events.SQSMessage{
		withCount(std("m1", "fail"), "1"), withCount(std("m2", ""), "1"), withCount(std("m3", "fail"), "1"),
	}
	tests := []struct {
		name string
		ch   *fakeChanger
		want []string // messages whose change OnChange saw fail
	}{
		{"one fails", &fakeChanger{fail: map[string]error{"m3": errors.New("ReceiptHandleIsInvalid")}}, []string{"m3"}},
		{"changer panics", &fakeChanger{panics: true}, []string{"m1", "m3"}},
		{"wrong number of errors", &fakeChanger{short: true}, []string{"m1", "m3"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var buf bytes.Buffer
			var mu sync.Mutex
			var seen, failed []string
			opts := Options{
				Logger: slog.New(slog.NewJSONHandler(&buf, nil)),
				Pacing: Pacing{Changer: tt.ch, OnChange: func(_ context.Context, c VisibilityChange, err error) {
					mu.Lock()
					defer mu.Unlock()
					seen = append(seen, c.MessageID)
					if err != nil {
						failed = append(failed, c.MessageID)
					}
				}},
			}
			resp, err := SQS(byBody, opts)(t.Context(), events.SQSEvent{Records: recs})
			if err != nil {
				t.Fatal(err)
			}
			if got := failedIDs(t, resp); !slices.Equal(got, []string{"m1", "m3"}) {
				t.Errorf("failed = %q, want [m1 m3] whatever became of the visibility changes", got)
			}
			if !slices.Equal(seen, []string{"m1", "m3"}) || !slices.Equal(failed, tt.want) {
				t.Errorf("OnChange saw %q, failed %q; want [m1 m3], failed %q", seen, failed, tt.want)
			}
			var warn map[string]any
			for _, l := range logLines(t, &buf) {
				if strings.HasPrefix(l["msg"].(string), "batch: visibility changes failed") {
					if warn != nil {
						t.Error("more than one log line for the failed visibility changes of one invocation")
					}
					warn = l
				}
			}
			if warn == nil || warn["level"] != "WARN" || warn["failed"] != float64(len(tt.want)) || warn["changes"] != float64(2) {
				t.Errorf("log line for the failed changes = %v, want one WARN with failed=%d changes=2", warn, len(tt.want))
			}
		})
	}
}

func TestPacingOnChangePanicContained(t *testing.T) {
	ch := &fakeChanger{}
	opts := Options{Logger: quiet(), Pacing: Pacing{Changer: ch, OnChange: func(context.Context, VisibilityChange, error) { panic("hook") }}}
	resp, err := SQS(byBody, opts)(t.Context(), events.SQSEvent{Records: []events.SQSMessage{std("m1", "fail")}})
	if err != nil {
		t.Fatal(err)
	}
	if got := failedIDs(t, resp); !slices.Equal(got, []string{"m1"}) {
		t.Errorf("failed = %q, want [m1]", got)
	}
}

func TestPacingSkippedWithoutFailures(t *testing.T) {
	ch := &fakeChanger{}
	opts := Options{Logger: quiet(), Pacing: Pacing{Changer: ch}}
	if _, err := SQS(byBody, opts)(t.Context(), events.SQSEvent{Records: []events.SQSMessage{std("m1", ""), std("m2", "")}}); err != nil {
		t.Fatal(err)
	}
	if len(ch.calls) != 0 {
		t.Errorf("ChangeVisibility called %d times for a batch without failures, want 0", len(ch.calls))
	}
}

func TestPacingAfterCancellation(t *testing.T) {
	// The records ran out of time: the changes still go out, on a context of
	// their own.
	ctx, cancel := context.WithCancel(t.Context())
	ch := &fakeChanger{}
	fn := func(context.Context, events.SQSMessage) (string, error) {
		cancel()
		return "", errRecord
	}
	opts := Options{Logger: quiet(), Concurrency: 1, Pacing: Pacing{Changer: ch}}
	if _, err := SQS(fn, opts)(ctx, events.SQSEvent{Records: []events.SQSMessage{std("m1", ""), std("m2", "")}}); err != nil {
		t.Fatal(err)
	}
	if got := ch.only(t); len(got) != 2 || got[1].Timeout != 0 {
		t.Errorf("changes = %+v, want m1 backed off and m2 (not started) at 0", got)
	}
	if err := ch.ctxErr[0]; err != nil {
		t.Errorf("ChangeVisibility got a done context (%v): its changes could not be made", err)
	}
}

func TestPacingValidate(t *testing.T) {
	for _, tt := range []struct {
		p    Pacing
		want string // "" = valid
	}{
		{Pacing{}, ""},
		{Pacing{Base: time.Second, Cap: time.Second, Jitter: 1}, ""},
		{Pacing{Base: -1}, "Pacing.Base"},
		{Pacing{Cap: 13 * time.Hour}, "Pacing.Cap"},
		{Pacing{Jitter: 1.5}, "Pacing.Jitter"},
		{Pacing{Jitter: -0.1}, "Pacing.Jitter"},
		{Pacing{Base: time.Hour}, "above Pacing.Cap"},
	} {
		err := Options{Pacing: tt.p}.Validate()
		if (err == nil) != (tt.want == "") || (err != nil && !strings.Contains(err.Error(), tt.want)) {
			t.Errorf("Validate(%+v) = %v, want an error naming %q", tt.p, err, tt.want)
		}
	}
}
