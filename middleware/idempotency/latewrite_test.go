package idempotency_test

import (
	"context"
	"errors"
	"log/slog"
	"sync/atomic"
	"testing"
	"testing/synctest"
	"time"

	"github.com/aws/aws-lambda-go/events"
	"github.com/aws/aws-lambda-go/lambdacontext"

	"github.com/sqsonce/sqsonce/middleware/batch"
	"github.com/sqsonce/sqsonce/middleware/idempotency"
	"github.com/sqsonce/sqsonce/middleware/idempotency/driver"
	"github.com/sqsonce/sqsonce/middleware/idempotency/memstore"
)

// stallingStore is memstore whose Complete and Release, once stall is set,
// block until their context ends: a store that stopped answering (a
// throttled table, a network partition).
type stallingStore struct {
	*memstore.Store
	stall     atomic.Bool
	completes atomic.Int32
}

func (s *stallingStore) Complete(ctx context.Context, rec driver.Record) ([]byte, error) {
	s.completes.Add(1)
	if s.stall.Load() {
		<-ctx.Done()
		return nil, ctx.Err()
	}
	return s.Store.Complete(ctx, rec)
}

func (s *stallingStore) Release(ctx context.Context, id, owner string) error {
	if s.stall.Load() {
		<-ctx.Done()
		return ctx.Err()
	}
	return s.Store.Release(ctx, id, owner)
}

// stallingSealer is gcmSealer whose Seal, once stall is set, blocks until
// its context ends: a key service that stopped answering.
type stallingSealer struct {
	*gcmSealer
	stall *atomic.Bool
}

func (s stallingSealer) Seal(ctx context.Context, id string, plain []byte) ([]byte, error) {
	if s.stall.Load() {
		<-ctx.Done()
		return nil, ctx.Err()
	}
	return s.gcmSealer.Seal(ctx, id, plain)
}

// TestBatchLateReturnStalledStore: under batch.SQS with its default reserve,
// an operation that ignores its context and returns just after the records'
// deadline, followed by a store (and a sealer) that stall, must not hold the
// batch response past the invocation's deadline: the writes made after the
// operation end a short bound after the records' deadline, the record is
// reported failed and the other one acknowledged. They used to get 5 s
// each, and Lambda lost the response: every record was redelivered.
func TestBatchLateReturnStalledStore(t *testing.T) {
	for _, tc := range []struct {
		name   string
		sealed bool
	}{
		{"store stalls", false},
		{"sealer and store stall", true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				store := &stallingStore{Store: memstore.New()}
				var sealer driver.Sealer
				if tc.sealed {
					sealer = stallingSealer{newGCMSealer(t), &store.stall}
				}
				g, err := idempotency.New(idempotency.Config{Store: store, Namespace: "latewrite", Sealer: sealer,
					Logger: slog.New(slog.DiscardHandler)})
				if err != nil {
					t.Fatal(err)
				}
				deadline := time.Now().Add(3 * time.Second) // Lambda's default timeout
				records := deadline.Add(-batch.DefaultReserve)
				var returned time.Time
				op := func(_ context.Context, m events.SQSMessage) (string, error) {
					if m.MessageId == "slow" {
						time.Sleep(time.Until(records.Add(100 * time.Millisecond))) // ignores its context
						store.stall.Store(true)
						returned = time.Now()
					}
					return "summary", nil
				}
				keyFn := idempotency.BodyField("k")
				h := batch.SQS(idempotency.Wrap(g, keyFn, op), batch.Options{})
				ctx := lambdacontext.NewContext(t.Context(), &lambdacontext.LambdaContext{AwsRequestID: "req-late"})
				ctx, cancel := context.WithDeadline(ctx, deadline)
				defer cancel()
				slow := events.SQSMessage{MessageId: "slow", Body: `{"k":"slow"}`}
				resp, err := h(ctx, events.SQSEvent{Records: []events.SQSMessage{
					{MessageId: "fast", Body: `{"k":"fast"}`}, slow,
				}})
				done := time.Now()
				if err != nil {
					t.Fatalf("batch-level error %v", err)
				}
				if !done.Before(deadline) {
					t.Errorf("the handler returned %v after the invocation's deadline (the operation %v after the records'): Lambda loses the response",
						done.Sub(deadline), returned.Sub(records))
				}
				if got := resp.BatchItemFailures; len(got) != 1 || got[0].ItemIdentifier != "slow" {
					t.Errorf("batch item failures %+v, want only slow's: its completion was never stored", got)
				}
				k, err := idempotency.Select(keyFn, slow)
				if err != nil {
					t.Fatal(err)
				}
				rec, ok := store.Get(mustID(t, g, k))
				if !ok || rec.Status != driver.StatusInProgress {
					t.Errorf("slow's record %+v (found %v), want its claim still in progress", rec, ok)
				}
			})
		})
	}
}

