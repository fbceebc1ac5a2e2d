package redisstore_test

import (
	"context"
	"crypto/rand"
	"errors"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/sqsonce/sqsonce/middleware/idempotency"
	"github.com/sqsonce/sqsonce/middleware/idempotency/driver"
	"github.com/sqsonce/sqsonce/middleware/idempotency/redisstore"
)

// sentAgain returns a store whose client reaches the server through a
// proxy, with a read timeout of 200 ms: a reply the proxy holds back for
// a second makes go-redis send the command again on another connection,
// after the first run was applied.
func sentAgain(t *testing.T) (*redisstore.Store, *proxy) {
	t.Helper()
	p := newProxy(t, server.Addr(t))
	rdb := redis.NewClient(&redis.Options{
		Addr: p.Addr(), ContextTimeoutEnabled: true,
		ReadTimeout: 200 * time.Millisecond, MaxRetries: 3, MinRetryBackoff: time.Millisecond, MaxRetryBackoff: 5 * time.Millisecond,
	})
	t.Cleanup(func() { rdb.Close() })
	s := newStore(t, rdb)
	// Load the scripts, so that each step below is one EVALSHA per attempt.
	now := time.Now()
	warm := claim("warm#"+rand.Text(), now, time.Minute)
	if _, _, err := s.Acquire(context.Background(), warm, now, driver.Takeover); err != nil {
		t.Fatal(err)
	}
	if err := s.Release(context.Background(), warm.ID, warm.Owner); err != nil {
		t.Fatal(err)
	}
	if _, err := s.Complete(context.Background(), completed(warm, `1`)); !errors.Is(err, driver.ErrLeaseLost) {
		t.Fatalf("warm-up Complete of a released record: %v", err)
	}
	return s, p
}

// retried runs step with the next reply held back, and checks that
// go-redis sent its script twice.
func retried(t *testing.T, p *proxy, step func()) {
	t.Helper()
	before := p.count("evalsha")
	p.delayNext(time.Second)
	step()
	if n := p.count("evalsha") - before; n != 2 {
		t.Fatalf("the step sent EVALSHA %d times, want 2 (its first reply held back past the read timeout): this test proves nothing", n)
	}
}

