package idempotency_test

import (
	"context"
	"errors"
	"log/slog"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/sqsonce/sqsonce/middleware/idempotency"
	"github.com/sqsonce/sqsonce/middleware/idempotency/driver"
	"github.com/sqsonce/sqsonce/middleware/idempotency/memstore"
)

// worker is one process's guard on a shared store, with its own clock, its
// log and its outcomes.
type worker struct {
	guard  *idempotency.Guard
	logs   *logCapture
	mu     sync.Mutex
	events []idempotency.Report
}

func newWorker(t *testing.T, store driver.Store, now time.Time) *worker {
	t.Helper()
	w := &worker{logs: &logCapture{}}
	g, err := idempotency.New(idempotency.Config{
		Store: store, Namespace: "double", Lease: time.Minute,
		Now:    func() time.Time { return now },
		Logger: slog.New(slog.NewJSONHandler(w.logs, &slog.HandlerOptions{Level: slog.LevelDebug})),
		OnOutcome: func(_ context.Context, ev idempotency.Report) {
			w.mu.Lock()
			defer w.mu.Unlock()
			w.events = append(w.events, ev)
		},
	})
	if err != nil {
		t.Fatal(err)
	}
	w.guard = g
	return w
}

func (w *worker) outcomes() []idempotency.Outcome {
	w.mu.Lock()
	defer w.mu.Unlock()
	var out []idempotency.Outcome
	for _, ev := range w.events {
		out = append(out, ev.Outcome)
	}
	return out
}

// TestDoubleRunVisible: a worker outlives its lease while its operation
// runs, a second worker takes the key over and runs the operation too: the
// double run the promise allows. The first worker learns it when its
// completion is refused. It must say so with an outcome of its own,
// double_run with Ran set, logged at ERROR: not replayed, which looks like a
// duplicate suppressed (issue 15, finding 14). Both workers are goroutines
// on one memstore; the second's clock is an hour on, past the first's
// lease.
func TestDoubleRunVisible(t *testing.T) {
	for _, tc := range []struct {
		name       string
		winnerDone bool // the winner completed before the loser tried to
		wantErr    error
	}{
		{"the winner completed: its result is returned", true, nil},
		{"the winner still runs: ErrInProgress", false, idempotency.ErrInProgress},
	} {
		t.Run(tc.name, func(t *testing.T) {
			store := memstore.New()
			t0 := time.Now()
			loser, winner := newWorker(t, store, t0), newWorker(t, store, t0.Add(time.Hour))
			k := idempotency.Raw([]byte(`"order-7"`))

			loserRuns, loserMayReturn := make(chan struct{}), make(chan struct{})
			winnerRuns, winnerMayReturn := make(chan struct{}), make(chan struct{})
			var wg sync.WaitGroup
			var loserGot, winnerGot string
			var loserErr, winnerErr error
			wg.Go(func() {
				loserGot, loserErr = idempotency.Do(context.Background(), loser.guard, k, func(context.Context) (string, error) {
					close(loserRuns)
					<-loserMayReturn // outlives its lease (it ignores its context)
					return "loser's", nil
				})
			})
			<-loserRuns
			wg.Go(func() {
				winnerGot, winnerErr = idempotency.Do(context.Background(), winner.guard, k, func(context.Context) (string, error) {
					close(winnerRuns)
					<-winnerMayReturn
					return "winner's", nil
				})
			})
			<-winnerRuns // taken over: both run now
			if tc.winnerDone {
				close(winnerMayReturn)
				for len(winner.outcomes()) == 0 {
					time.Sleep(time.Millisecond)
				}
			}
			close(loserMayReturn)
			if !tc.winnerDone {
				for len(loser.outcomes()) == 0 {
					time.Sleep(time.Millisecond)
				}
				close(winnerMayReturn)
			}
			wg.Wait()

			if winnerErr != nil || winnerGot != "winner's" {
				t.Fatalf("winner: %q, %v", winnerGot, winnerErr)
			}
			if got := winner.outcomes(); !slices.Equal(got, []idempotency.Outcome{idempotency.OutcomeTakenOver}) {
				t.Errorf("winner's outcomes %v, want [taken_over]", got)
			}
			if !errors.Is(loserErr, tc.wantErr) || (tc.wantErr == nil) != (loserErr == nil) {
				t.Errorf("loser's error %v, want %v", loserErr, tc.wantErr)
			}
			if tc.winnerDone && loserGot != "winner's" {
				t.Errorf("loser returned %q, want the winner's stored result", loserGot)
			}
			loser.mu.Lock()
			evs := slices.Clone(loser.events)
			loser.mu.Unlock()
			if len(evs) != 1 || evs[0].Outcome != idempotency.OutcomeDoubleRun || !evs[0].Ran {
				t.Fatalf("loser's events %+v, want one double_run with Ran", evs)
			}
			lines := loser.logs.lines(t)
			if len(lines) != 1 || lines[0]["outcome"] != "double_run" || lines[0]["level"] != "ERROR" || lines[0]["ran"] != true {
				t.Errorf("loser's log %v, want one ERROR line with outcome double_run, ran true", lines)
			}
			if rec, _ := store.Get(mustID(t, loser.guard, k)); tc.winnerDone && string(rec.Data) != `"winner's"` {
				t.Errorf("stored %s, want the winner's result kept", rec.Data)
			}
		})
	}
}
