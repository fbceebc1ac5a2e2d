package ptinterop_test

import (
	"context"
	"crypto/rand"
	"encoding/json"
	"errors"
	"slices"
	"sync/atomic"
	"testing"
	"time"

	"github.com/aws/aws-lambda-go/events"

	ptinterop "github.com/sqsonce/sqsonce/internal/testenv/powertools"
	"github.com/sqsonce/sqsonce/middleware/idempotency"
	"github.com/sqsonce/sqsonce/middleware/idempotency/driver"
	"github.com/sqsonce/sqsonce/middleware/idempotency/jmespath"
)

func strict(c *guardConfig) { c.Strict = true }

// TestStrictQuarantineSharedWithPowertools: a claim whose worker died mid
// call, written by Powertools (no owner) or by sqsonce (with one), is
// quarantined by a strict sqsonce delivery, not run; then Powertools, on
// the same table, reads the quarantined record as in progress
// (IdempotencyAlreadyInProgressError) and does not run its handler either,
// though the claim's own lease lapsed long ago. The control is TestReclaim:
// without strict mode, the lapsed claim is taken over and run again.
func TestStrictQuarantineSharedWithPowertools(t *testing.T) {
	for _, l := range []struct {
		name string
		l    layout
	}{{"id", layout{}}, {"sort key", sortKeyLayout}} {
		t.Run(l.name, func(t *testing.T) {
			tb := newLayoutTable(t, l.l)
			for _, writer := range []string{"powertools", "sqsonce"} {
				t.Run("claim by "+writer, func(t *testing.T) {
					key := "k-" + rand.Text()
					switch writer {
					case "powertools":
						first := message(key, nil, `"first"`)
						rep := powertools(t, tb, func(r *ptinterop.Request) { r.Crash, r.RemainingMs = true, 1 }, first)
						if rep.Crashed != first.MessageId {
							t.Fatalf("the Powertools handler did not run: %+v", rep)
						}
					case "sqsonce":
						now := time.Now().Add(-time.Hour)
						rec := driver.Record{ID: recordID(t, tb, key), Status: driver.StatusInProgress,
							ExpiresAt: now.Add(2 * time.Hour), LeaseUntil: now.Add(time.Minute), Owner: "dead-worker"}
						if _, loaded, err := tb.store.Acquire(context.Background(), rec, now, driver.Takeover); err != nil || loaded {
							t.Fatalf("seed sqsonce's lapsed claim: loaded=%v, %v", loaded, err)
						}
					}

					again := message(key, nil, `"second"`)
					s := newSqsonce(t, tb, withClock(time.Second), strict) // one second on: a 1 ms lease has passed
					resp := s.run(t, again)
					if !slices.Equal(failed(resp.BatchItemFailures), []string{again.MessageId}) || s.didRun(again.MessageId) {
						t.Fatalf("strict sqsonce: failures %v, ran %v; want the message failed, not run", resp.BatchItemFailures, s.didRun(again.MessageId))
					}
					var qe *idempotency.QuarantinedError
					if err := s.result(again.MessageId).err; !errors.As(err, &qe) {
						t.Fatalf("strict sqsonce: %v, want a *QuarantinedError", err)
					}
					if o := s.outcome(again.MessageId).Outcome; o != idempotency.OutcomeQuarantined {
						t.Errorf("outcome %q, want quarantined", o)
					}

					third := message(key, nil, `"third"`)
					rep := powertools(t, tb, nil, third)
					rec := rep.Events[0].Records[0]
					if rec.Status != "fail" || rec.Error != "IdempotencyAlreadyInProgressError" || len(rep.Ran) != 0 {
						t.Errorf("powertools on the quarantined record: %+v, ran %v; want IdempotencyAlreadyInProgressError, not run", rec, rep.Ran)
					}

					// A default sqsonce guard, an hour of leases later, refuses it too.
					d := newSqsonce(t, tb, withClock(time.Minute))
					fourth := message(key, nil, `"fourth"`)
					d.run(t, fourth)
					if err := d.result(fourth.MessageId).err; !errors.Is(err, idempotency.ErrQuarantined) || d.didRun(fourth.MessageId) {
						t.Errorf("default sqsonce on the quarantined record: %v, ran %v; want ErrQuarantined, not run", err, d.didRun(fourth.MessageId))
					}
				})
			}
		})
	}
}

