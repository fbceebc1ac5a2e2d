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

	"github.com/sqsonce/sqsonce/middleware/batch"
	"github.com/sqsonce/sqsonce/middleware/idempotency"
	"github.com/sqsonce/sqsonce/middleware/idempotency/memstore"
)

// TestLeaseCoversBatchReserve holds a claim made under batch.SQS to a
// lease that lasts until the invocation's deadline, not the records' (the
// reserve before it): Lambda does not stop a worker before its deadline, so
// an operation that outlives its records' context is still running there.
// With Config.SkewMargin below batch.Options.Reserve (here none, as the
// field's doc says: a nanosecond) and keep-alive off, the stored lease
// ended with the records' context, and a duplicate in another worker took
// the key over and ran it while the first run was still going: both ran.
func TestLeaseCoversBatchReserve(t *testing.T) {
	for _, reserve := range []time.Duration{0, 2 * time.Second} {
		t.Run(reserve.String(), func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				store := memstore.New()
				newGuard := func() *idempotency.Guard {
					g, err := idempotency.New(idempotency.Config{Store: store, Namespace: "reserve", SkewMargin: time.Nanosecond,
						KeepAliveEvery: -1, Logger: slog.New(slog.DiscardHandler)})
					if err != nil {
						t.Fatal(err)
					}
					return g
				}
				var runs atomic.Int32
				op := func(_ context.Context, m events.SQSMessage) (string, error) {
					runs.Add(1)
					if m.MessageId == "first" {
						time.Sleep(2900 * time.Millisecond) // ignores its context, returns before Lambda's deadline
					}
					return "done", nil
				}
				first := batch.SQS(idempotency.Wrap(newGuard(), idempotency.BodyField("k"), op), batch.Options{Reserve: reserve})
				second := batch.SQS(idempotency.Wrap(newGuard(), idempotency.BodyField("k"), op), batch.Options{Reserve: reserve})
				ev := func(id string) events.SQSEvent {
					return events.SQSEvent{Records: []events.SQSMessage{{MessageId: id, Body: `{"k":"a"}`}}}
				}
				ctx, cancel := context.WithTimeout(t.Context(), 3*time.Second) // Lambda's default timeout
				defer cancel()
				done := make(chan struct{})
				go func() {
					defer close(done)
					_, _ = first(ctx, ev("first"))
				}()
				// The duplicate comes after the records' deadline, while the
				// first run still goes on in its live invocation.
				time.Sleep(2800 * time.Millisecond)
				dctx, dcancel := context.WithTimeout(t.Context(), 3*time.Second)
				defer dcancel()
				resp, err := second(dctx, ev("second"))
				if err != nil && !errors.As(err, new(*batch.FullBatchFailureError)) {
					t.Fatal(err)
				}
				<-done
				if n := runs.Load(); n != 1 {
					t.Errorf("the operation ran %d times; the duplicate took over a claim whose worker's invocation was live (response %+v)", n, resp)
				}
			})
		})
	}
}
