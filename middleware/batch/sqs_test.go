package batch

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"runtime"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/aws/aws-lambda-go/events"
	"github.com/aws/aws-lambda-go/lambda"

	"github.com/sqsonce/sqsonce/internal/redact"
)

var update = flag.Bool("update", false, "rewrite testdata/*.golden from the current output")

const (
	standardARN = "arn:aws:sqs:eu-west-1:123456789012:jobs"
	fifoARN     = "arn:aws:sqs:eu-west-1:123456789012:jobs.fifo"
)

// failsafe bounds a wait that only a bug can make long: it turns a deadlock
// into a test failure. It is never used to assert timing.
const failsafe = 10 * time.Second

var errRecord = errors.New("record failed")

// std is a standard-queue record.
func std(id, body string) events.SQSMessage {
	return events.SQSMessage{MessageId: id, Body: body, EventSourceARN: standardARN, EventSource: "aws:sqs"}
}

// fifo is a FIFO-queue record of message group group.
func fifo(id, group, body string) events.SQSMessage {
	return events.SQSMessage{
		MessageId:      id,
		Body:           body,
		EventSourceARN: fifoARN,
		EventSource:    "aws:sqs",
		Attributes:     map[string]string{"MessageGroupId": group},
	}
}

// byBody succeeds, fails or panics as the record's body says.
func byBody(_ context.Context, msg events.SQSMessage) (string, error) {
	switch msg.Body {
	case "fail":
		return "", errRecord
	case "panic":
		panic("boom " + msg.MessageId)
	}
	return "done " + msg.MessageId, nil
}

// quiet is a logger that drops everything.
func quiet() *slog.Logger { return slog.New(slog.DiscardHandler) }

// checkErr fails t unless err is what the handler must return with resp for
// a batch of n records: a *FullBatchFailureError with every record's error
// when all n failed, nil otherwise.
func checkErr(t *testing.T, resp events.SQSEventResponse, err error, n int) {
	t.Helper()
	if n > 0 && len(resp.BatchItemFailures) == n {
		var full *FullBatchFailureError
		if !errors.As(err, &full) || len(full.Errs) != n {
			t.Fatalf("every record failed: err = %v, want a *FullBatchFailureError with %d errors", err, n)
		}
		return
	}
	if err != nil {
		t.Fatalf("handler error = %v, want nil", err)
	}
}

// failedIDs returns the itemIdentifiers of resp, failing t if the slice is nil.
func failedIDs(t *testing.T, resp events.SQSEventResponse) []string {
	t.Helper()
	if resp.BatchItemFailures == nil {
		t.Fatal("BatchItemFailures is nil; want a non-nil slice")
	}
	ids := make([]string, 0, len(resp.BatchItemFailures))
	for _, f := range resp.BatchItemFailures {
		ids = append(ids, f.ItemIdentifier)
	}
	return ids
}

// recorder collects what the record function and OnRecord saw, safely for
// concurrent use.
type recorder struct {
	mu      sync.Mutex
	calls   []string           // messageIds passed to the record function, in call order
	results map[string][]error // OnRecord's err per messageId, one entry per call
}

func newRecorder() *recorder { return &recorder{results: map[string][]error{}} }

func (r *recorder) wrap(fn func(context.Context, events.SQSMessage) (string, error)) func(context.Context, events.SQSMessage) (string, error) {
	return func(ctx context.Context, msg events.SQSMessage) (string, error) {
		r.mu.Lock()
		r.calls = append(r.calls, msg.MessageId)
		r.mu.Unlock()
		return fn(ctx, msg)
	}
}

func (r *recorder) onRecord(_ context.Context, msg events.SQSMessage, err error) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.results[msg.MessageId] = append(r.results[msg.MessageId], err)
}

// called returns the called messageIds, sorted.
func (r *recorder) called() []string {
	r.mu.Lock()
	defer r.mu.Unlock()
	return slices.Sorted(slices.Values(r.calls))
}

// only returns the single OnRecord error for id, failing t unless OnRecord
// saw id exactly once.
func (r *recorder) only(t *testing.T, id string) error {
	t.Helper()
	r.mu.Lock()
	defer r.mu.Unlock()
	errs := r.results[id]
	if len(errs) != 1 {
		t.Fatalf("OnRecord called %d times for %q, want 1", len(errs), id)
	}
	return errs[0]
}