// TestLateReturnStillCompletes: an operation that ran on well past its
// call's deadline (as on Lambda Managed Instances, which do not stop it;
// keep-alive kept its claim) still has its result stored by a healthy
// store: the bound after the deadline never leaves its completion no time.
func TestLateReturnStillCompletes(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		store := &stallingStore{Store: memstore.New()}
		g, err := idempotency.New(idempotency.Config{Store: store, Namespace: "latewrite", Logger: slog.New(slog.DiscardHandler)})
		if err != nil {
			t.Fatal(err)
		}
		ctx, cancel := context.WithTimeout(t.Context(), 3*time.Second)
		defer cancel()
		k := idempotency.Raw([]byte(`"late"`))
		got, err := idempotency.Do(ctx, g, k, func(context.Context) (string, error) {
			time.Sleep(10 * time.Second) // ignores its context
			return "summary", nil
		})
		if err != nil || got != "summary" {
			t.Fatalf("Do = %q, %v; want the late result, stored", got, err)
		}
		if rec, _ := store.Get(mustID(t, g, k)); rec.Status != driver.StatusCompleted {
			t.Errorf("record status %s, want COMPLETED", rec.Status)
		}
	})
}

// TestCanceledCallWritesBounded: a call whose context was cancelled (no
// deadline passed) still gives the completion of an operation that
// finished its full bound, 5 s, against a stalled store, and no more.
func TestCanceledCallWritesBounded(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		store := &stallingStore{Store: memstore.New()}
		g, err := idempotency.New(idempotency.Config{Store: store, Namespace: "latewrite", Logger: slog.New(slog.DiscardHandler)})
		if err != nil {
			t.Fatal(err)
		}
		ctx, cancel := context.WithCancel(t.Context())
		var returned time.Time
		_, err = idempotency.Do(ctx, g, idempotency.Raw([]byte(`"canceled"`)), func(context.Context) (string, error) {
			time.Sleep(time.Second)
			cancel()
			store.stall.Store(true)
			returned = time.Now()
			return "summary", nil
		})
		if err == nil {
			t.Fatal("Do succeeded against a stalled store")
		}
		if took := time.Since(returned); took != 5*time.Second {
			t.Errorf("the completion took %v after the operation returned, want 5 s", took)
		}
		if n := store.completes.Load(); n != 1 {
			t.Errorf("%d Complete calls, want 1 (no retry once the call's context ended)", n)
		}
	})
}

// lateStore is memstore whose Complete and Release take latency (less if
// their context ends first, failing with its error): a store that answers,
// slowly.
type lateStore struct {
	*memstore.Store
	latency time.Duration
}