// TestStrictClaimSharedWithPowertools: a strict sqsonce call, with
// Lambda's 3 s deadline and no option but the ones sharing a table needs,
// outlives its lease; then Powertools, on the same table, reads its claim
// as in progress (IdempotencyAlreadyInProgressError) and does not run its
// handler, though the lease lapsed: a strict claim's in_progress_expiration
// is the record's expiry. A default sqsonce guard quarantines it and runs
// nothing. The strict call then completes, and Powertools replays its
// result. The control is TestReclaim: a default claim whose lease lapsed
// is taken over by Powertools.
func TestStrictClaimSharedWithPowertools(t *testing.T) {
	tb := newTable(t)
	// Keep-alive off: the strict worker is frozen or killed at its
	// deadline, as Lambda does, so its claim lapses. (With keep-alive, an
	// owner whose operation still runs keeps its claim: docs/leases.md.)
	g, err := idempotency.New(idempotency.Config{Store: tb.store, Namespace: keyPrefix,
		Format: idempotency.FormatPowertoolsTypeScript, Strict: true, KeepAliveEvery: -1})
	if err != nil {
		t.Fatal(err)
	}
	started, release := make(chan struct{}), make(chan struct{})
	var runs atomic.Int32
	op := idempotency.Wrap(g, jmespath.MustCompile(keyJMESPath).Selector(), func(context.Context, events.SQSMessage) (string, error) {
		runs.Add(1)
		close(started)
		<-release // outlives its context and its lease
		return "strict result", nil
	})
	key := "k-" + rand.Text()
	first := message(key, nil, `"unused"`)
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Second) // Lambda's default timeout
	defer cancel()
	deadline, _ := ctx.Deadline()
	done := make(chan error, 1)
	go func() { _, err := op(ctx, first); done <- err }()
	select {
	case <-started:
	case err := <-done:
		t.Fatalf("the strict call did not start its operation: %v", err)
	}
	time.Sleep(time.Until(deadline.Add(defaultSkewMargin + time.Second)))

	again := message(key, nil, `"powertools ran"`)
	rep := powertools(t, tb, nil, again)
	if rec := rep.Events[0].Records[0]; rec.Status != "fail" || rec.Error != "IdempotencyAlreadyInProgressError" || len(rep.Ran) != 0 {
		t.Errorf("powertools on a strict claim whose lease lapsed: %+v, ran %v; want IdempotencyAlreadyInProgressError, not run", rec, rep.Ran)
	}
	d := newSqsonce(t, tb)
	third := message(key, nil, `"default ran"`)
	d.run(t, third)
	if err := d.result(third.MessageId).err; !errors.Is(err, idempotency.ErrQuarantined) || d.didRun(third.MessageId) {
		t.Errorf("default sqsonce on a strict claim whose lease lapsed: %v, ran %v; want ErrQuarantined, not run", err, d.didRun(third.MessageId))
	}

	close(release)
	if err := <-done; err != nil {
		t.Errorf("the strict call: %v", err)
	}
	fourth := message(key, nil, `"powertools ran"`)
	rep = powertools(t, tb, nil, fourth)
	var got any
	if rec := rep.Events[0].Records[0]; rec.Status != "success" || len(rep.Ran) != 0 || json.Unmarshal(rec.Value, &got) != nil || got != "strict result" {
		t.Errorf("powertools after the strict call completed: %+v, ran %v; want the strict call's result replayed", rec, rep.Ran)
	}
	if n := runs.Load(); n != 1 {
		t.Errorf("the strict operation ran %d times, want once", n)
	}
}

// defaultSkewMargin is the guard's default Config.SkewMargin.
const defaultSkewMargin = 5 * time.Second
