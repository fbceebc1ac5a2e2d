package storetest

import (
	"context"
	"crypto/rand"
	"errors"
	"fmt"
	"log/slog"
	"sync"
	"testing"
	"time"

	"github.com/sqsonce/sqsonce/middleware/idempotency"
	"github.com/sqsonce/sqsonce/middleware/idempotency/driver"
)

// KeepAliveLease is the initial lease of [KeepAliveLiveOwner]'s claims;
// their operations run three times as long.
const KeepAliveLease = time.Second

// KeepAliveLiveOwner checks that a guard keeps its live claim alive on s,
// a store that implements [driver.Extender], with zero keep-alive options:
// the owner's operation runs three times its initial lease (Config.Lease,
// no deadline), while a second guard on the same store calls the key every
// 50 ms. No call of the second guard runs it, takes it over or (strict)
// quarantines it: each is in progress, and once the owner completed, each
// replays its result. The owner's operation is not cancelled, and its
// lease was extended at least twice. It runs for default and strict
// claims. The test fails, rather than skips, on a store without
// Extender: call it only for one that has it.
func KeepAliveLiveOwner(t *testing.T, s driver.Store) {
	t.Helper()
	if _, ok := s.(driver.Extender); !ok {
		t.Fatalf("%T does not implement driver.Extender", s)
	}
	for _, strict := range []bool{false, true} {
		t.Run(fmt.Sprintf("strict=%v", strict), func(t *testing.T) {
			var (
				mu      sync.Mutex
				reports []idempotency.Report
			)
			newGuard := func(record bool) *idempotency.Guard {
				cfg := idempotency.Config{Store: s, Namespace: "storetest-keepalive", Lease: KeepAliveLease,
					SkewMargin: time.Millisecond, Strict: strict, Logger: slog.New(slog.DiscardHandler)}
				if record {
					cfg.OnOutcome = func(_ context.Context, r idempotency.Report) {
						mu.Lock()
						reports = append(reports, r)
						mu.Unlock()
					}
				}
				g, err := idempotency.New(cfg)
				if err != nil {
					t.Fatal(err)
				}
				return g
			}
			owner, other := newGuard(true), newGuard(false)
			k := idempotency.Raw([]byte(`"` + rand.Text() + `"`))

			started := make(chan struct{})
			done := make(chan error, 1)
			go func() {
				_, err := idempotency.Do(context.Background(), owner, k, func(ctx context.Context) (string, error) {
					close(started)
					select {
					case <-time.After(3 * KeepAliveLease):
						return "owner's", nil
					case <-ctx.Done():
						return "", context.Cause(ctx)
					}
				})
				done <- err
			}()
			<-started

			var polls, otherRuns int
			tick := time.NewTicker(50 * time.Millisecond)
			defer tick.Stop()
		poll:
			for {
				select {
				case err := <-done:
					if err != nil {
						t.Fatalf("the owner's call: %v", err)
					}
					break poll
				case <-tick.C:
				}
				polls++
				got, err := idempotency.Do(context.Background(), other, k, func(context.Context) (string, error) {
					otherRuns++
					return "other's", nil
				})
				if err == nil && got == "owner's" && otherRuns == 0 {
					// The owner completed since the last tick (its call
					// may not have returned yet): its result is replayed.
					select {
					case oerr := <-done:
						if oerr != nil {
							t.Fatalf("the owner's call: %v", oerr)
						}
					case <-time.After(10 * time.Second):
						t.Fatalf("poll %d replayed the owner's result, but the owner's call did not return", polls)
					}
					break poll
				}
				if !errors.Is(err, idempotency.ErrInProgress) {
					t.Fatalf("poll %d of the live owner's key: %q, err = %v, %d runs; want ErrInProgress", polls, got, err, otherRuns)
				}
			}
			if otherRuns != 0 {
				t.Fatalf("the second guard ran the live owner's operation %d times", otherRuns)
			}
			got, err := idempotency.Do(context.Background(), other, k, func(context.Context) (string, error) {
				otherRuns++
				return "other's", nil
			})
			if err != nil || got != "owner's" || otherRuns != 0 {
				t.Fatalf("after the owner completed: %q, %v, %d runs; want the owner's result replayed", got, err, otherRuns)
			}
			mu.Lock()
			defer mu.Unlock()
			if len(reports) != 1 || reports[0].Outcome != idempotency.OutcomeClaimed || reports[0].Extensions < 2 {
				t.Fatalf("the owner's reports %+v: want one, claimed, with at least 2 extensions", reports)
			}
			t.Logf("strict=%v: %d polls in progress, 0 runs by the second guard, %d extensions over %v (initial lease %v)",
				strict, polls, reports[0].Extensions, 3*KeepAliveLease, KeepAliveLease)
		})
	}
}

