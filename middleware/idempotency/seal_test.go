package idempotency_test

import (
	"bytes"
	"context"
	"crypto/aes"
	"crypto/cipher"
	"crypto/rand"
	"errors"
	"log/slog"
	"slices"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/aws/aws-lambda-go/events"

	"github.com/sqsonce/sqsonce/middleware/batch"
	"github.com/sqsonce/sqsonce/middleware/failure"
	"github.com/sqsonce/sqsonce/middleware/idempotency"
	"github.com/sqsonce/sqsonce/middleware/idempotency/driver"
	"github.com/sqsonce/sqsonce/middleware/idempotency/memstore"
)

// gcmSealer seals with AES-256-GCM under one key, the record id as
// associated data, and counts its calls.
type gcmSealer struct {
	aead         cipher.AEAD
	seals, opens atomic.Int32
	sealErr      error
}

func newGCMSealer(t testing.TB) *gcmSealer {
	t.Helper()
	key := make([]byte, 32)
	rand.Read(key)
	b, err := aes.NewCipher(key)
	if err != nil {
		t.Fatal(err)
	}
	aead, err := cipher.NewGCM(b)
	if err != nil {
		t.Fatal(err)
	}
	return &gcmSealer{aead: aead}
}

func (s *gcmSealer) Seal(_ context.Context, id string, plain []byte) ([]byte, error) {
	s.seals.Add(1)
	if s.sealErr != nil {
		return nil, s.sealErr
	}
	nonce := make([]byte, s.aead.NonceSize())
	rand.Read(nonce)
	return s.aead.Seal(nonce, nonce, plain, []byte(id)), nil
}

func (s *gcmSealer) Open(_ context.Context, id string, sealed []byte) ([]byte, error) {
	s.opens.Add(1)
	n := s.aead.NonceSize()
	if len(sealed) < n {
		return nil, errors.New("too short")
	}
	return s.aead.Open(nil, sealed[:n], sealed[n:], []byte(id))
}

const secret = "the customer's secret answer"

func sealedFixture(t *testing.T, s driver.Sealer, mod func(*idempotency.Config)) *fixture {
	return newFixture(t, func(c *idempotency.Config) {
		c.Sealer = s
		if mod != nil {
			mod(c)
		}
	})
}

// TestSealedRoundTrip: with a Sealer the stored result is sealed (the
// plaintext appears nowhere in the record, the id, status and expiry are
// as without one), and a replay from the store, from the cache and for a
// caller sharing the run returns the result.
func TestSealedRoundTrip(t *testing.T) {
	for _, cached := range []bool{false, true} {
		s := newGCMSealer(t)
		f := sealedFixture(t, s, func(c *idempotency.Config) {
			if cached {
				c.CacheBytes = 1 << 20
			}
		})
		var runs atomic.Int32
		op := func(context.Context) (result, error) {
			runs.Add(1)
			return result{Summary: secret, Tokens: 7}, nil
		}
		got, err := idempotency.Do(ctxWithDeadline(t), f.guard, key, op)
		if err != nil || got.Summary != secret {
			t.Fatalf("cached %v: first call: %+v, %v", cached, got, err)
		}
		id := mustID(t, f.guard, key)
		rec, ok := f.store.Get(id)
		if !ok {
			t.Fatal("no record")
		}
		if !driver.IsSealed(rec.Data) || bytes.Contains(rec.Data, []byte(secret)) || rec.Status != driver.StatusCompleted || rec.ID != id {
			t.Fatalf("cached %v: stored record %+v: want COMPLETED under %s with a sealed result", cached, rec, id)
		}
		got, err = idempotency.Do(ctxWithDeadline(t), f.guard, key, op)
		if err != nil || got.Summary != secret || got.Tokens != 7 || runs.Load() != 1 {
			t.Fatalf("cached %v: replay: %+v, %v, %d runs; want the result, 1 run", cached, got, err, runs.Load())
		}
		want := "store"
		if cached {
			want = "cache"
		}
		if ev := f.lastEvent(t); ev.Outcome != idempotency.OutcomeReplayed || ev.Source != want {
			t.Errorf("cached %v: replay reported %v from %q, want replayed from %q", cached, ev.Outcome, ev.Source, want)
		}
		// A second guard (another process) opens it from the store.
		g2 := sealedFixture(t, s, func(c *idempotency.Config) { c.Store = f.store })
		got, err = idempotency.Do(ctxWithDeadline(t), g2.guard, key, op)
		if err != nil || got.Summary != secret || runs.Load() != 1 {
			t.Errorf("cached %v: replay by another guard: %+v, %v", cached, got, err)
		}
	}
}