func (s *lateStore) wait(ctx context.Context) error {
	t := time.NewTimer(s.latency)
	defer t.Stop()
	select {
	case <-t.C:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}

func (s *lateStore) Complete(ctx context.Context, rec driver.Record) ([]byte, error) {
	if err := s.wait(ctx); err != nil {
		return nil, err
	}
	return s.Store.Complete(ctx, rec)
}

func (s *lateStore) Release(ctx context.Context, id, owner string) error {
	if err := s.wait(ctx); err != nil {
		return err
	}
	return s.Store.Release(ctx, id, owner)
}

// lateSealer is gcmSealer whose Seal takes latency (less if its context
// ends first, failing with its error): a key service that answers, slowly.
type lateSealer struct {
	*gcmSealer
	latency time.Duration
}

func (s lateSealer) Seal(ctx context.Context, id string, plain []byte) ([]byte, error) {
	if err := (&lateStore{latency: s.latency}).wait(ctx); err != nil {
		return nil, err
	}
	return s.gcmSealer.Seal(ctx, id, plain)
}

// TestWriteStartedBeforeDeadline: a write made after the operation
// returned (a seal, a completion, a release) gets the same bound past the
// call's deadline whether it starts just before the deadline or just after
// it. A record started late in a batch at Lambda's default timeout (a
// 625 ms window at the threshold) whose operation honours its context and
// returns 70 ms before the records' deadline, on a store or key service
// that takes 100 ms to answer, used to have the write cut at the deadline
// (it started while the call's context was live): the completion lost (the
// operation ran again on the next delivery), the release lost (the key
// blocked until its lease ended), or the seal failed, which withholds the
// result for good; one started 1 ms after the deadline got 200 ms.
func TestWriteStartedBeforeDeadline(t *testing.T) {
	for _, tc := range []struct {
		name         string
		fail, sealed bool
	}{{"completion", false, false}, {"release", true, false}, {"seal", false, true}} {
		t.Run(tc.name, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				const latency = 100 * time.Millisecond
				store := &lateStore{Store: memstore.New(), latency: latency}
				cfg := idempotency.Config{Store: store, Namespace: "latewrite", Logger: slog.New(slog.DiscardHandler)}
				if tc.sealed {
					store.latency = 0
					cfg.Sealer = lateSealer{newGCMSealer(t), latency}
				}
				g, err := idempotency.New(cfg)
				if err != nil {
					t.Fatal(err)
				}
				window := 625 * time.Millisecond
				ctx, cancel := context.WithTimeout(t.Context(), window)
				defer cancel()
				deadline, _ := ctx.Deadline()
				k := idempotency.Raw([]byte(`"late-start"`))
				_, err = idempotency.Do(ctx, g, k, func(octx context.Context) (string, error) {
					time.Sleep(time.Until(deadline.Add(-70 * time.Millisecond)))
					if octx.Err() != nil {
						t.Errorf("the operation's context ended %v before the call's deadline: the test means it to return in time", time.Until(deadline))
					}
					if tc.fail {
						return "", errors.New("provider refused")
					}
					return "summary", nil
				})
				if took := time.Since(deadline); took > 200*time.Millisecond {
					t.Errorf("Do returned %v after the call's deadline, want within 200 ms", took)
				}
				rec, _ := store.Get(mustID(t, g, k))
				switch {
				case tc.fail && rec.ID != "":
					t.Errorf("record %q left %s; want the claim released: the release started before the deadline and needed 100 ms", rec.ID, rec.Status)
				case !tc.fail && (err != nil || rec.Status != driver.StatusCompleted || driver.IsWithheld(rec.Data)):
					t.Errorf("Do = %v, record status %q, result withheld %v; want the result stored: the write started before the deadline and needed 100 ms",
						err, rec.Status, driver.IsWithheld(rec.Data))
				}
			})
		})
	}
}

// TestWriteCancelledMidway: a write made after the operation returned,
// while the call's context was live, still ends when that context is
// cancelled (rather than its deadline passing) while the write runs.
func TestWriteCancelledMidway(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		store := &lateStore{Store: memstore.New(), latency: time.Second}
		g, err := idempotency.New(idempotency.Config{Store: store, Namespace: "latewrite", Logger: slog.New(slog.DiscardHandler)})
		if err != nil {
			t.Fatal(err)
		}
		ctx, cancel := context.WithTimeout(t.Context(), time.Minute)
		defer cancel()
		var returned time.Time
		_, err = idempotency.Do(ctx, g, idempotency.Raw([]byte(`"cancelled"`)), func(context.Context) (string, error) {
			returned = time.Now()
			time.AfterFunc(100*time.Millisecond, cancel)
			return "summary", nil
		})
		if !errors.Is(err, context.Canceled) {
			t.Errorf("Do = %v, want the completion ended by the cancellation", err)
		}
		if took := time.Since(returned); took != 100*time.Millisecond {
			t.Errorf("the completion took %v after the operation returned, want 100 ms (the cancellation)", took)
		}
	})
}