func TestSQSOutcomes(t *testing.T) {
	tests := []struct {
		name       string
		records    []events.SQSMessage
		opts       Options
		wantFailed []string
		wantCalled []string // sorted
	}{
		{
			name:       "nil records",
			records:    nil,
			wantFailed: []string{},
			wantCalled: []string{},
		},
		{
			name:       "all succeed",
			records:    []events.SQSMessage{std("m1", "ok"), std("m2", "ok"), std("m3", "ok")},
			wantFailed: []string{},
			wantCalled: []string{"m1", "m2", "m3"},
		},
		{
			name:       "one fails",
			records:    []events.SQSMessage{std("m1", "ok"), std("m2", "fail"), std("m3", "ok")},
			wantFailed: []string{"m2"},
			wantCalled: []string{"m1", "m2", "m3"},
		},
		{
			name:       "all fail",
			records:    []events.SQSMessage{std("m1", "fail"), std("m2", "panic"), std("m3", "fail")},
			wantFailed: []string{"m1", "m2", "m3"},
			wantCalled: []string{"m1", "m2", "m3"},
		},
		{
			name:       "failures listed in event order",
			records:    []events.SQSMessage{std("z", "fail"), std("a", "ok"), std("m", "fail"), std("b", "panic")},
			wantFailed: []string{"z", "m", "b"},
			wantCalled: []string{"a", "b", "m", "z"},
		},
		{
			name:       "sequential when Concurrency is 1",
			records:    []events.SQSMessage{std("m1", "fail"), std("m2", "ok"), std("m3", "fail")},
			opts:       Options{Concurrency: 1},
			wantFailed: []string{"m1", "m3"},
			wantCalled: []string{"m1", "m2", "m3"},
		},
		{
			name:       "standard failure does not stop the next record",
			records:    []events.SQSMessage{std("m1", "fail"), std("m2", "ok")},
			opts:       Options{Concurrency: 1},
			wantFailed: []string{"m1"},
			wantCalled: []string{"m1", "m2"},
		},
		{
			name:       "empty messageId is still reported",
			records:    []events.SQSMessage{std("", "fail"), std("m2", "ok")},
			wantFailed: []string{""},
			wantCalled: []string{"", "m2"},
		},
		{
			name: "fifo skip after failure within the group only",
			records: []events.SQSMessage{
				fifo("a1", "A", "ok"), fifo("b1", "B", "ok"), fifo("a2", "A", "fail"),
				fifo("b2", "B", "ok"), fifo("a3", "A", "ok"), fifo("a4", "A", "ok"),
			},
			wantFailed: []string{"a2", "a3", "a4"},
			wantCalled: []string{"a1", "a2", "b1", "b2"},
		},
		{
			name:       "fifo panic stops its group",
			records:    []events.SQSMessage{fifo("a1", "A", "panic"), fifo("a2", "A", "ok"), fifo("b1", "B", "ok")},
			wantFailed: []string{"a1", "a2"},
			wantCalled: []string{"a1", "b1"},
		},
		{
			name:       "fifo records without a group share one",
			records:    []events.SQSMessage{fifo("x1", "", "fail"), fifo("x2", "", "ok")},
			wantFailed: []string{"x1", "x2"},
			wantCalled: []string{"x1"},
		},
		{
			name:       "same group id in a standard queue does not chain",
			records:    []events.SQSMessage{withGroup(std("s1", "fail"), "A"), withGroup(std("s2", "ok"), "A")},
			wantFailed: []string{"s1"},
			wantCalled: []string{"s1", "s2"},
		},
		{
			name: "standard and fifo records in one event",
			records: []events.SQSMessage{
				std("s1", "fail"), fifo("a1", "A", "fail"), std("s2", "ok"), fifo("a2", "A", "ok"),
			},
			wantFailed: []string{"s1", "a1", "a2"},
			wantCalled: []string{"a1", "s1", "s2"},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			rec := newRecorder()
			opts := tt.opts
			opts.Logger = quiet()
			opts.OnRecord = rec.onRecord
			h := SQS(rec.wrap(byBody), opts)

			resp, err := h(t.Context(), events.SQSEvent{Records: tt.records})
			checkErr(t, resp, err, len(tt.records))
			if got := failedIDs(t, resp); !slices.Equal(got, tt.wantFailed) {
				t.Errorf("failed = %q, want %q", got, tt.wantFailed)
			}
			if got := rec.called(); !slices.Equal(got, tt.wantCalled) {
				t.Errorf("called = %q, want %q", got, tt.wantCalled)
			}
			for _, m := range tt.records {
				err := rec.only(t, m.MessageId)
				if wantFail := slices.Contains(tt.wantFailed, m.MessageId); (err != nil) != wantFail {
					t.Errorf("OnRecord(%q) err = %v, want failure %v", m.MessageId, err, wantFail)
				}
			}
		})
	}
}

func withGroup(m events.SQSMessage, group string) events.SQSMessage {
	m.Attributes = map[string]string{"MessageGroupId": group}
	return m
}

// TestSQSEmptyEventJSON checks the wire form: an empty list, never null.
func TestSQSEmptyEventJSON(t *testing.T) {
	h := SQS(byBody, Options{Logger: quiet()})
	for _, ev := range []events.SQSEvent{{}, {Records: []events.SQSMessage{}}, {Records: []events.SQSMessage{std("m1", "ok")}}} {
		resp, err := h(t.Context(), ev)
		if err != nil {
			t.Fatal(err)
		}
		got, err := json.Marshal(resp)
		if err != nil {
			t.Fatal(err)
		}
		if want := `{"batchItemFailures":[]}`; string(got) != want {
			t.Errorf("%d records: response = %s, want %s", len(ev.Records), got, want)
		}
	}
}

// TestSQSReportsInEventOrder makes records finish in reverse order and
// checks that the failures are still listed in event order.
func TestSQSReportsInEventOrder(t *testing.T) {
	const n = 6
	done := make([]chan struct{}, n)
	var records []events.SQSMessage
	for i := range n {
		done[i] = make(chan struct{})
		records = append(records, std(fmt.Sprint(i), ""))
	}
	var finished []string
	var mu sync.Mutex
	fn := func(ctx context.Context, msg events.SQSMessage) (int, error) {
		var i int
		fmt.Sscan(msg.MessageId, &i)
		defer close(done[i])
		if i+1 < n {
			select {
			case <-done[i+1]:
			case <-time.After(failsafe):
				t.Error("records did not run concurrently")
			}
		}
		mu.Lock()
		finished = append(finished, msg.MessageId)
		mu.Unlock()
		return i, errRecord
	}
	resp, err := SQS(fn, Options{Concurrency: n, Logger: quiet()})(t.Context(), events.SQSEvent{Records: records})
	checkErr(t, resp, err, len(records))
	if want := []string{"5", "4", "3", "2", "1", "0"}; !slices.Equal(finished, want) {
		t.Fatalf("finish order = %q, want %q", finished, want)
	}
	if got, want := failedIDs(t, resp), []string{"0", "1", "2", "3", "4", "5"}; !slices.Equal(got, want) {
		t.Errorf("failed = %q, want %q", got, want)
	}
}