// TestSealedWrapJSONAndStrict: the typed wrapper and strict mode replay a
// sealed result.
func TestSealedWrapJSONAndStrict(t *testing.T) {
	s := newGCMSealer(t)
	f := sealedFixture(t, s, func(c *idempotency.Config) { c.Strict = true })
	type req struct {
		ID string `json:"id"`
	}
	var runs atomic.Int32
	h := idempotency.WrapJSON(f.guard, idempotency.BodyField("id"), func(_ context.Context, r req, _ events.SQSMessage) (result, error) {
		runs.Add(1)
		return result{Summary: secret + r.ID}, nil
	})
	m := events.SQSMessage{MessageId: "m-1", Body: `{"id":"7"}`}
	for i := range 2 {
		got, err := h(ctxWithDeadline(t), m)
		if err != nil || got.Summary != secret+"7" {
			t.Fatalf("call %d: %+v, %v", i, got, err)
		}
	}
	if runs.Load() != 1 || s.opens.Load() != 1 {
		t.Errorf("%d runs, %d opens; want 1 and 1", runs.Load(), s.opens.Load())
	}
}

// TestSealedResultElsewhereFails: a sealed record read by a guard without
// the Sealer, a result moved to another record, and a tampered one fail
// their call with ErrUnsealed; the operation does not run and nothing is
// replayed.
func TestSealedResultElsewhereFails(t *testing.T) {
	s := newGCMSealer(t)
	f := sealedFixture(t, s, nil)
	if _, err := idempotency.Do(ctxWithDeadline(t), f.guard, key, func(context.Context) (string, error) { return secret, nil }); err != nil {
		t.Fatal(err)
	}
	rec, _ := f.store.Get(mustID(t, f.guard, key))
	other := idempotency.Raw([]byte("another key"))
	moved := rec
	moved.ID = mustID(t, f.guard, other)
	f.store.Put(moved)
	tampered := idempotency.Raw([]byte("tampered"))
	bad := rec
	bad.ID = mustID(t, f.guard, tampered)
	bad.Data = bytes.Clone(rec.Data)
	bad.Data[len(driver.SealedPrefix)+20] ^= 'A' ^ 'B'
	if bad.Data[len(driver.SealedPrefix)+20] == rec.Data[len(driver.SealedPrefix)+20] {
		t.Fatal("tamper changed nothing")
	}
	f.store.Put(bad)

	plain := newFixture(t, func(c *idempotency.Config) { c.Store = f.store })
	for _, c := range []struct {
		name string
		g    *idempotency.Guard
		k    idempotency.Selection
	}{{"no sealer", plain.guard, key}, {"moved", f.guard, other}, {"tampered", f.guard, tampered}} {
		ran := false
		got, err := idempotency.Do(ctxWithDeadline(t), c.g, c.k, func(context.Context) (string, error) { ran = true; return "ran", nil })
		if !errors.Is(err, driver.ErrUnsealed) || ran || got != "" {
			t.Errorf("%s: %q, %v, ran %v; want ErrUnsealed, nothing run or replayed", c.name, got, err, ran)
		}
		if err != nil && strings.Contains(err.Error(), secret) {
			t.Errorf("%s: the error quotes the result: %v", c.name, err)
		}
	}
}

// TestSealFailureWithholdsResult: a result that cannot be sealed is not
// stored: the record completes with driver.WithheldData and the call
// fails. A duplicate, from the store, with the cache on, or through a
// guard without the Sealer, fails with a permanent ErrUnsealed: never an
// empty result, never a second run.
func TestSealFailureWithholdsResult(t *testing.T) {
	for _, cached := range []bool{false, true} {
		s := newGCMSealer(t)
		s.sealErr = errors.New("kms unavailable")
		f := sealedFixture(t, s, func(c *idempotency.Config) {
			if cached {
				c.CacheBytes = 1 << 20
			}
		})
		var runs atomic.Int32
		op := func(context.Context) (string, error) { runs.Add(1); return secret, nil }
		if _, err := idempotency.Do(ctxWithDeadline(t), f.guard, key, op); err == nil || strings.Contains(err.Error(), secret) {
			t.Fatalf("cached %v: err = %v, want a seal failure without the result", cached, err)
		}
		rec, _ := f.store.Get(mustID(t, f.guard, key))
		if rec.Status != driver.StatusCompleted || string(rec.Data) != driver.WithheldData {
			t.Fatalf("cached %v: record %+v: want COMPLETED with the withheld marker", cached, rec)
		}
		s.sealErr = nil // KMS is back: the result is still withheld
		plain := newFixture(t, func(c *idempotency.Config) { c.Store = f.store })
		for name, g := range map[string]*idempotency.Guard{"sealer": f.guard, "no sealer": plain.guard} {
			got, err := idempotency.Do(ctxWithDeadline(t), g, key, op)
			if !errors.Is(err, driver.ErrUnsealed) || !permanent(err) || got != "" || runs.Load() != 1 {
				t.Errorf("cached %v, %s: duplicate got %q, %v (%d runs); want a permanent ErrUnsealed, 1 run", cached, name, got, err, runs.Load())
			}
		}
	}
}

