package redisstore_test

import (
	"context"
	"crypto/rand"
	"errors"
	"log/slog"
	"maps"
	"net"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/sqsonce/sqsonce/middleware/idempotency"
	"github.com/sqsonce/sqsonce/middleware/idempotency/driver"
	"github.com/sqsonce/sqsonce/middleware/idempotency/redisstore"
	"github.com/sqsonce/sqsonce/middleware/idempotency/storetest"
)

// counter is a redis.Hook counting the commands a client sends, by name.
// Every command is one round trip: the store sends no pipelines.
type counter struct {
	mu   sync.Mutex
	cmds map[string]int
}

func (c *counter) DialHook(next redis.DialHook) redis.DialHook { return next }
func (c *counter) ProcessHook(next redis.ProcessHook) redis.ProcessHook {
	return func(ctx context.Context, cmd redis.Cmder) error {
		c.mu.Lock()
		if c.cmds == nil {
			c.cmds = map[string]int{}
		}
		c.cmds[cmd.Name()]++
		c.mu.Unlock()
		return next(ctx, cmd)
	}
}
func (c *counter) ProcessPipelineHook(next redis.ProcessPipelineHook) redis.ProcessPipelineHook {
	return func(ctx context.Context, cmds []redis.Cmder) error {
		c.mu.Lock()
		if c.cmds == nil {
			c.cmds = map[string]int{}
		}
		c.cmds["pipeline"]++
		c.mu.Unlock()
		return next(ctx, cmds)
	}
}

// take returns the counts so far and resets them.
func (c *counter) take() map[string]int {
	c.mu.Lock()
	defer c.mu.Unlock()
	got := c.cmds
	c.cmds = nil
	if got == nil {
		got = map[string]int{}
	}
	return got
}

func claim(key string, now time.Time, lease time.Duration) driver.Record {
	return driver.Record{
		ID: key, Status: driver.StatusInProgress,
		ExpiresAt: now.Add(time.Hour), LeaseUntil: now.Add(lease), Owner: rand.Text(),
	}
}

func completed(rec driver.Record, data string) driver.Record {
	rec.Status, rec.Data = driver.StatusCompleted, []byte(data)
	return rec
}

// TestRoundTrips counts the commands of each step, after the scripts are
// cached on the server: each step is one EVALSHA.
func TestRoundTrips(t *testing.T) {
	rdb := newClient(t)
	calls := &counter{}
	rdb.AddHook(calls)
	s := newStore(t, rdb, redisstore.WithMaxData(64<<10), redisstore.WithLogger(discard()))
	ctx := context.Background()
	now := time.Now()
	rec := claim("rt#"+rand.Text(), now, time.Minute)
	gzipped := claim("rt#"+rand.Text(), now, time.Minute)
	omitted := claim("rt#"+rand.Text(), now, time.Minute)
	other := claim(rec.ID, now, time.Minute)
	freed := claim("rt#"+rand.Text(), now, time.Minute)
	attached := claim("rt#"+rand.Text(), now, time.Minute)

	// Load the three scripts into an empty script cache: the first run of
	// each is EVALSHA, refused with NOSCRIPT, then EVAL.
	if err := rdb.ScriptFlush(ctx).Err(); err != nil {
		t.Fatal(err)
	}
	calls.take()
	warm := claim("rt#"+rand.Text(), now, time.Minute)
	if _, _, err := s.Acquire(ctx, warm, now, driver.Takeover); err != nil {
		t.Fatal(err)
	}
	if err := s.Release(ctx, warm.ID, warm.Owner); err != nil {
		t.Fatal(err)
	}
	if _, _, err := s.Acquire(ctx, warm, now, driver.Takeover); err != nil {
		t.Fatal(err)
	}
	if _, err := s.Complete(ctx, completed(warm, `1`)); err != nil {
		t.Fatal(err)
	}
	if got := calls.take(); got["eval"] != 3 || got["evalsha"] != 4 {
		t.Errorf("first runs of the three scripts: %v, want 3 eval (after NOSCRIPT) and 4 evalsha", got)
	}

	one := map[string]int{"evalsha": 1}
	steps := []struct {
		name string
		want map[string]int
		do   func() error
	}{
		{"claim (Acquire of a free key)", one, func() error {
			_, loaded, err := s.Acquire(ctx, rec, now, driver.Takeover)
			return want(err, !loaded, "claimed")
		}},
		{"in progress (Acquire of a held key)", one, func() error {
			got, loaded, err := s.Acquire(ctx, other, now, driver.Takeover)
			return want(err, loaded && got.Status == driver.StatusInProgress && got.Owner == rec.Owner, "loaded in progress")
		}},
		{"complete", one, func() error {
			return errOf(s.Complete(ctx, completed(rec, `{"summary":"ok"}`)))
		}},
		{"replay (Acquire of a completed key)", one, func() error {
			got, loaded, err := s.Acquire(ctx, other, now, driver.Takeover)
			return want(err, loaded && string(got.Data) == `{"summary":"ok"}`, "loaded with its data")
		}},
		{"claim then complete, result compressed", map[string]int{"evalsha": 2}, func() error {
			if _, _, err := s.Acquire(ctx, gzipped, now, driver.Takeover); err != nil {
				return err
			}
			return errOf(s.Complete(ctx, completed(gzipped, `"`+strings.Repeat("a", 1<<20)+`"`)))
		}},
		{"claim then complete, result left out (too large)", map[string]int{"evalsha": 2}, func() error {
			if _, _, err := s.Acquire(ctx, omitted, now, driver.Takeover); err != nil {
				return err
			}
			return errOf(s.Complete(ctx, completed(omitted, noise(1<<20))))
		}},
		{"claim then release", map[string]int{"evalsha": 2}, func() error {
			if _, _, err := s.Acquire(ctx, freed, now, driver.Takeover); err != nil {
				return err
			}
			return s.Release(ctx, freed.ID, freed.Owner)
		}},
		{"complete with an attached write (refused, no command)", map[string]int{}, func() error {
			done := completed(attached, `1`)
			done.Attached = []any{"SET summary:1 ..."}
			_, err := s.Complete(ctx, done)
			return want(nil, errors.Is(err, driver.ErrAttachUnsupported), "refused with ErrAttachUnsupported")
		}},
	}
	for _, st := range steps {
		calls.take()
		if err := st.do(); err != nil {
			t.Fatalf("%s: %v", st.name, err)
		}
		got := calls.take()
		t.Logf("round trips: %-55s %v", st.name, got)
		if !maps.Equal(got, st.want) {
			t.Errorf("%s: commands %v, want %v", st.name, got, st.want)
		}
	}
}