func TestSQSConcurrencyBound(t *testing.T) {
	tests := []struct {
		name        string
		concurrency int
		records     int
		wantMax     int
	}{
		{"sequential", 1, 20, 1},
		{"bounded", 4, 50, 4},
		{"default", 0, 40, DefaultConcurrency},
		{"fewer records than the bound", 16, 5, 5},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var inFlight, maxInFlight, calls atomic.Int64
			entered := make(chan struct{}, tt.records)
			gate := make(chan struct{})
			fn := func(ctx context.Context, msg events.SQSMessage) (struct{}, error) {
				calls.Add(1)
				storeMax(&maxInFlight, inFlight.Add(1))
				entered <- struct{}{}
				<-gate
				runtime.Gosched()
				inFlight.Add(-1)
				return struct{}{}, nil
			}
			var records []events.SQSMessage
			for i := range tt.records {
				records = append(records, std(fmt.Sprint("m", i), ""))
			}
			h := SQS(fn, Options{Concurrency: tt.concurrency, Logger: quiet()})

			type result struct {
				resp events.SQSEventResponse
				err  error
			}
			out := make(chan result, 1)
			go func() {
				resp, err := h(t.Context(), events.SQSEvent{Records: records})
				out <- result{resp, err}
			}()
			// Wait until the bound is reached with every record held at the gate.
			for range tt.wantMax {
				select {
				case <-entered:
				case <-time.After(failsafe):
					t.Fatalf("only %d records ever in flight, want %d", maxInFlight.Load(), tt.wantMax)
				}
			}
			close(gate)
			r := <-out
			if r.err != nil {
				t.Fatal(r.err)
			}
			if got := failedIDs(t, r.resp); len(got) != 0 {
				t.Errorf("failed = %q, want none", got)
			}
			if got := calls.Load(); got != int64(tt.records) {
				t.Errorf("calls = %d, want %d", got, tt.records)
			}
			if got := maxInFlight.Load(); got != int64(tt.wantMax) {
				t.Errorf("max in flight = %d, want %d", got, tt.wantMax)
			}
		})
	}
}

// storeMax raises m to v if v is larger.
func storeMax(m *atomic.Int64, v int64) {
	for {
		old := m.Load()
		if v <= old || m.CompareAndSwap(old, v) {
			return
		}
	}
}

func TestSQSFIFOOrderWithinGroup(t *testing.T) {
	groups := []string{"A", "B", "C", "D"}
	var records []events.SQSMessage
	want := map[string][]string{}
	for i := range 5 {
		for _, g := range groups {
			id := fmt.Sprintf("%s%d", strings.ToLower(g), i)
			records = append(records, fifo(id, g, ""))
			want[g] = append(want[g], id)
		}
	}
	for _, concurrency := range []int{1, 2, 4, 8} {
		t.Run(fmt.Sprint("concurrency ", concurrency), func(t *testing.T) {
			var mu sync.Mutex
			got := map[string][]string{}
			active := map[string]int{}
			fn := func(ctx context.Context, msg events.SQSMessage) (bool, error) {
				g := msg.Attributes["MessageGroupId"]
				mu.Lock()
				active[g]++
				if active[g] > 1 {
					t.Errorf("group %s has %d records in flight", g, active[g])
				}
				got[g] = append(got[g], msg.MessageId)
				mu.Unlock()
				runtime.Gosched()
				mu.Lock()
				active[g]--
				mu.Unlock()
				return true, nil
			}
			resp, err := SQS(fn, Options{Concurrency: concurrency, Logger: quiet()})(t.Context(), events.SQSEvent{Records: records})
			if err != nil {
				t.Fatal(err)
			}
			if f := failedIDs(t, resp); len(f) != 0 {
				t.Errorf("failed = %q, want none", f)
			}
			for _, g := range groups {
				if !slices.Equal(got[g], want[g]) {
					t.Errorf("group %s ran %q, want %q", g, got[g], want[g])
				}
			}
		})
	}
}

// TestSQSFIFOGroupsInterleave shows two groups in flight at once: the first
// record of each waits until the other has started, which deadlocks if
// groups ran one after another.
func TestSQSFIFOGroupsInterleave(t *testing.T) {
	started := map[string]chan struct{}{"a1": make(chan struct{}), "b1": make(chan struct{})}
	other := map[string]string{"a1": "b1", "b1": "a1"}
	var calls []string
	var mu sync.Mutex
	fn := func(ctx context.Context, msg events.SQSMessage) (int, error) {
		mu.Lock()
		calls = append(calls, msg.MessageId)
		mu.Unlock()
		if ch, ok := started[msg.MessageId]; ok {
			close(ch)
			select {
			case <-started[other[msg.MessageId]]:
			case <-time.After(failsafe):
				return 0, errors.New("the other group never started")
			}
		}
		return 0, nil
	}
	records := []events.SQSMessage{
		fifo("a1", "A", ""), fifo("a2", "A", ""), fifo("a3", "A", ""),
		fifo("b1", "B", ""), fifo("b2", "B", ""),
	}
	resp, err := SQS(fn, Options{Concurrency: 2, Logger: quiet()})(t.Context(), events.SQSEvent{Records: records})
	if err != nil {
		t.Fatal(err)
	}
	if f := failedIDs(t, resp); len(f) != 0 {
		t.Fatalf("failed = %q, want none", f)
	}
	// Both groups started before either finished its first record.
	if len(calls) != len(records) {
		t.Fatalf("calls = %q, want every record", calls)
	}
	if got := slices.Sorted(slices.Values(calls[:2])); !slices.Equal(got, []string{"a1", "b1"}) {
		t.Errorf("first two calls = %q, want a1 and b1", calls[:2])
	}
}