func permanent(err error) bool {
	p, ok := errors.AsType[failure.PermanentError](err)
	return ok && p.Permanent()
}

// TestSealFailureBatch: through the batch handler, the delivery whose
// result could not be sealed fails (SQS delivers it again); the next
// delivery moves the message to the dead-letter queue, not acknowledged
// with an empty result, and the operation ran once.
func TestSealFailureBatch(t *testing.T) {
	s := newGCMSealer(t)
	s.sealErr = errors.New("kms unavailable")
	f := sealedFixture(t, s, nil)
	m := &mover{}
	var runs atomic.Int32
	h := batch.SQS(idempotency.Wrap(f.guard, idempotency.BodyField("k"), func(context.Context, events.SQSMessage) (string, error) {
		runs.Add(1)
		return secret, nil
	}), batch.Options{Concurrency: 1, DeadLetter: batch.DeadLetter{Mover: m}, Logger: slog.New(slog.DiscardHandler)})
	ev := events.SQSEvent{Records: []events.SQSMessage{{MessageId: "m-1", Body: `{"k":"a"}`}}}
	resp, _ := h(ctxWithDeadline(t), ev) // all records failed: an error too
	if len(resp.BatchItemFailures) != 1 || len(m.moves) != 0 {
		t.Fatalf("first delivery: %+v, moves %d; want the record failed, not moved", resp, len(m.moves))
	}
	resp, err := h(ctxWithDeadline(t), ev)
	if err != nil || len(resp.BatchItemFailures) != 0 || len(m.moves) != 1 || !strings.Contains(m.moves[0].Reason, "withheld") || runs.Load() != 1 {
		t.Errorf("second delivery: %+v, %v, moves %+v, %d runs; want moved to the dead-letter queue as withheld, 1 run", resp, err, m.moves, runs.Load())
	}
}

// TestSealerUnsealedRecordsReplay: a guard with a Sealer replays a result
// stored before it had one.
func TestSealerUnsealedRecordsReplay(t *testing.T) {
	f := newFixture(t, nil)
	if _, err := idempotency.Do(ctxWithDeadline(t), f.guard, key, func(context.Context) (string, error) { return "plain", nil }); err != nil {
		t.Fatal(err)
	}
	g := sealedFixture(t, newGCMSealer(t), func(c *idempotency.Config) { c.Store = f.store })
	got, err := idempotency.Do(ctxWithDeadline(t), g.guard, key, func(context.Context) (string, error) { return "ran", nil })
	if err != nil || got != "plain" {
		t.Errorf("%q, %v; want the stored %q", got, err, "plain")
	}
}

// refusingStore refuses sealed results.
type refusingStore struct{ *memstore.Store }

func (refusingStore) ValidateSealed() error { return errors.New("readers would misread") }

// TestSealValidator: New refuses a Sealer on a store that refuses sealed
// results, and accepts the store without one.
func TestSealValidator(t *testing.T) {
	cfg := idempotency.Config{Store: refusingStore{memstore.New()}, Namespace: "n"}
	if _, err := idempotency.New(cfg); err != nil {
		t.Fatalf("without a Sealer: %v", err)
	}
	cfg.Sealer = newGCMSealer(t)
	if _, err := idempotency.New(cfg); err == nil || !strings.Contains(err.Error(), "misread") {
		t.Errorf("with a Sealer: %v, want the store's refusal", err)
	}
}

type panickingSealer struct{ *gcmSealer }

func (panickingSealer) Seal(context.Context, string, []byte) ([]byte, error) { panic("sealer bug") }

