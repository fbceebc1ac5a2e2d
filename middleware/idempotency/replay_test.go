package idempotency_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"maps"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/aws/aws-lambda-go/events"

	"github.com/sqsonce/sqsonce/middleware/idempotency"
	"github.com/sqsonce/sqsonce/middleware/idempotency/driver"
	"github.com/sqsonce/sqsonce/middleware/idempotency/memstore"
)

// hookCall is one call of a replay hook: the result and the report it got.
type hookCall struct {
	result resp
	report idempotency.Report
}

type resp struct {
	Run      int  `json:"run"`
	Replayed bool `json:"replayed"`
}

// TestOnReplay: the hook (Powertools' responseHook) is called with the
// stored result and the call's report exactly when a call returns a stored
// result (from the store, the cache, or a call of the same key run in this
// process), never for a call whose own run stands or that fails; what it
// returns is the call's result.
func TestOnReplay(t *testing.T) {
	var mu sync.Mutex
	var calls []hookCall
	var outcomes []idempotency.Report
	hook := idempotency.OnReplay(func(_ context.Context, r resp, rep idempotency.Report) (resp, error) {
		mu.Lock()
		defer mu.Unlock()
		calls = append(calls, hookCall{r, rep})
		r.Replayed = true
		return r, nil
	})
	newGuard := func(store driver.Store, cache int) *idempotency.Guard {
		g, err := idempotency.New(idempotency.Config{Store: store, Namespace: "hook", CacheBytes: cache,
			Logger: slog.New(slog.DiscardHandler),
			OnOutcome: func(_ context.Context, ev idempotency.Report) {
				mu.Lock()
				defer mu.Unlock()
				outcomes = append(outcomes, ev)
			}})
		if err != nil {
			t.Fatal(err)
		}
		return g
	}
	var runs atomic.Int32
	op := func(context.Context) (resp, error) { return resp{Run: int(runs.Add(1))}, nil }
	last := func() (hookCall, idempotency.Report, int) {
		mu.Lock()
		defer mu.Unlock()
		var c hookCall
		if len(calls) > 0 {
			c = calls[len(calls)-1]
		}
		return c, outcomes[len(outcomes)-1], len(calls)
	}

	store := memstore.New()
	g := newGuard(store, 0)
	k := idempotency.Raw([]byte(`"k-1"`))
	if got, err := idempotency.Do(t.Context(), g, k, op, hook); err != nil || got != (resp{Run: 1}) {
		t.Fatalf("first call: %+v, %v", got, err)
	}
	if _, _, n := last(); n != 0 {
		t.Errorf("the hook ran for the call that ran the operation")
	}
	got, err := idempotency.Do(t.Context(), g, k, op, hook)
	c, ev, n := last()
	if err != nil || got != (resp{Run: 1, Replayed: true}) || n != 1 || ev.Outcome != idempotency.OutcomeReplayed {
		t.Fatalf("replay: %+v, %v, %d hook calls, outcome %s; want the stored result as the hook made it", got, err, n, ev.Outcome)
	}
	if c.result != (resp{Run: 1}) || c.report.Outcome != idempotency.OutcomeReplayed || c.report.ID != mustID(t, g, k) || c.report.Source != "store" {
		t.Errorf("the hook got %+v and %+v, want the stored result and a report of its replay from the store", c.result, c.report)
	}

	// From the cache.
	cached := newGuard(store, 1<<20)
	for range 2 {
		if got, err := idempotency.Do(t.Context(), cached, k, op, hook); err != nil || !got.Replayed {
			t.Errorf("through the cache: %+v, %v", got, err)
		}
	}
	if c, _, n := last(); n != 3 || c.report.Source != "cache" {
		t.Errorf("%d hook calls, the last reported from %q; want 3, the last from the cache", n, c.report.Source)
	}

	// Calls of one key at once in one process: the run's call is not
	// hooked, the calls that shared it are.
	k2 := idempotency.Raw([]byte(`"k-2"`))
	release := make(chan struct{})
	slow := func(context.Context) (resp, error) { <-release; return resp{Run: 100}, nil }
	var wg sync.WaitGroup
	results := make([]resp, 3)
	for i := range results {
		wg.Go(func() { results[i], _ = idempotency.Do(context.Background(), g, k2, slow, hook) })
	}
	time.Sleep(50 * time.Millisecond) // the three are in flight
	close(release)
	wg.Wait()
	hooked := 0
	for _, r := range results {
		if r.Run != 100 {
			t.Errorf("a call of the shared run got %+v", r)
		}
		if r.Replayed {
			hooked++
		}
	}
	if hooked != 2 {
		t.Errorf("%d of the 3 calls were hooked, want 2 (the run's own is not)", hooked)
	}

	// Failures are not hooked: a mismatch, a failed operation.
	before := len(calls)
	k4 := idempotency.Raw([]byte(`"k-4"`))
	if _, err := idempotency.Do(t.Context(), g, k4, op, hook, idempotency.WithPayload(idempotency.Raw([]byte(`"this"`)))); err != nil {
		t.Fatal(err)
	}
	if _, err := idempotency.Do(t.Context(), g, k4, op, hook, idempotency.WithPayload(idempotency.Raw([]byte(`"that"`)))); !errors.Is(err, idempotency.ErrPayloadMismatch) {
		t.Errorf("another payload: %v, want ErrPayloadMismatch", err)
	}
	if _, err := idempotency.Do(t.Context(), g, idempotency.Raw([]byte(`"k-3"`)), func(context.Context) (resp, error) {
		return resp{}, errors.New("failed")
	}, hook); err == nil {
		t.Error("the failing operation succeeded")
	}
	mu.Lock()
	extra := len(calls) - before
	mu.Unlock()
	if extra != 0 {
		t.Errorf("%d hook calls for a claim, a mismatch and a failure, want none", extra)
	}
}