// fakeClock is a clock that moves only when told to.
type fakeClock struct {
	mu sync.Mutex
	t  time.Time
}

func (c *fakeClock) now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.t
}

func (c *fakeClock) advance(d time.Duration) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.t = c.t.Add(d)
}

func TestSQSDeadline(t *testing.T) {
	type outcome struct {
		id  string
		err error // nil: succeeded; otherwise errors.Is target
	}
	tests := []struct {
		name         string
		records      []events.SQSMessage
		minRemaining time.Duration
		deadlineIn   time.Duration // zero: no deadline
		advance      map[string]time.Duration
		want         []outcome
	}{
		{
			name:    "no deadline",
			records: []events.SQSMessage{std("m1", ""), std("m2", "")},
			advance: map[string]time.Duration{"m1": 100 * time.Hour},
			want:    []outcome{{"m1", nil}, {"m2", nil}},
		},
		{
			name:       "ample time",
			records:    []events.SQSMessage{std("m1", ""), std("m2", "")},
			deadlineIn: time.Hour,
			want:       []outcome{{"m1", nil}, {"m2", nil}},
		},
		{
			name:         "too little time for any record",
			records:      []events.SQSMessage{std("m1", ""), std("m2", "")},
			minRemaining: time.Minute,
			deadlineIn:   30 * time.Second,
			want:         []outcome{{"m1", ErrDeadline}, {"m2", ErrDeadline}},
		},
		{
			// Lambda's default timeout: a window of 2.5 s, so records
			// start while 625 ms are left. Each takes 500 ms: m4 starts
			// with 1 s left, m5 finds 500 ms.
			name:       "the default follows a 3 s invocation",
			records:    []events.SQSMessage{std("m1", ""), std("m2", ""), std("m3", ""), std("m4", ""), std("m5", "")},
			deadlineIn: 3 * time.Second,
			advance: map[string]time.Duration{"m1": 500 * time.Millisecond, "m2": 500 * time.Millisecond,
				"m3": 500 * time.Millisecond, "m4": 500 * time.Millisecond},
			want: []outcome{{"m1", nil}, {"m2", nil}, {"m3", nil}, {"m4", nil}, {"m5", ErrDeadline}},
		},
		{
			// The default's boundary: m2 starts with exactly a quarter of
			// the 2.5 s window left, m3 with a nanosecond less.
			name:       "the default's boundary",
			records:    []events.SQSMessage{std("m1", ""), std("m2", ""), std("m3", "")},
			deadlineIn: 3 * time.Second,
			advance:    map[string]time.Duration{"m1": 1875 * time.Millisecond, "m2": time.Nanosecond},
			want:       []outcome{{"m1", nil}, {"m2", nil}, {"m3", ErrDeadline}},
		},
		{
			name:       "time runs short mid-batch",
			records:    []events.SQSMessage{std("m1", ""), std("m2", ""), std("m3", ""), std("m4", "")},
			deadlineIn: time.Hour,
			advance:    map[string]time.Duration{"m2": time.Hour - 5*time.Second},
			want:       []outcome{{"m1", nil}, {"m2", nil}, {"m3", ErrDeadline}, {"m4", ErrDeadline}},
		},
		{
			// m2 starts with exactly MinRemaining left before the records'
			// deadline (the context's minus the reserve); m3 with a
			// nanosecond less.
			name:         "custom MinRemaining boundary",
			records:      []events.SQSMessage{std("m1", ""), std("m2", ""), std("m3", "")},
			minRemaining: time.Minute,
			deadlineIn:   time.Hour,
			advance:      map[string]time.Duration{"m1": 59*time.Minute - DefaultReserve, "m2": time.Nanosecond},
			want:         []outcome{{"m1", nil}, {"m2", nil}, {"m3", ErrDeadline}},
		},
		{
			name: "fifo group stopped by the deadline",
			records: []events.SQSMessage{
				fifo("a1", "A", ""), fifo("a2", "A", ""), fifo("a3", "A", ""), fifo("b1", "B", ""),
			},
			deadlineIn: time.Hour,
			advance:    map[string]time.Duration{"a1": time.Hour},
			want:       []outcome{{"a1", nil}, {"a2", ErrDeadline}, {"a3", ErrGroupFailed}, {"b1", ErrDeadline}},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			start := time.Now()
			clock := &fakeClock{t: start}
			ctx := t.Context()
			if tt.deadlineIn != 0 {
				var cancel context.CancelFunc
				ctx, cancel = context.WithDeadline(ctx, start.Add(tt.deadlineIn))
				defer cancel()
			}
			rec := newRecorder()
			fn := rec.wrap(func(ctx context.Context, msg events.SQSMessage) (string, error) {
				clock.advance(tt.advance[msg.MessageId])
				return "", nil
			})
			opts := Options{Concurrency: 1, MinRemaining: tt.minRemaining, Logger: quiet(), OnRecord: rec.onRecord}
			resp, err := newSQS(fn, opts, clock.now)(ctx, events.SQSEvent{Records: tt.records})
			checkErr(t, resp, err, len(tt.records))
			var wantFailed, wantCalled []string
			for _, o := range tt.want {
				got := rec.only(t, o.id)
				switch {
				case o.err == nil && got != nil:
					t.Errorf("%s: err = %v, want success", o.id, got)
				case o.err != nil && !errors.Is(got, o.err):
					t.Errorf("%s: err = %v, want %v", o.id, got, o.err)
				}
				if o.err != nil {
					wantFailed = append(wantFailed, o.id)
				}
				if o.err == nil {
					wantCalled = append(wantCalled, o.id)
				}
			}
			if got := failedIDs(t, resp); !slices.Equal(got, wantFailed) {
				t.Errorf("failed = %q, want %q", got, wantFailed)
			}
			if got := rec.called(); !slices.Equal(got, wantCalled) {
				t.Errorf("called = %q, want %q", got, wantCalled)
			}
		})
	}
}

