package idempotency_test

import (
	"context"
	"errors"
	"fmt"
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

// TestLateReturnNotReleased: an operation whose claim could not be kept
// alive has its context ended a reserve before its lease. If it returns an
// error after the lease ended, its claim is not released: another worker
// may have quarantined it (a release would clear that, and the next
// delivery would run the operation again), or taken it over. A strict
// claim then stays quarantined, a default one is taken over; an operation
// that returns in time releases its claim as any failed operation does.
func TestLateReturnNotReleased(t *testing.T) {
	const lease = 400 * time.Millisecond
	for _, c := range []struct {
		name          string
		strict        bool // the worker's guard
		late          bool // the operation returns after its lease ended
		peer          bool // a strict peer quarantines the lapsed claim meanwhile
		secondRuns    bool // the next call runs the operation
		secondErr     error
		releasedFirst bool
	}{
		{"strict, late", true, true, false, false, idempotency.ErrQuarantined, false},
		{"strict, late, quarantined meanwhile", true, true, true, false, idempotency.ErrQuarantined, false},
		{"default, late, quarantined by a strict peer", false, true, true, false, idempotency.ErrQuarantined, false},
		{"default, late", false, true, false, true, nil, false},
		{"strict, in time", true, false, false, true, nil, true},
	} {
		t.Run(c.name, func(t *testing.T) {
			s := memstore.New()
			cfg := idempotency.Config{Store: refusingExtender{s}, Namespace: "cut", Lease: lease,
				KeepAliveEvery: 50 * time.Millisecond, SkewMargin: time.Millisecond, Logger: slog.New(slog.DiscardHandler)}
			worker, peer := cfg, cfg
			worker.Strict, peer.Strict = c.strict, true
			g, err := idempotency.New(worker)
			if err != nil {
				t.Fatal(err)
			}
			p, err := idempotency.New(peer)
			if err != nil {
				t.Fatal(err)
			}
			// The second call is the peer's when it quarantined the claim,
			// else the worker's own guard's.
			next := g
			if c.peer {
				next = p
			}
			var runs atomic.Int32
			var peerErr error
			var op func(context.Context) (string, error)
			op = func(ctx context.Context) (string, error) {
				if runs.Add(1) > 1 {
					return "again", nil
				}
				<-ctx.Done() // the guard cut it: the payment's response still in flight
				if c.late {
					time.Sleep(lease / 2) // past the lease and its skew margin
					if c.peer {
						_, peerErr = idempotency.Do(context.Background(), p, key, op)
					}
				}
				return "", ctx.Err()
			}
			// No deadline: the lease is Config.Lease, kept alive by
			// extensions (a worker outside Lambda's invocations).
			if _, err = idempotency.Do(context.Background(), g, key, op); !errors.Is(err, idempotency.ErrLeaseNotExtended) {
				t.Fatalf("first call: %v, want ErrLeaseNotExtended", err)
			}
			if c.peer && !errors.Is(peerErr, idempotency.ErrQuarantined) {
				t.Fatalf("the peer's call while the operation ran: %v, want ErrQuarantined", peerErr)
			}
			rec, found := s.Get(mustID(t, g, key))
			if released := !found || rec.Owner == ""; released != c.releasedFirst {
				t.Fatalf("record %+v after the first call: released %v, want %v", rec, released, c.releasedFirst)
			}
			time.Sleep(lease) // a claim not released lapses
			got, err := idempotency.Do(context.Background(), next, key, op)
			if c.secondRuns != (runs.Load() == 2) || !errors.Is(err, c.secondErr) || (c.secondErr == nil && got != "again") {
				t.Errorf("second call: %q, %v, %d runs; want error %v, run again %v", got, err, runs.Load(), c.secondErr, c.secondRuns)
			}
		})
	}
}

// TestLateReturnNotReleasedWithoutKeepAlive: with keep-alive off (or a
// store without Extend) the lease is the claimed one, and its end decides
// as the keeper's does: an operation that fails after it is not released
// (a strict claim stays to be quarantined), one that fails in time is.
func TestLateReturnNotReleasedWithoutKeepAlive(t *testing.T) {
	const lease = 400 * time.Millisecond
	for _, late := range []bool{true, false} {
		t.Run(fmt.Sprint("late ", late), func(t *testing.T) {
			s := memstore.New()
			g, err := idempotency.New(idempotency.Config{Store: s, Namespace: "cut", Lease: lease, KeepAliveEvery: -1,
				SkewMargin: time.Millisecond, Strict: true, Logger: slog.New(slog.DiscardHandler)})
			if err != nil {
				t.Fatal(err)
			}
			var runs atomic.Int32
			op := func(ctx context.Context) (string, error) {
				if runs.Add(1) > 1 {
					return "again", nil
				}
				<-ctx.Done() // ends a reserve before the lease does
				if late {
					time.Sleep(lease / 2) // past the lease
				}
				return "", ctx.Err()
			}
			if _, err := idempotency.Do(context.Background(), g, key, op); err == nil {
				t.Fatal("first call: no error")
			}
			rec, found := s.Get(mustID(t, g, key))
			if released := !found || rec.Owner == ""; released == late {
				t.Fatalf("record %+v after the first call: released %v, want %v", rec, released, !late)
			}
			time.Sleep(lease)
			got, err := idempotency.Do(context.Background(), g, key, op)
			if late && !errors.Is(err, idempotency.ErrQuarantined) || !late && (err != nil || got != "again") {
				t.Errorf("second call: %q, %v; want quarantined %v, else run again", got, err, late)
			}
		})
	}
}
