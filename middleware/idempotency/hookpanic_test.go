package idempotency_test

import (
	"context"
	"errors"
	"log/slog"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/aws/aws-lambda-go/events"

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

// TestUserCodePanicsReported: a panic in the user's code around the
// operation (an OnReplay hook, a SelectorFunc key or payload, WrapJSON's
// check) fails its call with a *failure.PanicError, reported as every call
// is (one Report, one log line), never escaping the wrapper; before the
// claim, nothing is claimed and the operation does not run.
func TestUserCodePanicsReported(t *testing.T) {
	type req struct {
		Key string `json:"key"`
	}
	boom := func() { panic("user bug") }
	key := idempotency.BodyField("key")
	panicky := idempotency.SelectorFunc(func(events.SQSMessage) (idempotency.Selection, error) { boom(); return idempotency.Selection{}, nil })
	panickyReq := idempotency.SelectorFunc(func(req) (idempotency.Selection, error) { boom(); return idempotency.Selection{}, nil })
	replay := func(context.Context, string, idempotency.Report) (string, error) { boom(); return "", nil }
	msg := events.SQSMessage{MessageId: "m", Body: `{"key":"k"}`}
	sel, err := idempotency.Select(key, msg) // the record Wrap(g, key, …) finds for msg
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct {
		name   string
		call   func(g *idempotency.Guard, op func() string) (string, error)
		replay bool // the panic is on a replay: the first call completes
	}{
		{"OnReplay in Do", func(g *idempotency.Guard, op func() string) (string, error) {
			return idempotency.Do(context.Background(), g, sel, func(context.Context) (string, error) { return op(), nil }, idempotency.OnReplay(replay))
		}, true},
		{"OnReplay in Wrap", func(g *idempotency.Guard, op func() string) (string, error) {
			return idempotency.Wrap(g, key, func(context.Context, events.SQSMessage) (string, error) { return op(), nil },
				idempotency.OnReplay(replay))(context.Background(), events.SQSMessage{MessageId: "m", Body: `{"key":"k"}`})
		}, true},
		{"Wrap's key", func(g *idempotency.Guard, op func() string) (string, error) {
			return idempotency.Wrap(g, panicky, func(context.Context, events.SQSMessage) (string, error) { return op(), nil })(
				context.Background(), events.SQSMessage{MessageId: "m", Body: `{"key":"k"}`})
		}, false},
		{"Wrap's payload", func(g *idempotency.Guard, op func() string) (string, error) {
			return idempotency.Wrap(g, key, func(context.Context, events.SQSMessage) (string, error) { return op(), nil },
				idempotency.WithPayload(panicky))(context.Background(), events.SQSMessage{MessageId: "m", Body: `{"key":"k"}`})
		}, false},
		{"WrapJSON's key", func(g *idempotency.Guard, op func() string) (string, error) {
			return idempotency.WrapJSON(g, panickyReq, func(context.Context, req, events.SQSMessage) (string, error) { return op(), nil })(
				context.Background(), events.SQSMessage{MessageId: "m", Body: `{"key":"k"}`})
		}, false},
		{"WrapJSON's request type", func(g *idempotency.Guard, op func() string) (string, error) {
			return idempotency.WrapJSON(g, key, func(context.Context, panickyReq2, events.SQSMessage) (string, error) { return op(), nil })(
				context.Background(), events.SQSMessage{MessageId: "m", Body: `{"key":"k","p":1}`})
		}, false},
		{"WrapJSON's request type, as text", func(g *idempotency.Guard, op func() string) (string, error) {
			return idempotency.WrapJSON(g, key, func(context.Context, panickyReq2, events.SQSMessage) (string, error) { return op(), nil })(
				context.Background(), events.SQSMessage{MessageId: "m", Body: `{"key":"k","t":"x"}`})
		}, false},
		{"WrapJSON's check", func(g *idempotency.Guard, op func() string) (string, error) {
			return idempotency.WrapJSON(g, key, func(context.Context, req, events.SQSMessage) (string, error) { return op(), nil },
				idempotency.WithCheck(func(req) error { boom(); return nil }))(context.Background(), events.SQSMessage{MessageId: "m", Body: `{"key":"k"}`})
		}, false},
	} {
		t.Run(c.name, func(t *testing.T) {
			var reports []idempotency.Report
			g, err := idempotency.New(idempotency.Config{Store: memstore.New(), Namespace: "n", Logger: slog.New(slog.DiscardHandler),
				OnOutcome: func(_ context.Context, r idempotency.Report) { reports = append(reports, r) }})
			if err != nil {
				t.Fatal(err)
			}
			runs := 0
			op := func() string { runs++; return "v" }
			calls := 1
			if c.replay {
				calls = 2
				if _, err := idempotency.Do(context.Background(), g, sel, func(context.Context) (string, error) { return op(), nil }); err != nil {
					t.Fatal(err)
				}
			}
			var got error
			func() {
				defer func() {
					if v := recover(); v != nil {
						t.Fatalf("the panic escaped the call: %v", v)
					}
				}()
				_, got = c.call(g, op)
			}()
			var pe *failure.PanicError
			if !errors.As(got, &pe) {
				t.Errorf("the call's error %v, want a *failure.PanicError", got)
			}
			if len(reports) != calls {
				t.Fatalf("%d reports for %d calls", len(reports), calls)
			}
			if last := reports[len(reports)-1]; last.Outcome != idempotency.OutcomeFailed || !errors.As(last.Err, &pe) {
				t.Errorf("the report: %s, %v; want failed with the panic", last.Outcome, last.Err)
			} else if !strings.HasPrefix(c.name, "OnReplay in Do") && last.InputID != "m" {
				t.Errorf("the report names input %q, want the message's id m", last.InputID)
			}
			if want := calls - 1; runs != want {
				t.Errorf("the operation ran %d times, want %d", runs, want)
			}
			if !c.replay { // nothing was claimed: the next call runs it
				if _, err := idempotency.Do(context.Background(), g, sel, func(context.Context) (string, error) { return op(), nil }); err != nil || runs != 1 {
					t.Errorf("the next call: %v, the operation ran %d times; want it run once", err, runs)
				}
			}
		})
	}
}

// panickyReq2 is a request type whose fields' own decoding panics (user
// code that WrapJSON runs on the body, as it runs a check).
type panickyReq2 struct {
	Key string          `json:"key"`
	P   panickyJSONUnm  `json:"p"`
	T   *panickyTextUnm `json:"t"`
}

type panickyJSONUnm struct{}

func (*panickyJSONUnm) UnmarshalJSON([]byte) error { panic("user bug") }

type panickyTextUnm struct{}

func (*panickyTextUnm) UnmarshalText([]byte) error { panic("user bug") }