// TestSealerPanic: a Sealer that panics is a result that cannot be sealed:
// the record completes, its result withheld, and the call fails.
func TestSealerPanic(t *testing.T) {
	f := sealedFixture(t, panickingSealer{newGCMSealer(t)}, nil)
	if _, err := idempotency.Do(ctxWithDeadline(t), f.guard, key, func(context.Context) (string, error) { return secret, nil }); err == nil {
		t.Fatal("no error")
	}
	if rec, _ := f.store.Get(mustID(t, f.guard, key)); rec.Status != driver.StatusCompleted || string(rec.Data) != driver.WithheldData {
		t.Errorf("record %+v: want COMPLETED, its result withheld", rec)
	}
}

// TestSealedSharedRun: a call that waits for a run of its key in this
// process gets the run's result, not its sealed form.
func TestSealedSharedRun(t *testing.T) {
	s := newGCMSealer(t)
	f := sealedFixture(t, s, nil)
	started, release := make(chan struct{}), make(chan struct{})
	var runs atomic.Int32
	op := func(context.Context) (string, error) {
		if runs.Add(1) == 1 {
			close(started)
			<-release
		}
		return secret, nil
	}
	first := make(chan error, 1)
	go func() { _, err := idempotency.Do(ctxWithDeadline(t), f.guard, key, op); first <- err }()
	<-started
	second := make(chan string, 1)
	go func() {
		got, err := idempotency.Do(ctxWithDeadline(t), f.guard, key, op)
		if err != nil {
			got = err.Error()
		}
		second <- got
	}()
	time.Sleep(100 * time.Millisecond) // the second call waits for the first's run
	close(release)
	if err := <-first; err != nil {
		t.Fatal(err)
	}
	if got := <-second; got != secret || runs.Load() != 1 {
		t.Errorf("the waiting call got %q (%d runs), want the result and 1 run", got, runs.Load())
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	var sources []string
	for _, ev := range f.events {
		sources = append(sources, ev.Source)
	}
	if !slices.Contains(sources, "shared") {
		t.Logf("sources %v: the second call did not wait (a slow machine); it replayed from the store", sources)
	}
}

// TestPlainResultLikeLegacySeal: a guard without a Sealer (or a release
// that predates sealing) stores a string result beginning with
// "sqsonce:sealed:1:" as the JSON string it is, which is the syntax of the
// sealed form earlier builds wrote. Every other reader of the record, with
// a Sealer or without, replays it: it is not base64 after the prefix, so
// it is no seal, or, when it is a seal's syntax, the guard stored it with
// its first character escaped. Before, each took it for sealed and failed
// the duplicate with ErrUnsealed on every delivery (for good, of
// "sqsonce:sealed:1:", the withheld form), never replaying it, and an
// in-process cache replayed it meanwhile.
func TestPlainResultLikeLegacySeal(t *testing.T) {
	store := memstore.New()
	newGuard := func(s driver.Sealer) *idempotency.Guard {
		g, err := idempotency.New(idempotency.Config{Store: store, Namespace: "orders", Sealer: s, Logger: slog.New(slog.DiscardHandler)})
		if err != nil {
			t.Fatal(err)
		}
		return g
	}
	writer := newGuard(nil)
	for i, result := range []string{"sqsonce:sealed:1: hello", "sqsonce:sealed:1:not base64!", `sqsonce:sealed:1:gzip:a "quote"`, "sqsonce:sealed:1:QUJD\n",
		// The syntax of a legacy seal, and of its withheld form: this
		// release stores them spelt otherwise (an escaped 's').
		"sqsonce:sealed:1:QUJD", "sqsonce:sealed:1:gzip:QUJD", "sqsonce:sealed:1:"} {
		k := idempotency.Raw([]byte(`"order-` + string(rune('a'+i)) + `"`))
		if v, err := idempotency.Do(context.Background(), writer, k, func(context.Context) (string, error) { return result, nil }); err != nil || v != result {
			t.Fatalf("%q: the first call: %q, %v", result, v, err)
		}
		for name, reader := range map[string]*idempotency.Guard{"without a Sealer": newGuard(nil), "with a Sealer": newGuard(newGCMSealer(t))} {
			v, err := idempotency.Do(context.Background(), reader, k, func(context.Context) (string, error) { return "ran again", nil })
			if err != nil || v != result {
				t.Errorf("%q, a reader %s: %q, %v; want the stored result replayed", result, name, v, err)
			}
		}
	}
}