func TestSQSContextCanceled(t *testing.T) {
	cause := errors.New("shutting down")
	t.Run("before the batch", func(t *testing.T) {
		ctx, cancel := context.WithCancelCause(t.Context())
		cancel(cause)
		rec := newRecorder()
		records := []events.SQSMessage{std("m1", "ok"), fifo("a1", "A", "ok"), fifo("a2", "A", "ok")}
		resp, err := SQS(rec.wrap(byBody), Options{Logger: quiet(), OnRecord: rec.onRecord})(ctx, events.SQSEvent{Records: records})
		checkErr(t, resp, err, len(records))
		if got, want := failedIDs(t, resp), []string{"m1", "a1", "a2"}; !slices.Equal(got, want) {
			t.Errorf("failed = %q, want %q", got, want)
		}
		if got := rec.called(); len(got) != 0 {
			t.Errorf("called = %q, want none", got)
		}
		for _, id := range []string{"m1", "a1"} {
			if err := rec.only(t, id); !errors.Is(err, cause) {
				t.Errorf("%s: err = %v, want the cancel cause", id, err)
			}
		}
		if err := rec.only(t, "a2"); !errors.Is(err, ErrGroupFailed) {
			t.Errorf("a2: err = %v, want ErrGroupFailed", err)
		}
	})
	t.Run("during the batch", func(t *testing.T) {
		ctx, cancel := context.WithCancel(t.Context())
		defer cancel()
		rec := newRecorder()
		fn := rec.wrap(func(ctx context.Context, msg events.SQSMessage) (string, error) {
			if msg.MessageId == "m2" {
				cancel()
			}
			return "", nil
		})
		records := []events.SQSMessage{std("m1", ""), std("m2", ""), std("m3", ""), std("m4", "")}
		resp, err := SQS(fn, Options{Concurrency: 1, Logger: quiet(), OnRecord: rec.onRecord})(ctx, events.SQSEvent{Records: records})
		if err != nil {
			t.Fatal(err)
		}
		if got, want := failedIDs(t, resp), []string{"m3", "m4"}; !slices.Equal(got, want) {
			t.Errorf("failed = %q, want %q", got, want)
		}
		if got, want := rec.called(), []string{"m1", "m2"}; !slices.Equal(got, want) {
			t.Errorf("called = %q, want %q", got, want)
		}
		if err := rec.only(t, "m3"); !errors.Is(err, context.Canceled) {
			t.Errorf("m3: err = %v, want context.Canceled", err)
		}
	})
}

func TestSQSPanicIsolation(t *testing.T) {
	panicErr := errors.New("disk on fire")
	var logs bytes.Buffer
	rec := newRecorder()
	fn := rec.wrap(func(ctx context.Context, msg events.SQSMessage) (string, error) {
		switch msg.MessageId {
		case "m2":
			panic("nil map write")
		case "m4":
			panic(panicErr)
		}
		return "ok", nil
	})
	records := []events.SQSMessage{
		std("m1", "secret-1"), std("m2", "secret-2"), std("m3", "secret-3"), std("m4", "secret-4"), std("m5", "secret-5"),
	}
	opts := Options{Concurrency: 3, Logger: slog.New(slog.NewJSONHandler(&logs, nil)), OnRecord: rec.onRecord}
	resp, err := SQS(fn, opts)(t.Context(), events.SQSEvent{Records: records})
	if err != nil {
		t.Fatal(err)
	}
	if got, want := failedIDs(t, resp), []string{"m2", "m4"}; !slices.Equal(got, want) {
		t.Errorf("failed = %q, want %q", got, want)
	}
	if got, want := rec.called(), []string{"m1", "m2", "m3", "m4", "m5"}; !slices.Equal(got, want) {
		t.Errorf("called = %q, want %q", got, want)
	}
	for _, id := range []string{"m2", "m4"} {
		pe, ok := errors.AsType[*PanicError](rec.only(t, id))
		if !ok {
			t.Fatalf("%s: err = %v, want a *PanicError", id, rec.only(t, id))
		}
		if !bytes.Contains(pe.Stack, []byte("TestSQSPanicIsolation")) {
			t.Errorf("%s: stack does not name the panicking function:\n%s", id, pe.Stack)
		}
	}
	if err := rec.only(t, "m4"); !errors.Is(err, panicErr) {
		t.Errorf("m4: err = %v, want it to wrap the panic's error", err)
	}

	lines := logLines(t, &logs)
	if len(lines) != 2 {
		t.Fatalf("%d log lines, want 2:\n%s", len(lines), logs.String())
	}
	for _, l := range lines {
		if l["level"] != "ERROR" || l["msg"] != "batch: record panicked" {
			t.Errorf("log line %v: want an ERROR 'batch: record panicked'", l)
		}
		if s, _ := l["stack"].(string); !strings.Contains(s, "goroutine") {
			t.Errorf("log line for %v has no stack", l["messageId"])
		}
	}
	if strings.Contains(logs.String(), "secret-") {
		t.Errorf("a record body reached the log:\n%s", logs.String())
	}
}