// TestOnReplayError: a hook that fails fails the call, logged once as
// failed.
func TestOnReplayError(t *testing.T) {
	var outcome idempotency.Outcome
	g, err := idempotency.New(idempotency.Config{Store: memstore.New(), Namespace: "hook", Logger: slog.New(slog.DiscardHandler),
		OnOutcome: func(_ context.Context, ev idempotency.Report) { outcome = ev.Outcome }})
	if err != nil {
		t.Fatal(err)
	}
	hook := idempotency.OnReplay(func(context.Context, int, idempotency.Report) (int, error) {
		return 0, errors.New("hook refused")
	})
	k := idempotency.Raw([]byte(`"k"`))
	op := func(context.Context) (int, error) { return 1, nil }
	if _, err := idempotency.Do(t.Context(), g, k, op, hook); err != nil {
		t.Fatal(err)
	}
	if _, err := idempotency.Do(t.Context(), g, k, op, hook); err == nil || !strings.Contains(err.Error(), "hook refused") || outcome != idempotency.OutcomeFailed {
		t.Errorf("%v, outcome %s; want the hook's error, failed", err, outcome)
	}
}

// TestOnReplayOfWrap: a wrapped API handler's hook marks a replayed
// response with a header; the first response is not marked, and a call the
// operation makes of the same result type is not hooked: the hook is the
// wrapper's, not the context's.
func TestOnReplayOfWrap(t *testing.T) {
	g, err := idempotency.New(idempotency.Config{Store: memstore.New(), Namespace: "api", Logger: slog.New(slog.DiscardHandler)})
	if err != nil {
		t.Fatal(err)
	}
	type response = events.APIGatewayV2HTTPResponse
	inner := idempotency.Raw([]byte(`"inner"`))
	var hooked atomic.Int32
	h := idempotency.Wrap(g, apiOrderKey, func(ctx context.Context, r events.APIGatewayV2HTTPRequest) (response, error) {
		// A call the operation makes: its replay is the operation's business.
		if _, err := idempotency.Do(ctx, g, inner, func(context.Context) (response, error) { return response{StatusCode: 200}, nil }); err != nil {
			return response{}, err
		}
		return response{StatusCode: 201, Body: `{"order":"` + r.RequestContext.RequestID + `"}`}, nil
	}, append(apiOrderOpts, idempotency.OnReplay(func(_ context.Context, r response, _ idempotency.Report) (response, error) {
		hooked.Add(1)
		r.Headers = maps.Clone(r.Headers)
		if r.Headers == nil {
			r.Headers = map[string]string{}
		}
		r.Headers["x-idempotent-replay"] = "true"
		return r, nil
	}))...)
	first, err := h(t.Context(), apiRequest("r1", apiOrder{"o-1", 5}))
	if err != nil || first.Headers["x-idempotent-replay"] != "" {
		t.Fatalf("first: %+v, %v", first, err)
	}
	// The second request's operation runs again (another order) and its
	// inner call replays "inner": that replay is not hooked.
	if r, err := h(t.Context(), apiRequest("r2", apiOrder{"o-2", 5})); err != nil || r.Headers["x-idempotent-replay"] != "" || hooked.Load() != 0 {
		t.Fatalf("another order: %+v, %v, %d hook calls", r, err, hooked.Load())
	}
	again, err := h(t.Context(), apiRequest("r3", apiOrder{"o-1", 5}))
	if err != nil || again.StatusCode != 201 || again.Body != `{"order":"r1"}` || again.Headers["x-idempotent-replay"] != "true" || hooked.Load() != 1 {
		t.Errorf("replay: %+v, %v, %d hook calls; want the first response, marked once", again, err, hooked.Load())
	}
}