// Figures of [KeepAliveSkewedReader]: the record's expiry
// (Config.ExpiresAfter), the initial lease, and how far the reader's
// clock runs ahead of the owner's, inside the default SkewMargin (5 s).
const (
	SkewedReaderExpiry = 8 * time.Second
	SkewedReaderLease  = time.Second
	SkewedReaderAhead  = 3 * time.Second
)

// KeepAliveSkewedReader checks that the keep-alive never keeps an owner
// working past the point where a worker whose clock runs ahead, by less
// than the SkewMargin, takes its record as expired: the owner's
// operation runs until its context ends, with SkewedReaderExpiry as
// ExpiresAfter and the default KeepAliveLimit (at most ExpiresAfter),
// while a second guard whose clock runs SkewedReaderAhead ahead calls the
// key every 100 ms. No call of the second guard's operation starts while
// the owner's runs; the owner's context ends with a cause wrapping
// ErrLeaseNotExtended, never with its claim lost, after at least two
// extensions. The claims are strict when strict is set. s must implement
// [driver.Extender]. It takes about SkewedReaderExpiry less the
// SkewMargin, in real time, or in a testing/synctest bubble (it runs no
// subtests) on a store that lives in memory.
func KeepAliveSkewedReader(t *testing.T, s driver.Store, strict bool) {
	t.Helper()
	if _, ok := s.(driver.Extender); !ok {
		t.Fatalf("%T does not implement driver.Extender", s)
	}
	var (
		mu       sync.Mutex
		running  bool // the owner's operation runs
		overlaps int  // the reader's operation started while it ran
		reports  []idempotency.Report
	)
	newGuard := func(ahead time.Duration, record bool) *idempotency.Guard {
		cfg := idempotency.Config{Store: s, Namespace: "storetest-skewed-reader", ExpiresAfter: SkewedReaderExpiry,
			Lease: SkewedReaderLease, Strict: strict, Logger: slog.New(slog.DiscardHandler),
			Now: func() time.Time { return time.Now().Add(ahead) }}
		if record {
			cfg.OnOutcome = func(_ context.Context, r idempotency.Report) {
				mu.Lock()
				reports = append(reports, r)
				mu.Unlock()
			}
		}
		g, err := idempotency.New(cfg)
		if err != nil {
			t.Fatal(err)
		}
		return g
	}
	owner, reader := newGuard(0, true), newGuard(SkewedReaderAhead, false)
	k := idempotency.Raw([]byte(`"` + rand.Text() + `"`))

	started := make(chan struct{})
	done := make(chan error, 1)
	go func() {
		_, err := idempotency.Do(context.Background(), owner, k, func(ctx context.Context) (string, error) {
			mu.Lock()
			running = true
			mu.Unlock()
			close(started)
			defer func() {
				mu.Lock()
				running = false
				mu.Unlock()
			}()
			select {
			case <-time.After(2 * SkewedReaderExpiry):
				return "owner's", nil
			case <-ctx.Done():
				return "", context.Cause(ctx)
			}
		})
		done <- err
	}()
	<-started

	readerRuns := 0
	poll := func() {
		_, _ = idempotency.Do(context.Background(), reader, k, func(context.Context) (string, error) {
			mu.Lock()
			defer mu.Unlock()
			readerRuns++
			if running {
				overlaps++
			}
			return "reader's", nil
		})
	}
	tick := time.NewTicker(100 * time.Millisecond)
	defer tick.Stop()
	var ownerErr error
wait:
	for {
		select {
		case ownerErr = <-done:
			break wait
		case <-tick.C:
			poll()
		}
	}
	poll() // the owner gave its claim up: the reader may run now
	mu.Lock()
	defer mu.Unlock()
	if overlaps != 0 {
		t.Errorf("the reader whose clock runs %v ahead ran the key %d times while its owner's operation ran (%d runs in all)", SkewedReaderAhead, overlaps, readerRuns)
	}
	if !errors.Is(ownerErr, idempotency.ErrLeaseNotExtended) || errors.Is(ownerErr, driver.ErrLeaseLost) {
		t.Errorf("the owner's call: %v; want its context ended by the keep-alive's limit (ErrLeaseNotExtended), its claim not lost", ownerErr)
	}
	if len(reports) != 1 || reports[0].Extensions < 2 {
		t.Errorf("the owner's reports %+v: want one, with at least 2 extensions", reports)
	}
}