func discard() *slog.Logger { return slog.New(slog.DiscardHandler) }

func want(err error, cond bool, what string) error {
	if err != nil {
		return err
	}
	if !cond {
		return errors.New("not " + what)
	}
	return nil
}

// TestGuardRoundTrips counts the commands of the guard's paths on this
// store: a first delivery is two, a replay one.
func TestGuardRoundTrips(t *testing.T) {
	rdb := newClient(t)
	calls := &counter{}
	rdb.AddHook(calls)
	g, err := idempotency.New(idempotency.Config{Store: newStore(t, rdb), Namespace: "rt-" + rand.Text(), Logger: discard()})
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	var runs atomic.Int32
	op := func(context.Context) (string, error) { runs.Add(1); return "summary", nil }
	// Load the scripts.
	if _, err := idempotency.Do(ctx, g, idempotency.Raw([]byte("warm")), op); err != nil {
		t.Fatal(err)
	}
	calls.take()
	runs.Store(0)

	if _, err := idempotency.Do(ctx, g, idempotency.Raw([]byte("k1")), op); err != nil {
		t.Fatal(err)
	}
	if got := calls.take(); !maps.Equal(got, map[string]int{"evalsha": 2}) || runs.Load() != 1 {
		t.Errorf("first delivery: %v, %d runs; want 2 evalsha, 1 run", got, runs.Load())
	}
	if v, err := idempotency.Do(ctx, g, idempotency.Raw([]byte("k1")), op); err != nil || v != "summary" {
		t.Fatalf("replay = %q, %v", v, err)
	}
	if got := calls.take(); !maps.Equal(got, map[string]int{"evalsha": 1}) || runs.Load() != 1 {
		t.Errorf("replay: %v, %d runs; want 1 evalsha, still 1 run", got, runs.Load())
	}
}

// TestScriptsReloaded: a server that lost its script cache (a restart, a
// failover, SCRIPT FLUSH) gets the script again with EVAL.
func TestScriptsReloaded(t *testing.T) {
	rdb := newClient(t)
	s := newStore(t, rdb)
	ctx := context.Background()
	now := time.Now()
	for i := range 2 {
		if err := rdb.ScriptFlush(ctx).Err(); err != nil {
			t.Fatal(err)
		}
		rec := claim("reload#"+rand.Text(), now, time.Minute)
		if _, loaded, err := s.Acquire(ctx, rec, now, driver.Takeover); err != nil || loaded {
			t.Fatalf("Acquire %d after SCRIPT FLUSH: loaded=%v, %v", i, loaded, err)
		}
	}
}