// TestOnReplayTypeChecked: a hook for another result type than the
// operation's is refused when the function is made (Wrap panics, Do fails),
// never silently dropped; so is a nil hook.
func TestOnReplayTypeChecked(t *testing.T) {
	g, err := idempotency.New(idempotency.Config{Store: memstore.New(), Namespace: "api", Logger: slog.New(slog.DiscardHandler)})
	if err != nil {
		t.Fatal(err)
	}
	stringHook := idempotency.OnReplay(func(_ context.Context, s string, _ idempotency.Report) (string, error) { return s, nil })
	op := func(context.Context, events.SQSMessage) (int, error) { return 1, nil }
	func() {
		defer func() {
			if p := recover(); p == nil || !strings.Contains(p.(string), "OnReplay") {
				t.Errorf("Wrap with a hook of another result type: panic %v, want one naming OnReplay", p)
			}
		}()
		idempotency.Wrap(g, idempotency.BodyField("k"), op, stringHook)
	}()
	if _, err := idempotency.Do(t.Context(), g, idempotency.Raw([]byte(`"k"`)), func(context.Context) (int, error) { return 1, nil }, stringHook); err == nil || !strings.Contains(err.Error(), "OnReplay") {
		t.Errorf("Do with a hook of another result type: %v, want an error naming OnReplay", err)
	}
	func() {
		defer func() {
			if recover() == nil {
				t.Error("Wrap accepted a nil hook")
			}
		}()
		idempotency.Wrap(g, idempotency.BodyField("k"), op, idempotency.OnReplay[int](nil))
	}()
}

// TestOnReplayDoubleRun: a double run returns the other worker's stored
// result, and the hook sees it.
func TestOnReplayDoubleRun(t *testing.T) {
	store := memstore.New()
	t0 := time.Now()
	var hooked atomic.Int32
	hook := idempotency.OnReplay(func(_ context.Context, r string, rep idempotency.Report) (string, error) {
		if rep.Outcome == idempotency.OutcomeDoubleRun {
			hooked.Add(1)
		}
		return r, nil
	})
	newGuard := func(now time.Time) *idempotency.Guard {
		g, err := idempotency.New(idempotency.Config{Store: store, Namespace: "double", Lease: time.Minute,
			Now: func() time.Time { return now }, Logger: slog.New(slog.DiscardHandler)})
		if err != nil {
			t.Fatal(err)
		}
		return g
	}
	loser, winner := newGuard(t0), newGuard(t0.Add(time.Hour))
	k := idempotency.Raw([]byte(`"k"`))
	running, finish := make(chan struct{}), make(chan struct{})
	done := make(chan string)
	go func() {
		s, _ := idempotency.Do(context.Background(), loser, k, func(context.Context) (string, error) {
			close(running)
			<-finish
			return "loser's", nil
		}, hook)
		done <- s
	}()
	<-running
	if s, err := idempotency.Do(t.Context(), winner, k, func(context.Context) (string, error) { return "winner's", nil }); err != nil || s != "winner's" {
		t.Fatalf("winner: %q, %v", s, err)
	}
	close(finish)
	if s := <-done; s != "winner's" || hooked.Load() != 1 {
		t.Errorf("loser returned %q with %d hook calls, want the winner's result, hooked once as a double run", s, hooked.Load())
	}
}

// TestDecodeErrorQuotesNoResult: a stored result that no longer decodes
// into the call's type (the type changed between deploys) fails the call
// with an error that names the field and the kinds, never the stored value
// (which may be sealed in the store, and errors reach the logs).
func TestDecodeErrorQuotesNoResult(t *testing.T) {
	g, err := idempotency.New(idempotency.Config{Store: memstore.New(), Namespace: "n", Logger: slog.New(slog.DiscardHandler)})
	if err != nil {
		t.Fatal(err)
	}
	key := idempotency.Raw([]byte(`"k"`))
	const secret = 73194028561
	if _, err := idempotency.Do(context.Background(), g, key, func(context.Context) (map[string]int64, error) {
		return map[string]int64{"n": secret}, nil
	}); err != nil {
		t.Fatal(err)
	}
	type narrower struct {
		N int8 `json:"n"`
	}
	_, err = idempotency.Do(context.Background(), g, key, func(context.Context) (narrower, error) { return narrower{}, nil })
	var te *json.UnmarshalTypeError
	if err == nil || strings.Contains(err.Error(), fmt.Sprint(secret)) || !errors.As(err, &te) {
		t.Errorf("err %v: want a decode error that does not quote the stored value and wraps the *json.UnmarshalTypeError", err)
	}
}
