package idempotency_test

import (
	"context"
	"encoding/json"
	"errors"
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

// hookCall is one call of a replay hook: the result and the record it got.
type hookCall struct {
	result string
	rec    driver.Record
}

// TestReplayHook: Config.ReplayHook, Powertools' responseHook, is called
// with the stored result and its record exactly when a call returns a
// stored result (from the store, the cache, or a call of the same key run
// in this process), never for a call whose own run stands or that fails;
// what it returns is the call's result.
func TestReplayHook(t *testing.T) {
	var mu sync.Mutex
	var calls []hookCall
	var outcomes []idempotency.Event
	newGuard := func(store driver.Store, cache int) *idempotency.Guard {
		g, err := idempotency.New(idempotency.Config{Store: store, Namespace: "hook", CacheBytes: cache,
			Logger: slog.New(slog.DiscardHandler),
			OnOutcome: func(_ context.Context, ev idempotency.Event) {
				mu.Lock()
				defer mu.Unlock()
				outcomes = append(outcomes, ev)
			},
			ReplayHook: func(_ context.Context, result json.RawMessage, rec driver.Record) (json.RawMessage, error) {
				mu.Lock()
				defer mu.Unlock()
				calls = append(calls, hookCall{string(result), rec})
				var r map[string]any
				if err := json.Unmarshal(result, &r); err != nil {
					return nil, err
				}
				r["replayed"] = true
				return json.Marshal(r)
			}})
		if err != nil {
			t.Fatal(err)
		}
		return g
	}
	type resp struct {
		Run      int  `json:"run"`
		Replayed bool `json:"replayed"`
	}
	var runs atomic.Int32
	op := func(context.Context) (resp, error) { return resp{Run: int(runs.Add(1))}, nil }
	last := func() (hookCall, idempotency.Event, int) {
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
	k := idempotency.RawKey([]byte(`"k-1"`))
	if got, err := idempotency.Do(t.Context(), g, k, op); err != nil || got != (resp{Run: 1}) {
		t.Fatalf("first call: %+v, %v", got, err)
	}
	if _, _, n := last(); n != 0 {
		t.Errorf("the hook ran for the call that ran the operation")
	}
	got, err := idempotency.Do(t.Context(), g, k, op)
	c, ev, n := last()
	if err != nil || got != (resp{Run: 1, Replayed: true}) || n != 1 || ev.Outcome != idempotency.OutcomeReplayed {
		t.Fatalf("replay: %+v, %v, %d hook calls, outcome %s; want the stored result as the hook made it", got, err, n, ev.Outcome)
	}
	if stored := `{"run":1,"replayed":false}`; c.result != stored || c.rec.Status != driver.StatusCompleted || c.rec.ID != mustID(t, g, k) || string(c.rec.Data) != stored {
		t.Errorf("the hook got %s and %+v, want the stored result and its COMPLETED record", c.result, c.rec)
	}

	// From the cache.
	cached := newGuard(store, 1<<20)
	for range 2 {
		if got, err := idempotency.Do(t.Context(), cached, k, op); err != nil || !got.Replayed {
			t.Errorf("through the cache: %+v, %v", got, err)
		}
	}
	if _, ev, n := last(); n != 3 || ev.Source != "cache" {
		t.Errorf("%d hook calls, last outcome from %q; want 3, the last from the cache", n, ev.Source)
	}

	// Calls of one key at once in one process: the run's call is not
	// hooked, the calls that shared it are.
	k2 := idempotency.RawKey([]byte(`"k-2"`))
	release := make(chan struct{})
	slow := func(context.Context) (resp, error) { <-release; return resp{Run: 100}, nil }
	var wg sync.WaitGroup
	results := make([]resp, 3)
	for i := range results {
		wg.Go(func() { results[i], _ = idempotency.Do(context.Background(), g, k2, slow) })
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
	k4 := idempotency.RawKey([]byte(`"k-4"`))
	if _, err := idempotency.DoPayload(t.Context(), g, k4, idempotency.RawKey([]byte(`"this"`)), op); err != nil {
		t.Fatal(err)
	}
	if _, err := idempotency.DoPayload(t.Context(), g, k4, idempotency.RawKey([]byte(`"that"`)), op); !errors.Is(err, idempotency.ErrPayloadMismatch) {
		t.Errorf("another payload: %v, want ErrPayloadMismatch", err)
	}
	if _, err := idempotency.Do(t.Context(), g, idempotency.RawKey([]byte(`"k-3"`)), func(context.Context) (resp, error) {
		return resp{}, errors.New("failed")
	}); err == nil {
		t.Error("the failing operation succeeded")
	}
	mu.Lock()
	extra := len(calls) - before
	mu.Unlock()
	if extra != 0 {
		t.Errorf("%d hook calls for a claim, a mismatch and a failure, want none", extra)
	}
}

// TestReplayHookError: a hook that fails fails the call, logged once as
// failed.
func TestReplayHookError(t *testing.T) {
	var outcome idempotency.Outcome
	g, err := idempotency.New(idempotency.Config{Store: memstore.New(), Namespace: "hook", Logger: slog.New(slog.DiscardHandler),
		OnOutcome: func(_ context.Context, ev idempotency.Event) { outcome = ev.Outcome },
		ReplayHook: func(context.Context, json.RawMessage, driver.Record) (json.RawMessage, error) {
			return nil, errors.New("hook refused")
		}})
	if err != nil {
		t.Fatal(err)
	}
	k := idempotency.RawKey([]byte(`"k"`))
	op := func(context.Context) (int, error) { return 1, nil }
	if _, err := idempotency.Do(t.Context(), g, k, op); err != nil {
		t.Fatal(err)
	}
	if _, err := idempotency.Do(t.Context(), g, k, op); err == nil || !strings.Contains(err.Error(), "hook refused") || outcome != idempotency.OutcomeFailed {
		t.Errorf("%v, outcome %s; want the hook's error, failed", err, outcome)
	}
}

// TestOnReplay: the typed hook marks a replayed API response with a header,
// after Config.ReplayHook; the first response is not marked, and a call
// the operation makes of the same result type is not hooked.
func TestOnReplay(t *testing.T) {
	var order []string
	var mu sync.Mutex
	note := func(s string) { mu.Lock(); defer mu.Unlock(); order = append(order, s) }
	g, err := idempotency.New(idempotency.Config{Store: memstore.New(), Namespace: "api", Logger: slog.New(slog.DiscardHandler),
		ReplayHook: func(_ context.Context, r json.RawMessage, _ driver.Record) (json.RawMessage, error) {
			note("config")
			return r, nil
		}})
	if err != nil {
		t.Fatal(err)
	}
	type response = events.APIGatewayV2HTTPResponse
	inner := idempotency.RawKey([]byte(`"inner"`))
	h := idempotency.OnReplay(idempotency.WrapEvent(g, orderKeys, func(ctx context.Context, r events.APIGatewayV2HTTPRequest) (response, error) {
		// A call the operation makes: its replay is the operation's business.
		if _, err := idempotency.Do(ctx, g, inner, func(context.Context) (response, error) { return response{StatusCode: 200}, nil }); err != nil {
			return response{}, err
		}
		return response{StatusCode: 201, Body: `{"order":"` + r.RequestContext.RequestID + `"}`}, nil
	}), func(_ context.Context, r response, rec driver.Record) (response, error) {
		note("typed")
		r.Headers = maps.Clone(r.Headers)
		if r.Headers == nil {
			r.Headers = map[string]string{}
		}
		r.Headers["x-idempotent-replay"] = "true"
		return r, nil
	})
	first, err := h(t.Context(), apiRequest("r1", apiOrder{"o-1", 5}))
	if err != nil || first.Headers["x-idempotent-replay"] != "" {
		t.Fatalf("first: %+v, %v", first, err)
	}
	// The second request's operation runs again (another order) and its
	// inner call replays "inner": that replay is not hooked.
	if r, err := h(t.Context(), apiRequest("r2", apiOrder{"o-2", 5})); err != nil || r.Headers["x-idempotent-replay"] != "" {
		t.Fatalf("another order: %+v, %v", r, err)
	}
	mu.Lock()
	order = order[:0] // the inner replay went through Config.ReplayHook: the guard's, for every call
	mu.Unlock()
	again, err := h(t.Context(), apiRequest("r3", apiOrder{"o-1", 5}))
	if err != nil || again.StatusCode != 201 || again.Body != `{"order":"r1"}` || again.Headers["x-idempotent-replay"] != "true" {
		t.Errorf("replay: %+v, %v; want the first response, marked", again, err)
	}
	mu.Lock()
	defer mu.Unlock()
	if strings.Join(order, ",") != "config,typed" {
		t.Errorf("hooks ran %v, want config then typed", order)
	}
}

func TestOnReplayRefusesNil(t *testing.T) {
	defer func() {
		if recover() == nil {
			t.Error("OnReplay accepted a nil hook")
		}
	}()
	idempotency.OnReplay[int, int](func(context.Context, int) (int, error) { return 0, nil }, nil)
}

// TestReplayHookDoubleRun: a double run returns the other worker's stored
// result, and the hook sees it.
func TestReplayHookDoubleRun(t *testing.T) {
	store := memstore.New()
	t0 := time.Now()
	var hooked atomic.Int32
	newGuard := func(now time.Time) *idempotency.Guard {
		g, err := idempotency.New(idempotency.Config{Store: store, Namespace: "double", Lease: time.Minute,
			Now: func() time.Time { return now }, Logger: slog.New(slog.DiscardHandler),
			ReplayHook: func(_ context.Context, r json.RawMessage, _ driver.Record) (json.RawMessage, error) {
				hooked.Add(1)
				return r, nil
			}})
		if err != nil {
			t.Fatal(err)
		}
		return g
	}
	loser, winner := newGuard(t0), newGuard(t0.Add(time.Hour))
	k := idempotency.RawKey([]byte(`"k"`))
	running, finish := make(chan struct{}), make(chan struct{})
	done := make(chan string)
	go func() {
		s, _ := idempotency.Do(context.Background(), loser, k, func(context.Context) (string, error) {
			close(running)
			<-finish
			return "loser's", nil
		})
		done <- s
	}()
	<-running
	if s, err := idempotency.Do(t.Context(), winner, k, func(context.Context) (string, error) { return "winner's", nil }); err != nil || s != "winner's" {
		t.Fatalf("winner: %q, %v", s, err)
	}
	close(finish)
	if s := <-done; s != "winner's" || hooked.Load() != 1 {
		t.Errorf("loser returned %q with %d hook calls, want the winner's result, hooked once", s, hooked.Load())
	}
}
