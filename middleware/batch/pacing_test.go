package batch

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"log/slog"
	"math/rand/v2"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"testing/synctest"
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
		"forever":  inProgress{at: time.Date(9999, 12, 31, 23, 59, 59, 999999000, time.UTC)}, // a lease kept for good: Sub saturates
		"unknown":  inProgress{},                                                             // no lease end: backs off
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
		withCount(std("forever", ""), "1"),
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
		"far":      MaxVisibilityTimeout - pacingTimeout - limitMargin, // see TestPacingVisibilityLimit
		"forever":  MaxVisibilityTimeout - pacingTimeout - limitMargin,
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
	ctx, cancel := context.WithDeadline(t.Context(), start.Add(30*time.Second))
	defer cancel()
	ch := &fakeChanger{}
	recs := []events.SQSMessage{withCount(std("m1", ""), "7"), withCount(std("m2", ""), "7")}
	opts := Options{MinRemaining: time.Minute, Logger: quiet(), Pacing: Pacing{Changer: ch}}
	resp, err := newProcessor(byBody, opts, func() time.Time { return start }, half).handle(ctx, events.SQSEvent{Records: recs})
	checkErr(t, resp, err, len(recs))
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
	checkErr(t, resp, err, 1)
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
	resp, err := SQS(fn, opts)(ctx, events.SQSEvent{Records: []events.SQSMessage{std("m1", ""), std("m2", "")}})
	checkErr(t, resp, err, 2)
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

// blockingChanger changes nothing until its context ends, and then reports
// every change failed with the context's error: a changer slower than the
// time the invocation has left.
type blockingChanger struct {
	mu       sync.Mutex
	calls    int
	deadline time.Time // the deadline of the context of the last call
	hasDL    bool
}

func (b *blockingChanger) ChangeVisibility(ctx context.Context, changes []VisibilityChange) []error {
	b.mu.Lock()
	b.calls++
	b.deadline, b.hasDL = ctx.Deadline()
	b.mu.Unlock()
	<-ctx.Done()
	errs := make([]error, len(changes))
	for i := range errs {
		errs[i] = ctx.Err()
	}
	return errs
}

// TestPacingWithinReserve runs invocations whose deadline lands while the
// handler paces: the handler returns Reserve before the deadline, with the
// visibility changes cut short or skipped, and says which in its log.
func TestPacingWithinReserve(t *testing.T) {
	const reserve = 300 * time.Millisecond
	tests := []struct {
		name      string
		recordFn  func(ctx context.Context, m events.SQSMessage) (string, error)
		wantCalls int
		wantLog   string
		wantErr   error // what OnChange sees for every change
	}{
		{
			// The records are quick: the changer starts with time left and
			// is stopped at the records' deadline.
			name:      "cut short",
			recordFn:  func(context.Context, events.SQSMessage) (string, error) { return "", errRecord },
			wantCalls: 1,
			wantLog:   "batch: pacing cut short",
			wantErr:   context.DeadlineExceeded,
		},
		{
			// A record runs until its context ends: no time is left for
			// the changes, and none is asked for.
			name: "skipped",
			recordFn: func(ctx context.Context, m events.SQSMessage) (string, error) {
				if m.MessageId == "m1" {
					<-ctx.Done()
					return "", ctx.Err()
				}
				return "", errRecord
			},
			wantCalls: 0,
			wantLog:   "batch: pacing skipped",
			wantErr:   ErrReserveReached,
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				deadline := time.Now().Add(3 * reserve)
				ctx, cancel := context.WithDeadline(t.Context(), deadline)
				defer cancel()
				var buf syncBuffer
				var mu sync.Mutex
				seen := map[string]error{}
				ch := &blockingChanger{}
				opts := Options{
					MinRemaining: time.Nanosecond,
					Reserve:      reserve,
					Logger:       slog.New(slog.NewJSONHandler(&buf, nil)),
					Pacing: Pacing{Changer: ch, OnChange: func(_ context.Context, c VisibilityChange, err error) {
						mu.Lock()
						defer mu.Unlock()
						seen[c.MessageID] = err
					}},
					KeepVisible: KeepVisible{Every: -1}, // pacing's calls only
				}
				recs := []events.SQSMessage{withCount(std("m1", ""), "1"), withCount(std("m2", ""), "1"), withCount(std("m3", ""), "1")}
				resp, err := SQS(tt.recordFn, opts)(ctx, events.SQSEvent{Records: recs})
				returned := time.Now()
				checkErr(t, resp, err, len(recs))
				if !returned.Before(deadline) {
					t.Errorf("the handler returned %v after the invocation's deadline: Lambda would lose its response", returned.Sub(deadline))
				}
				if got := failedIDs(t, resp); !slices.Equal(got, []string{"m1", "m2", "m3"}) {
					t.Errorf("failed = %q, want every record", got)
				}
				ch.mu.Lock()
				calls, dl, hasDL := ch.calls, ch.deadline, ch.hasDL
				ch.mu.Unlock()
				if calls != tt.wantCalls {
					t.Errorf("ChangeVisibility called %d times, want %d", calls, tt.wantCalls)
				}
				if calls > 0 && (!hasDL || !dl.Equal(deadline.Add(-reserve))) {
					t.Errorf("the changes ran under a deadline %v (set %v), want the invocation's minus Reserve, %v", dl, hasDL, deadline.Add(-reserve))
				}
				for _, id := range []string{"m1", "m2", "m3"} {
					if err, ok := seen[id]; !ok || !errors.Is(err, tt.wantErr) {
						t.Errorf("OnChange for %s: %v (called %v), want %v", id, err, ok, tt.wantErr)
					}
				}
				var found bool
				for _, l := range logLines(t, buf.buffer()) {
					if strings.HasPrefix(l["msg"].(string), tt.wantLog) {
						found = l["level"] == "WARN" && l["changes"] == float64(3)
					}
				}
				if !found {
					t.Errorf("no WARN line %q with changes=3 in the log:\n%s", tt.wantLog, buf.String())
				}
			})
		})
	}
}