// TestKeyExpiresWithRecord: the key's expiry is the record's, set when it is
// claimed and moved when it is completed.
func TestKeyExpiresWithRecord(t *testing.T) {
	rdb := newClient(t)
	s := newStore(t, rdb, redisstore.WithKeyPrefix("idem:"))
	ctx := context.Background()
	now := time.Now()
	rec := claim("exp#"+rand.Text(), now, time.Minute)
	rec.ExpiresAt = now.Add(time.Hour).Truncate(time.Millisecond)
	if _, _, err := s.Acquire(ctx, rec, now, driver.Takeover); err != nil {
		t.Fatal(err)
	}
	checkExpiry := func(what string, want time.Time) {
		t.Helper()
		got, err := rdb.Do(ctx, "PEXPIRETIME", s.RedisKey(rec.ID)).Int64()
		if err != nil {
			t.Fatalf("%s: PEXPIRETIME: %v", what, err)
		}
		if got != want.UnixMilli() {
			t.Errorf("%s: key expires at %v, want %v", what, time.UnixMilli(got), want)
		}
	}
	checkExpiry("claimed", rec.ExpiresAt)
	done := completed(rec, `1`)
	done.ExpiresAt = now.Add(2 * time.Hour).Truncate(time.Millisecond)
	if _, err := s.Complete(ctx, done); err != nil {
		t.Fatal(err)
	}
	checkExpiry("completed", done.ExpiresAt)
	if n, err := rdb.Exists(ctx, rec.ID).Result(); err != nil || n != 0 {
		t.Errorf("the record was stored without its prefix (exists=%d, %v)", n, err)
	}
}

// lossy is a redis.Hook that lets the next command matching drop run on
// the server and then loses its reply, as a connection broken after the
// write would.
type lossy struct {
	armed atomic.Bool
}

var errReplyLost = &net.OpError{Op: "read", Net: "tcp", Err: errors.New("connection reset after the command was sent")}

func (l *lossy) DialHook(next redis.DialHook) redis.DialHook { return next }
func (l *lossy) ProcessHook(next redis.ProcessHook) redis.ProcessHook {
	return func(ctx context.Context, cmd redis.Cmder) error {
		err := next(ctx, cmd)
		if err == nil && l.armed.CompareAndSwap(true, false) {
			cmd.SetErr(errReplyLost)
			return errReplyLost
		}
		return err
	}
}
func (l *lossy) ProcessPipelineHook(next redis.ProcessPipelineHook) redis.ProcessPipelineHook {
	return next
}

// TestCompleteReplyLost: a completion applied on the server whose reply was
// lost, sent again by the same owner, succeeds without writing again.
func TestCompleteReplyLost(t *testing.T) {
	rdb := newClient(t)
	fault := &lossy{}
	rdb.AddHook(fault)
	s := newStore(t, rdb)
	ctx := context.Background()
	now := time.Now()
	rec := claim("lost#"+rand.Text(), now, time.Minute)
	if _, _, err := s.Acquire(ctx, rec, now, driver.Takeover); err != nil {
		t.Fatal(err)
	}
	fault.armed.Store(true)
	if _, err := s.Complete(ctx, completed(rec, `"first"`)); err == nil || errors.Is(err, driver.ErrLeaseLost) {
		t.Fatalf("Complete whose reply was lost: %v, want a store error that is not ErrLeaseLost", err)
	}
	if _, err := s.Complete(ctx, completed(rec, `"first"`)); err != nil {
		t.Fatalf("Complete sent again by its owner: %v, want success", err)
	}
	// Someone else's completion of it is still refused.
	stranger := completed(claim(rec.ID, now, time.Minute), `"other"`)
	if _, err := s.Complete(ctx, stranger); !errors.Is(err, driver.ErrLeaseLost) {
		t.Fatalf("Complete by another owner: %v, want ErrLeaseLost", err)
	}
	got, loaded, err := s.Acquire(ctx, claim(rec.ID, now, time.Minute), now, driver.Takeover)
	if err != nil || !loaded || string(got.Data) != `"first"` || got.Status != driver.StatusCompleted {
		t.Fatalf("record after the retried Complete: %+v loaded=%v %v", got, loaded, err)
	}
}

// TestAttachRefusedThroughGuard: an operation learns at Attach that this
// store cannot commit its writes, and the claim is released.
func TestAttachRefusedThroughGuard(t *testing.T) {
	s := newStore(t, newClient(t))
	g, err := idempotency.New(idempotency.Config{Store: s, Namespace: "attach-" + rand.Text(), Logger: discard()})
	if err != nil {
		t.Fatal(err)
	}
	var attachErr error
	_, err = idempotency.Do(context.Background(), g, idempotency.Raw([]byte("k")), func(ctx context.Context) (string, error) {
		attachErr = idempotency.Attach(ctx, "write")
		return "", attachErr
	})
	if !errors.Is(attachErr, driver.ErrAttachUnsupported) || !errors.Is(err, driver.ErrAttachUnsupported) {
		t.Fatalf("Attach: %v; Do: %v; want ErrAttachUnsupported", attachErr, err)
	}
}

// TestConformanceWithPrefix runs the suite with a key prefix.
func TestConformanceWithPrefix(t *testing.T) {
	s := newStore(t, newClient(t), redisstore.WithKeyPrefix("sqsonce:"))
	storetest.Run(t, func(t *testing.T) driver.Store { return s })
}

func TestNewRefusesNilClient(t *testing.T) {
	if _, err := redisstore.New(context.Background(), nil); err == nil {
		t.Fatal("New(nil) succeeded")
	}
}
