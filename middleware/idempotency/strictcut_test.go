package idempotency_test

import (
	"context"
	"errors"
	"log/slog"
	"sync/atomic"
	"testing"
	"time"

	"github.com/sqsonce/sqsonce/middleware/idempotency"
	"github.com/sqsonce/sqsonce/middleware/idempotency/driver"
	"github.com/sqsonce/sqsonce/middleware/idempotency/memstore"
)

// refusingExtender is memstore whose lease extensions all fail, as on a
// worker cut off from its store.
type refusingExtender struct{ *memstore.Store }

func (refusingExtender) Extend(context.Context, driver.Record, time.Time) error {
	return errors.New("throttled")
}

// TestStrictCutNotReleased: in strict mode, an operation the guard cut
// because its claim could not be kept alive has an unknown outcome: its
// claim is not released (a release would clear a quarantine), so the next
// call finds it in progress, then quarantined once it lapsed, and never
// runs the operation again. In default mode the claim is released.
func TestStrictCutNotReleased(t *testing.T) {
	const lease = 400 * time.Millisecond
	for _, strict := range []bool{true, false} {
		s := memstore.New()
		g, err := idempotency.New(idempotency.Config{Store: refusingExtender{s}, Namespace: "cut", Strict: strict,
			Lease: lease, KeepAliveEvery: 50 * time.Millisecond, SkewMargin: time.Millisecond, Logger: slog.New(slog.DiscardHandler)})
		if err != nil {
			t.Fatal(err)
		}
		var runs atomic.Int32
		op := func(ctx context.Context) (string, error) {
			if runs.Add(1) > 1 {
				return "again", nil
			}
			<-ctx.Done() // the payment's response still in flight
			return "", ctx.Err()
		}
		// No deadline: the lease is Config.Lease, kept alive by extensions
		// (a worker outside Lambda's invocations).
		_, err = idempotency.Do(context.Background(), g, key, op)
		if !errors.Is(err, idempotency.ErrLeaseNotExtended) {
			t.Fatalf("strict %v: first call: %v, want ErrLeaseNotExtended", strict, err)
		}
		rec, found := s.Get(mustID(t, g, key))
		if released := !found || rec.Owner == ""; released == strict {
			t.Fatalf("strict %v: record %+v after the cut: released %v", strict, rec, released)
		}
		time.Sleep(lease) // the claim lapses
		_, err = idempotency.Do(context.Background(), g, key, op)
		if strict && (!errors.Is(err, idempotency.ErrQuarantined) || runs.Load() != 1) {
			t.Errorf("strict: second call: %v, %d runs; want ErrQuarantined, 1 run", err, runs.Load())
		}
		if !strict && (err != nil || runs.Load() != 2) {
			t.Errorf("default: second call: %v, %d runs; want the operation run again", err, runs.Load())
		}
	}
}