func logLines(t *testing.T, buf *bytes.Buffer) []map[string]any {
	t.Helper()
	var lines []map[string]any
	for line := range strings.Lines(buf.String()) {
		var m map[string]any
		if err := json.Unmarshal([]byte(line), &m); err != nil {
			t.Fatalf("log line %q: %v", line, err)
		}
		lines = append(lines, m)
	}
	return lines
}

func TestSQSLogsOneLinePerFailure(t *testing.T) {
	var logs bytes.Buffer
	records := []events.SQSMessage{
		std("m1", "ok"), std("m2", "fail"), fifo("a1", "A", "fail"), fifo("a2", "A", "ok"), std("m3", "ok"),
	}
	for i := range records {
		records[i].Body = records[i].Body + " secret-body"
	}
	fn := func(ctx context.Context, msg events.SQSMessage) (int, error) {
		if strings.HasPrefix(msg.Body, "fail") {
			return 0, errRecord
		}
		return 1, nil
	}
	resp, err := SQS(fn, Options{Logger: slog.New(slog.NewJSONHandler(&logs, nil))})(t.Context(), events.SQSEvent{Records: records})
	if err != nil {
		t.Fatal(err)
	}
	wantFailed := []string{"m2", "a1", "a2"}
	if got := failedIDs(t, resp); !slices.Equal(got, wantFailed) {
		t.Fatalf("failed = %q, want %q", got, wantFailed)
	}
	lines := logLines(t, &logs)
	var logged []string
	want := map[string][2]string{ // level, message
		"m2": {"ERROR", "batch: record failed"},
		"a1": {"ERROR", "batch: record failed"},
		"a2": {"WARN", "batch: record not started"},
	}
	for _, l := range lines {
		id, _ := l["messageId"].(string)
		logged = append(logged, id)
		if w := want[id]; l["level"] != w[0] || l["msg"] != w[1] || l["error"] == "" {
			t.Errorf("log line %v: want %s %q with an error", l, w[0], w[1])
		}
	}
	if got, want := slices.Sorted(slices.Values(logged)), slices.Sorted(slices.Values(wantFailed)); !slices.Equal(got, want) {
		t.Errorf("logged messageIds %q, want %q", got, want)
	}
	if strings.Contains(logs.String(), "secret-body") {
		t.Errorf("a record body reached the log:\n%s", logs.String())
	}
}

// loggedErr is an error its record function logged already, as the
// idempotency guard's errors are.
type loggedErr struct{ error }

func (loggedErr) Logged() bool { return true }

// TestSQSDoesNotLogWhatTheRecordFunctionLogged checks that a failure is
// logged once: an error that says it was logged (Logged() true, anywhere in
// its chain) gets no second line from the batch.
func TestSQSDoesNotLogWhatTheRecordFunctionLogged(t *testing.T) {
	var logs bytes.Buffer
	fn := func(ctx context.Context, msg events.SQSMessage) (int, error) {
		switch msg.Body {
		case "logged":
			return 0, fmt.Errorf("wrapped: %w", loggedErr{errRecord})
		case "not logged":
			return 0, errRecord
		}
		return 1, nil
	}
	records := []events.SQSMessage{std("m1", "logged"), std("m2", "not logged"), std("m3", "ok")}
	resp, err := SQS(fn, Options{Logger: slog.New(slog.NewJSONHandler(&logs, nil))})(t.Context(), events.SQSEvent{Records: records})
	if err != nil {
		t.Fatal(err)
	}
	if got := failedIDs(t, resp); !slices.Equal(got, []string{"m1", "m2"}) {
		t.Fatalf("failed = %q, want [m1 m2]: a logged error still fails its record", got)
	}
	lines := logLines(t, &logs)
	if len(lines) != 1 || lines[0]["messageId"] != "m2" {
		t.Errorf("log lines %v, want exactly one, for m2", lines)
	}
}

func TestSQSOnRecord(t *testing.T) {
	t.Run("called once per record, concurrently", func(t *testing.T) {
		var records []events.SQSMessage
		for i := range 100 {
			body := "ok"
			if i%7 == 0 {
				body = "fail"
			}
			records = append(records, std(fmt.Sprint("m", i), body))
		}
		rec := newRecorder()
		resp, err := SQS(byBody, Options{Concurrency: 8, Logger: quiet(), OnRecord: rec.onRecord})(t.Context(), events.SQSEvent{Records: records})
		if err != nil {
			t.Fatal(err)
		}
		failed := failedIDs(t, resp)
		for _, m := range records {
			err := rec.only(t, m.MessageId)
			if (m.Body == "fail") != (err != nil) || (err != nil && !errors.Is(err, errRecord)) {
				t.Errorf("%s (%s): OnRecord err = %v", m.MessageId, m.Body, err)
			}
			if (err != nil) != slices.Contains(failed, m.MessageId) {
				t.Errorf("%s: OnRecord err = %v but reported failed = %v", m.MessageId, err, slices.Contains(failed, m.MessageId))
			}
		}
	})
	t.Run("a panic in the hook changes nothing", func(t *testing.T) {
		var logs bytes.Buffer
		opts := Options{
			Logger:   slog.New(slog.NewJSONHandler(&logs, nil)),
			OnRecord: func(context.Context, events.SQSMessage, error) { panic("hook bug") },
		}
		records := []events.SQSMessage{std("m1", "ok"), std("m2", "fail")}
		resp, err := SQS(byBody, opts)(t.Context(), events.SQSEvent{Records: records})
		if err != nil {
			t.Fatal(err)
		}
		if got, want := failedIDs(t, resp), []string{"m2"}; !slices.Equal(got, want) {
			t.Errorf("failed = %q, want %q", got, want)
		}
		hookPanics := 0
		for _, l := range logLines(t, &logs) {
			if l["msg"] == "batch: OnRecord panicked" {
				hookPanics++
			}
		}
		if hookPanics != 2 {
			t.Errorf("%d OnRecord panics logged, want 2:\n%s", hookPanics, logs.String())
		}
	})
}

