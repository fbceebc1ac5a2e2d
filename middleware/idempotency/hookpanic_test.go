package idempotency_test

import (
	"context"
	"errors"
	"log/slog"
	"sync/atomic"
	"testing"
	"time"

	"github.com/sqsonce/sqsonce/middleware/failure"
	"github.com/sqsonce/sqsonce/middleware/idempotency"
	"github.com/sqsonce/sqsonce/middleware/idempotency/driver"
	"github.com/sqsonce/sqsonce/middleware/idempotency/memstore"
)

// TestOnRunPanics: a panic in Config.OnRun or in the done it returns never
// strands a claim: the operation's context ends (the keep-alive stops), and
// the call fails with the panic. Before the operation starts, or after it
// failed, the claim is released, so the next call runs the operation;
// after it succeeded, its result is stored and replayed.
func TestOnRunPanics(t *testing.T) {
	const lease, every = 300 * time.Millisecond, 50 * time.Millisecond
	for _, c := range []struct {
		name          string
		hook          func(context.Context) (context.Context, func(error))
		runs          int32 // the operation's runs after the first call
		status        driver.Status
		secondRunsToo bool // the second call runs the operation
	}{
		{"OnRun", func(context.Context) (context.Context, func(error)) { panic("hook bug") }, 0, "", true},
		{"done", func(ctx context.Context) (context.Context, func(error)) {
			return ctx, func(error) { panic("hook bug") }
		}, 1, driver.StatusCompleted, false},
		{"done after a failure", func(ctx context.Context) (context.Context, func(error)) {
			return ctx, func(error) { panic("hook bug") }
		}, 1, "", true},
	} {
		t.Run(c.name, func(t *testing.T) {
			store := memstore.New()
			cfg := idempotency.Config{Store: store, Namespace: "hooks", Lease: lease, KeepAliveEvery: every,
				Logger: slog.New(slog.DiscardHandler)}
			panicky := cfg
			var opCtx context.Context // the operation's context, as OnRun got it
			panicky.OnRun = func(ctx context.Context) (context.Context, func(error)) {
				opCtx = ctx
				return c.hook(ctx)
			}
			g, err := idempotency.New(panicky)
			if err != nil {
				t.Fatal(err)
			}
			var runs atomic.Int32
			op := func(context.Context) (string, error) {
				if runs.Add(1) == 1 && c.name == "done after a failure" {
					return "", errors.New("model unavailable")
				}
				return "the result", nil
			}
			_, err = idempotency.Do(ctxWithDeadline(t), g, key, op)
			if pe, ok := errors.AsType[*failure.PanicError](err); !ok || pe.Value != "hook bug" {
				t.Fatalf("first call: %v, want the hook's panic", err)
			}
			if opCtx == nil || opCtx.Err() == nil {
				t.Fatal("the operation's context is live after the call returned: its keep-alive was not stopped")
			}
			if n := runs.Load(); n != c.runs {
				t.Fatalf("first call ran the operation %d times, want %d", n, c.runs)
			}
			id := mustID(t, g, key)
			rec, _ := store.Get(id)
			if rec.Status != c.status {
				t.Fatalf("record after the first call: %+v, want status %q", rec, c.status)
			}
			clean, err := idempotency.New(cfg)
			if err != nil {
				t.Fatal(err)
			}
			got, err := idempotency.Do(ctxWithDeadline(t), clean, key, op)
			if err != nil || got != "the result" {
				t.Fatalf("second call: %q, %v", got, err)
			}
			if want := c.runs + 1; !c.secondRunsToo {
				if n := runs.Load(); n != c.runs {
					t.Errorf("second call ran the operation: %d runs, want %d (a replay)", n, c.runs)
				}
			} else if n := runs.Load(); n != want {
				t.Errorf("second call: %d runs, want %d", n, want)
			}
		})
	}
}