// syncBuffer is a bytes.Buffer safe for concurrent writes.
type syncBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (s *syncBuffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

func (s *syncBuffer) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
}

func (s *syncBuffer) buffer() *bytes.Buffer {
	s.mu.Lock()
	defer s.mu.Unlock()
	return bytes.NewBufferString(s.b.String())
}

// TestPacingVisibilityLimit checks that no change asks for more than SQS
// accepts: 12 hours since the message was received, counted to the latest
// moment the call can be made (the records' deadline), less a second for
// the clocks, in whole seconds.
func TestPacingVisibilityLimit(t *testing.T) {
	now := time.Now()
	deadline := now.Add(time.Minute)
	callBy := deadline.Add(-DefaultReserve)
	ms := func(t time.Time) string { return strconv.FormatInt(t.UnixMilli(), 10) }
	rec := func(id string, attrs map[string]string) events.SQSMessage {
		m := std(id, "")
		m.ReceiptHandle = "rh-" + id
		m.Attributes = attrs
		return m
	}
	limit := func(received time.Time) time.Duration {
		return (MaxVisibilityTimeout - callBy.Sub(received) - time.Second).Truncate(time.Second)
	}
	firstRecv := now.Add(-11*time.Hour - 50*time.Minute)
	recs := []events.SQSMessage{
		// In progress for two days: the timeout stops at the limit.
		rec("held", map[string]string{"ApproximateReceiveCount": "1", "ApproximateFirstReceiveTimestamp": ms(firstRecv)}),
		// Received three times, first 11h50m ago: the limit counts from the
		// first receive, which is never after this one.
		rec("again", map[string]string{"ApproximateReceiveCount": "3", "ApproximateFirstReceiveTimestamp": ms(firstRecv)}),
		// No receive time: its send time, earlier still.
		rec("sent", map[string]string{"ApproximateReceiveCount": "9", "SentTimestamp": ms(now.Add(-11*time.Hour - 49*time.Minute))}),
		// First received 13 hours ago: no change can be proven to fit.
		rec("old", map[string]string{"ApproximateReceiveCount": "20", "ApproximateFirstReceiveTimestamp": ms(now.Add(-13 * time.Hour))}),
		// Not started: 0 always fits.
		rec("unstarted", map[string]string{"ApproximateReceiveCount": "20", "ApproximateFirstReceiveTimestamp": ms(now.Add(-13 * time.Hour))}),
		// Received a minute ago: the backoff fits.
		rec("fresh", map[string]string{"ApproximateReceiveCount": "1", "ApproximateFirstReceiveTimestamp": ms(now.Add(-time.Minute))}),
	}
	fn := func(_ context.Context, m events.SQSMessage) (string, error) {
		if m.MessageId == "held" {
			return "", inProgress{at: now.Add(48 * time.Hour)}
		}
		return "", errRecord
	}
	ctx, cancel := context.WithDeadline(t.Context(), deadline)
	defer cancel()
	ch := &fakeChanger{}
	var mu sync.Mutex
	skipped := map[string]error{}
	opts := Options{Concurrency: 1, Logger: quiet(), Pacing: Pacing{
		Changer: ch, Base: time.Hour, Cap: 10 * time.Hour, Jitter: 1e-9,
		OnChange: func(_ context.Context, c VisibilityChange, err error) {
			mu.Lock()
			defer mu.Unlock()
			if err != nil {
				skipped[c.MessageID] = err
			}
		},
	}}
	p := newProcessor(func(ctx context.Context, m events.SQSMessage) (string, error) {
		if m.MessageId == "unstarted" {
			panic("not reached")
		}
		return fn(ctx, m)
	}, opts, func() time.Time { return now }, half)
	// "unstarted" follows "old" in a FIFO group, so it is not started.
	for i := range recs {
		recs[i].EventSourceARN = fifoARN
		recs[i].Attributes["MessageGroupId"] = recs[i].MessageId
	}
	recs[4].Attributes["MessageGroupId"] = "old"
	resp, err := p.handle(ctx, events.SQSEvent{Records: recs})
	checkErr(t, resp, err, len(recs))
	got := map[string]time.Duration{}
	for _, c := range ch.only(t) {
		got[c.MessageID] = c.Timeout
	}
	want := map[string]time.Duration{
		"held":      limit(firstRecv),
		"again":     limit(firstRecv),
		"sent":      limit(now.Add(-11*time.Hour - 49*time.Minute)),
		"unstarted": 0,
	}
	for id, w := range want {
		if g, ok := got[id]; !ok || g != w {
			t.Errorf("%s: timeout %v (asked %v), want %v", id, g, ok, w)
		}
		if w%time.Second != 0 || w > MaxVisibilityTimeout {
			t.Fatalf("bad expectation %v", w)
		}
	}
	if g := got["fresh"]; g > time.Hour || g < time.Hour-time.Second {
		t.Errorf("fresh: timeout %v, want its backoff, 1h less a tiny jitter", g)
	}
	if _, ok := got["old"]; ok {
		t.Errorf("a change was asked for a message received 13 hours ago: SQS refuses it")
	}
	if err := skipped["old"]; !errors.Is(err, ErrVisibilityLimit) {
		t.Errorf("OnChange for old: %v, want ErrVisibilityLimit", err)
	}
}