// TestSQSGoexit: a record function that ends its goroutine (as t.FailNow
// does) never counts as a success.
func TestSQSGoexit(t *testing.T) {
	rec := newRecorder()
	fn := func(ctx context.Context, msg events.SQSMessage) (int, error) {
		if msg.MessageId == "m2" {
			runtime.Goexit()
		}
		return 0, nil
	}
	records := []events.SQSMessage{std("m1", ""), std("m2", ""), std("m3", ""), std("m4", "")}
	resp, err := SQS(fn, Options{Concurrency: 2, Logger: quiet(), OnRecord: rec.onRecord})(t.Context(), events.SQSEvent{Records: records})
	if err != nil {
		t.Fatal(err)
	}
	if got, want := failedIDs(t, resp), []string{"m2"}; !slices.Equal(got, want) {
		t.Errorf("failed = %q, want %q", got, want)
	}
	if err := rec.only(t, "m2"); err == nil {
		t.Error("m2: OnRecord err = nil, want a failure")
	}
}

func TestOptionsValidate(t *testing.T) {
	tests := []struct {
		name    string
		opts    Options
		wantErr string
	}{
		{"zero value", Options{}, ""},
		{"explicit values", Options{Concurrency: 1, MinRemaining: time.Nanosecond}, ""},
		{"negative concurrency", Options{Concurrency: -1}, "batch: Options.Concurrency must not be negative, got -1"},
		{"negative min remaining", Options{MinRemaining: -time.Second}, "batch: Options.MinRemaining must not be negative, got -1s"},
		{"every problem at once", Options{Concurrency: -1, MinRemaining: -time.Second, Pacing: Pacing{Jitter: 2}},
			"batch: Options.Concurrency must not be negative, got -1\n" +
				"batch: Options.MinRemaining must not be negative, got -1s\n" +
				"batch: Pacing.Jitter must be between 0 and 1, got 2"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			err := tt.opts.Validate()
			if got := fmt.Sprint(err); (err == nil) != (tt.wantErr == "") || (err != nil && got != tt.wantErr) {
				t.Fatalf("Validate() = %v, want %q", err, tt.wantErr)
			}
			panicked := recoverFrom(func() { SQS(byBody, tt.opts) })
			if (panicked != nil) != (tt.wantErr != "") {
				t.Fatalf("SQS panicked with %v, want panic %v", panicked, tt.wantErr != "")
			}
			if panicked != nil && panicked != err && fmt.Sprint(panicked) != tt.wantErr {
				t.Errorf("SQS panicked with %v, want %q", panicked, tt.wantErr)
			}
		})
	}
	t.Run("nil function", func(t *testing.T) {
		var fn func(context.Context, events.SQSMessage) (int, error)
		p := recoverFrom(func() { SQS(fn, Options{}) })
		if s := fmt.Sprint(p); !strings.HasPrefix(s, "batch: ") {
			t.Errorf("SQS(nil) panicked with %v, want a 'batch: ' message", p)
		}
	})
	t.Run("defaults", func(t *testing.T) {
		got := Options{}.withDefaults()
		if got.Concurrency != DefaultConcurrency || got.MinRemaining != 0 || got.Reserve != DefaultReserve {
			t.Errorf("defaults = %+v", got)
		}
		kept := Options{Concurrency: 3, MinRemaining: time.Minute}.withDefaults()
		if kept.Concurrency != 3 || kept.MinRemaining != time.Minute {
			t.Errorf("explicit values changed: %+v", kept)
		}
	})
}

func recoverFrom(f func()) (v any) {
	defer func() { v = recover() }()
	f()
	return nil
}

// handlerFunc mirrors lambda.StartHandlerFunc's type parameters: calling it
// without type arguments proves that lambda can infer SQS's handler type.
func handlerFunc[TIn, TOut any, H lambda.HandlerFunc[TIn, TOut]](h H) H { return h }

// TestSQSGolden drives the handler through aws-lambda-go's own JSON
// handling, from an event fixture to the response bytes.
func TestSQSGolden(t *testing.T) {
	for _, name := range []string{"standard-mixed", "fifo-mixed"} {
		t.Run(name, func(t *testing.T) {
			event, err := os.ReadFile(filepath.Join("testdata", name+".json"))
			if err != nil {
				t.Fatal(err)
			}
			h := lambda.NewHandler(handlerFunc(SQS(byBody, Options{Concurrency: 4, Logger: quiet()})))
			out, err := h.Invoke(t.Context(), event)
			if err != nil {
				t.Fatal(err)
			}
			var got bytes.Buffer
			if err := json.Indent(&got, out, "", "  "); err != nil {
				t.Fatalf("response %s: %v", out, err)
			}
			got.WriteByte('\n')

			golden := filepath.Join("testdata", name+".golden")
			if *update {
				if err := os.WriteFile(golden, got.Bytes(), 0o644); err != nil {
					t.Fatal(err)
				}
			}
			want, err := os.ReadFile(golden)
			if err != nil {
				t.Fatalf("%v (run go test -update to create it)", err)
			}
			if !bytes.Equal(got.Bytes(), want) {
				t.Errorf("response differs from %s:\ngot:\n%s\nwant:\n%s", golden, got.Bytes(), want)
			}
		})
	}
}