// TestScriptSentAgain: each script sent again by go-redis after a read
// timeout, its first run applied, reports what that run did. Issue 15,
// item 15 (a retried takeover was reported a plain claim, a retried
// release "the record is gone").
func TestScriptSentAgain(t *testing.T) {
	s, p := sentAgain(t)
	ctx := context.Background()
	now := time.Now()

	t.Run("takeover", func(t *testing.T) {
		holder := claim("again#"+rand.Text(), now, time.Second)
		if _, _, err := s.Acquire(ctx, holder, now, driver.Takeover); err != nil {
			t.Fatal(err)
		}
		later := now.Add(2 * time.Second)
		taker := claim(holder.ID, later, time.Minute)
		var (
			prev   driver.Record
			loaded bool
			err    error
		)
		retried(t, p, func() { prev, loaded, err = s.Acquire(ctx, taker, later, driver.Takeover) })
		if err != nil || loaded {
			t.Fatalf("Acquire: loaded=%v, %v; want claimed", loaded, err)
		}
		if prev.ID != holder.ID || prev.Owner != holder.Owner || prev.Status != driver.StatusInProgress ||
			prev.LeaseUntil.UnixMilli() != holder.LeaseUntil.UnixMilli() {
			t.Fatalf("Acquire reported replacing %+v, want the holder's record (owner %s): a takeover, not a claim of a free key", prev, holder.Owner)
		}
	})

	t.Run("claim of a free key", func(t *testing.T) {
		rec := claim("again#"+rand.Text(), now, time.Minute)
		var (
			prev   driver.Record
			loaded bool
			err    error
		)
		retried(t, p, func() { prev, loaded, err = s.Acquire(ctx, rec, now, driver.Takeover) })
		if err != nil || loaded || prev.ID != "" {
			t.Fatalf("Acquire: %+v loaded=%v, %v; want claimed, nothing replaced", prev, loaded, err)
		}
	})

	t.Run("complete", func(t *testing.T) {
		rec := claim("again#"+rand.Text(), now, time.Minute)
		if _, _, err := s.Acquire(ctx, rec, now, driver.Takeover); err != nil {
			t.Fatal(err)
		}
		var (
			stored []byte
			err    error
		)
		big := completed(rec, `"`+string(make([]byte, 100<<10))+`"`) // compressed when stored
		retried(t, p, func() { stored, err = s.Complete(ctx, big) })
		if err != nil || string(stored) != string(big.Data) {
			t.Fatalf("Complete: %d bytes, %v; want success and the result as stored", len(stored), err)
		}
	})

	t.Run("release", func(t *testing.T) {
		rec := claim("again#"+rand.Text(), now, time.Minute)
		if _, _, err := s.Acquire(ctx, rec, now, driver.Takeover); err != nil {
			t.Fatal(err)
		}
		var err error
		retried(t, p, func() { err = s.Release(ctx, rec.ID, rec.Owner) })
		if err != nil {
			t.Fatalf("Release: %v, want success (the first run released the record)", err)
		}
		// The key is free; a release by a new call of its owner is not
		// this call's, and is refused.
		if err := s.Release(ctx, rec.ID, rec.Owner); !errors.Is(err, driver.ErrLeaseLost) {
			t.Fatalf("a second Release call: %v, want ErrLeaseLost", err)
		}
		if _, loaded, err := s.Acquire(ctx, claim(rec.ID, now, time.Minute), now, driver.Takeover); err != nil || loaded {
			t.Fatalf("Acquire after the release: loaded=%v, %v; want claimed", loaded, err)
		}
	})
}

// TestDeadlineRespected: a step ends at its context's deadline when the
// server does not answer, not after the client's read timeout (30 s here),
// and reports an error: nothing is known of the claim.
func TestDeadlineRespected(t *testing.T) {
	p := newProxy(t, server.Addr(t))
	rdb := redis.NewClient(&redis.Options{Addr: p.Addr(), ContextTimeoutEnabled: true, ReadTimeout: 30 * time.Second})
	t.Cleanup(func() { rdb.Close() })
	s := newStore(t, rdb)
	now := time.Now()
	rec := claim("deadline#"+rand.Text(), now, time.Minute)
	if _, _, err := s.Acquire(context.Background(), rec, now, driver.Takeover); err != nil { // loads the script
		t.Fatal(err)
	}
	p.stall()
	const budget = 300 * time.Millisecond
	steps := map[string]func(ctx context.Context) error{
		"acquire": func(ctx context.Context) error {
			_, _, err := s.Acquire(ctx, claim("deadline#"+rand.Text(), now, time.Minute), now, driver.Takeover)
			return err
		},
		"complete": func(ctx context.Context) error { return errOf(s.Complete(ctx, completed(rec, `1`))) },
		"release":  func(ctx context.Context) error { return s.Release(ctx, rec.ID, rec.Owner) },
	}
	for name, step := range steps {
		t.Run(name, func(t *testing.T) {
			ctx, cancel := context.WithTimeout(context.Background(), budget)
			defer cancel()
			start := time.Now()
			err := step(ctx)
			took := time.Since(start)
			if err == nil {
				t.Fatal("a step the server never answered succeeded")
			}
			var se *idempotency.StoreError
			if !errors.As(err, &se) {
				t.Errorf("error %v is not a *idempotency.StoreError", err)
			}
			// Generous for a loaded machine, far below the read timeout.
			if took > budget+2*time.Second {
				t.Errorf("the step returned %v after it began, with a %v deadline", took, budget)
			}
			t.Logf("%s: returned after %v: %v", name, took.Round(time.Millisecond), err)
		})
	}
}
