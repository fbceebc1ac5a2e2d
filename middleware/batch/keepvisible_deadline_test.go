package batch

import (
	"context"
	"errors"
	"slices"
	"sync"
	"testing"
	"testing/synctest"
	"time"

	"github.com/aws/aws-lambda-go/events"
)

// hangingChanger is a slow VisibilityChanger: a call for whose changes
// hangs reports true (every call, when hangs is nil) waits until its
// context ends and fails every change with the context's error; any other
// call is applied at once. It records each call, when it was made and
// when it returned.
type hangingChanger struct {
	hangs func([]VisibilityChange) bool // nil: every call hangs

	mu    sync.Mutex
	calls []hungCall
}

type hungCall struct {
	changes   []VisibilityChange
	at, until time.Time
	err       error // the context's error when the call returned
}

func (c *hangingChanger) ChangeVisibility(ctx context.Context, changes []VisibilityChange) []error {
	call := hungCall{changes: slices.Clone(changes), at: time.Now()}
	var errs []error
	if c.hangs == nil || c.hangs(changes) {
		<-ctx.Done()
		errs = make([]error, len(changes))
		for i := range errs {
			errs[i] = ctx.Err()
		}
	}
	call.until, call.err = time.Now(), ctx.Err()
	c.mu.Lock()
	c.calls = append(c.calls, call)
	c.mu.Unlock()
	return errs
}

func (c *hangingChanger) record() []hungCall {
	c.mu.Lock()
	defer c.mu.Unlock()
	return slices.Clone(c.calls)
}

// TestKeepVisibleDoesNotHoldResponse: a change keeping a message invisible
// that is in flight when the invocation's last record finishes does not
// hold the response back: it is canceled, and the handler returns as the
// record finishes (pacing, if any, then makes the failed record's change,
// by the records' deadline), not when the change's own bound (Every) ends.
// At Lambda's 3 s timeout with a queue timeout of 3 s (which Lambda
// accepts) and a slow Changer, the change started at a tick just before
// the last record finished used to keep the handler until about 3.33 s:
// past Lambda's deadline, so the whole response was lost.
func TestKeepVisibleDoesNotHoldResponse(t *testing.T) {
	const invocation = 3 * time.Second
	recordsDeadline := invocation - DefaultReserve
	keeping := func(ch []VisibilityChange) bool { return ch[0].Timeout < 30*time.Second } // pacing's are about a minute, the keeper's 3.6 s at most
	for _, tc := range []struct {
		name    string
		kv      KeepVisible
		rec     time.Duration // when the record returns; 0: at its context's end
		fail    bool          // whether it fails
		hangs   func([]VisibilityChange) bool
		want    time.Duration // when the handler returns, from its start
		changed bool          // whether pacing's change is applied
	}{
		{"Every 1.2s, record succeeds at 2.45s", KeepVisible{Every: 1200 * time.Millisecond, QueueTimeout: invocation},
			2450 * time.Millisecond, false, nil, 2450 * time.Millisecond, false},
		{"Every 1.2s, record fails at 2.45s, pacing applied", KeepVisible{Every: 1200 * time.Millisecond, QueueTimeout: invocation},
			2450 * time.Millisecond, true, keeping, 2450 * time.Millisecond, true},
		{"default Every, record cut at the records' deadline", KeepVisible{QueueTimeout: invocation},
			0, true, nil, recordsDeadline, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				start := time.Now()
				ctx, cancel := context.WithTimeout(t.Context(), invocation)
				defer cancel()
				fn := func(ctx context.Context, m events.SQSMessage) (string, error) {
					if tc.rec == 0 {
						<-ctx.Done()
						return "", ctx.Err()
					}
					select {
					case <-time.After(tc.rec):
					case <-ctx.Done():
						return "", ctx.Err()
					}
					if tc.fail {
						return "", errRecord
					}
					return "ok", nil
				}
				ch := &hangingChanger{hangs: tc.hangs}
				var mu sync.Mutex
				var paced []error
				h := SQS(fn, Options{Logger: quiet(), KeepVisible: tc.kv, Pacing: Pacing{Changer: ch, Base: time.Minute, Cap: time.Minute, Jitter: 1e-9,
					OnChange: func(_ context.Context, _ VisibilityChange, err error) {
						mu.Lock()
						paced = append(paced, err)
						mu.Unlock()
					}}})
				resp, err := h(ctx, events.SQSEvent{Records: []events.SQSMessage{withCount(std("m1", ""), "1")}})
				took := time.Since(start)
				if took != tc.want {
					t.Errorf("the handler returned %v after its start, want %v (the records' deadline is %v, Lambda's %v)", took, tc.want, recordsDeadline, invocation)
				}
				if got := failedIDs(t, resp); tc.fail != (len(got) == 1) {
					t.Errorf("failures %q, err %v; want m1 failed: %v", got, err, tc.fail)
				}
				// The scenario: a change keeping m1 invisible was in flight
				// when the record finished, and was canceled then.
				calls := ch.record()
				inFlight := false
				for _, c := range calls {
					if keeping(c.changes) && c.at.Before(start.Add(took)) && !c.until.Before(start.Add(took)) {
						inFlight = true
						if !errors.Is(c.err, context.Canceled) || c.until != start.Add(took) {
							t.Errorf("change in flight when the record finished returned %v after the start with %v, want canceled then", c.until.Sub(start), c.err)
						}
					}
				}
				if !inFlight {
					t.Fatalf("no change keeping m1 invisible was in flight when the record finished (calls %+v): the test proves nothing", calls)
				}
				mu.Lock()
				defer mu.Unlock()
				if tc.changed && (len(paced) != 1 || paced[0] != nil) {
					t.Errorf("pacing's outcomes %v, want m1's change applied", paced)
				}
			})
		})
	}
}