func BenchmarkSQS(b *testing.B) {
	records := func(fifoQueue bool) []events.SQSMessage {
		var rs []events.SQSMessage
		for i := range 10 {
			if fifoQueue {
				rs = append(rs, fifo(fmt.Sprint("m", i), fmt.Sprint("g", i%3), "ok"))
			} else {
				rs = append(rs, std(fmt.Sprint("m", i), "ok"))
			}
		}
		return rs
	}
	trivial := func(context.Context, events.SQSMessage) (struct{}, error) { return struct{}{}, nil }
	benchmarks := []struct {
		name string
		ev   events.SQSEvent
		opts Options
	}{
		{"standard", events.SQSEvent{Records: records(false)}, Options{}},
		{"standard/sequential", events.SQSEvent{Records: records(false)}, Options{Concurrency: 1}},
		{"fifo", events.SQSEvent{Records: records(true)}, Options{}},
	}
	for _, bm := range benchmarks {
		b.Run(bm.name, func(b *testing.B) {
			h := SQS(trivial, bm.opts)
			ctx := b.Context()
			b.ReportAllocs()
			for b.Loop() {
				resp, err := h(ctx, bm.ev)
				if err != nil || len(resp.BatchItemFailures) != 0 {
					b.Fatalf("resp = %+v, err = %v", resp, err)
				}
			}
		})
	}
}

// TestSQSFullBatchFailure checks the whole-batch rule: a batch in which every
// record failed returns a *FullBatchFailureError (with the response listing
// them all), as Powertools does by default, unless NoFullBatchError is set;
// any success, or an empty batch, returns no error.
func TestSQSFullBatchFailure(t *testing.T) {
	all := []events.SQSMessage{std("m1", "fail"), std("m2", "panic"), fifo("a1", "A", "fail"), fifo("a2", "A", "ok")}
	one := []events.SQSMessage{std("m1", "fail"), std("m2", "ok")}
	tests := []struct {
		name    string
		records []events.SQSMessage
		opts    Options
		wantErr bool
	}{
		{"every record failed", all, Options{}, true},
		{"every record failed, NoFullBatchError", all, Options{NoFullBatchError: true}, false},
		{"one succeeded", one, Options{}, false},
		{"empty batch", nil, Options{}, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			opts := tt.opts
			opts.Logger = quiet()
			resp, err := SQS(byBody, opts)(t.Context(), events.SQSEvent{Records: tt.records})
			var full *FullBatchFailureError
			if got := errors.As(err, &full); got != tt.wantErr || (!got && err != nil) {
				t.Fatalf("err = %v, want a *FullBatchFailureError: %v", err, tt.wantErr)
			}
			if tt.wantErr {
				if len(resp.BatchItemFailures) != len(tt.records) {
					t.Errorf("response lists %d records, want all %d alongside the error", len(resp.BatchItemFailures), len(tt.records))
				}
				if len(full.Errs) != len(tt.records) || !errors.Is(err, errRecord) || !errors.Is(err, ErrGroupFailed) ||
					!errors.As(err, new(*PanicError)) {
					t.Errorf("error %v does not carry every record's error (%d)", err, len(full.Errs))
				}
			}
		})
	}
}

// TestCallEach checks the one error per item that the dead-letter mover
// and the visibility changer are called through: nil for all done, the
// callee's own errors, and every item failed after a panic or a result of
// the wrong length.
func TestCallEach(t *testing.T) {
	items := []string{"a", "b", "c"}
	boom := errors.New("boom")
	for _, tc := range []struct {
		name string
		call func([]string) []error
		want []string // each item's error text, "" for none
	}{
		{"nil: all done", func([]string) []error { return nil }, []string{"", "", ""}},
		{"its own errors", func([]string) []error { return []error{nil, boom, nil} }, []string{"", "boom", ""}},
		{"too few", func([]string) []error { return []error{boom} },
			slices.Repeat([]string{"batch: Thing returned 1 errors for 3 items"}, 3)},
		{"too many", func([]string) []error { return make([]error, 4) },
			slices.Repeat([]string{"batch: Thing returned 4 errors for 3 items"}, 3)},
		{"panic", func([]string) []error { panic("down") }, slices.Repeat([]string{"batch: panic: a string (" + redact.Digest("down") + ")"}, 3)},
	} {
		t.Run(tc.name, func(t *testing.T) {
			errs := callEach(items, tc.call, "Thing", "items")
			if len(errs) != len(items) {
				t.Fatalf("%d errors for %d items", len(errs), len(items))
			}
			for i, err := range errs {
				got := ""
				if err != nil {
					got = err.Error()
				}
				if !strings.HasPrefix(got, tc.want[i]) || (tc.want[i] == "") != (got == "") {
					t.Errorf("item %d: error %q, want %q", i, got, tc.want[i])
				}
			}
			if tc.name == "panic" {
				if _, ok := errors.AsType[*PanicError](errs[0]); !ok {
					t.Errorf("after a panic: %T, want *PanicError", errs[0])
				}
			}
		})
	}
}
