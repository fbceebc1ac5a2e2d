package idempotency_test

import (
	"context"
	"errors"
	"log/slog"
	"slices"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/aws/aws-lambda-go/events"

	"github.com/sqsonce/sqsonce/middleware/batch"
	"github.com/sqsonce/sqsonce/middleware/idempotency"
	"github.com/sqsonce/sqsonce/middleware/idempotency/driver"
	"github.com/sqsonce/sqsonce/middleware/idempotency/memstore"
)

// lapsedKey leaves the key of material claimed by a worker that died: an
// INPROGRESS record whose lease ended a minute before now. It returns the
// record id and the dead worker's owner token.
func lapsedKey(t *testing.T, store *memstore.Store, g *idempotency.Guard, material string, now time.Time) (string, string) {
	t.Helper()
	id := rawID(t, g, material)
	rec := driver.Record{
		ID: id, Status: driver.StatusInProgress, ExpiresAt: now.Add(time.Hour),
		LeaseUntil: now.Add(-time.Minute), Owner: "dead-worker",
	}
	if _, loaded, err := store.Acquire(context.Background(), rec, now.Add(-2*time.Minute), driver.Takeover); err != nil || loaded {
		t.Fatalf("seed the dead worker's claim: loaded=%v, %v", loaded, err)
	}
	return id, rec.Owner
}

func rawID(t *testing.T, g *idempotency.Guard, material string) string {
	t.Helper()
	id, err := g.ID(idempotency.Raw([]byte(material)))
	if err != nil {
		t.Fatal(err)
	}
	return id
}

// TestStrictQuarantines: a strict guard that finds a claim whose lease
// lapsed does not run the operation: it quarantines the record (still
// INPROGRESS, its owner kept, its lease extended to its expiry) and fails
// with a permanent *QuarantinedError, outcome quarantined at ERROR. Every
// later call of the key, strict or not, fails the same way without running
// anything, until the dead worker's late completion (or an operator's
// resolve) completes the record: then every call replays it. On old main
// (no strict mode) the default guard takes the claim over and runs it: the
// control case below.
func TestStrictQuarantines(t *testing.T) {
	now := time.Now().Truncate(time.Millisecond)
	store := memstore.New()
	var events []idempotency.Report
	logs := &logCapture{}
	g, err := idempotency.New(idempotency.Config{
		Store: store, Namespace: "strict", Now: func() time.Time { return now },
		Logger:    slog.New(slog.NewJSONHandler(logs, &slog.HandlerOptions{Level: slog.LevelDebug})),
		OnOutcome: func(_ context.Context, ev idempotency.Report) { events = append(events, ev) },
	})
	if err != nil {
		t.Fatal(err)
	}
	id, owner := lapsedKey(t, store, g, `"pay-1"`, now)
	var runs atomic.Int32
	op := func(context.Context) (string, error) { runs.Add(1); return "paid", nil }
	key := idempotency.Raw([]byte(`"pay-1"`))

	_, err = idempotency.Do(context.Background(), g, key, op, idempotency.Strict())
	var qe *idempotency.QuarantinedError
	if !errors.As(err, &qe) || !errors.Is(err, idempotency.ErrQuarantined) || errors.Is(err, idempotency.ErrInProgress) {
		t.Fatalf("strict call on a lapsed claim: err = %v, want a *QuarantinedError (ErrQuarantined, not ErrInProgress)", err)
	}
	if qe.ID != id || !qe.Since.Equal(now) {
		t.Errorf("QuarantinedError = %+v, want ID %s, Since %v", qe, id, now)
	}
	var pe batch.PermanentError
	if !errors.As(err, &pe) || !pe.Permanent() {
		t.Errorf("the quarantine error is not permanent: %v", err)
	}
	if runs.Load() != 0 {
		t.Fatalf("strict mode ran the operation %d times on a lapsed claim", runs.Load())
	}
	rec, _ := store.Get(id)
	if rec.Status != driver.StatusInProgress || rec.Owner != owner || !rec.Quarantined.Equal(now) || !rec.LeaseUntil.Equal(rec.ExpiresAt) {
		t.Errorf("quarantined record = %+v; want INPROGRESS, owner %q, quarantined at %v, lease until its expiry", rec, owner, now)
	}
	lines := logs.lines(t)
	if len(lines) != 1 || lines[0]["outcome"] != "quarantined" || lines[0]["level"] != "ERROR" {
		t.Errorf("log = %v, want one line, outcome quarantined at ERROR", lines)
	}

	// Later calls, strict or not, an hour of leases later: quarantined.
	now = now.Add(30 * time.Minute)
	for _, opts := range [][]idempotency.Option{{idempotency.Strict()}, nil} {
		if _, err := idempotency.Do(context.Background(), g, key, op, opts...); !errors.Is(err, idempotency.ErrQuarantined) {
			t.Fatalf("call on a quarantined key: err = %v, want ErrQuarantined", err)
		}
	}
	if runs.Load() != 0 {
		t.Fatalf("a quarantined key ran its operation %d times", runs.Load())
	}
	want := []idempotency.Outcome{idempotency.OutcomeQuarantined, idempotency.OutcomeQuarantined, idempotency.OutcomeQuarantined}
	if got := outcomesOf(events); !slices.Equal(got, want) {
		t.Errorf("outcomes = %v, want %v", got, want)
	}

	// The dead worker's late completion (or an operator's resolve) clears it.
	if _, err := store.Complete(context.Background(), driver.Record{ID: id, Status: driver.StatusCompleted,
		Owner: owner, Data: []byte(`"paid by hand"`), ExpiresAt: now.Add(time.Hour)}); err != nil {
		t.Fatalf("complete the quarantined record: %v", err)
	}
	for _, opts := range [][]idempotency.Option{{idempotency.Strict()}, nil} {
		got, err := idempotency.Do(context.Background(), g, key, op, opts...)
		if err != nil || got != "paid by hand" {
			t.Fatalf("call after the resolve = %q, %v; want the stored result", got, err)
		}
	}
	if runs.Load() != 0 {
		t.Fatalf("the operation ran %d times", runs.Load())
	}
}

func outcomesOf(events []idempotency.Report) []idempotency.Outcome {
	var out []idempotency.Outcome
	for _, ev := range events {
		out = append(out, ev.Outcome)
	}
	return out
}

// TestStrictReleaseRuns: after an operator releases a quarantined record,
// the next strict delivery runs the operation, once. The control: a default
// guard takes a lapsed claim over and runs it again (the promise's first
// exception, which strict mode removes).
func TestStrictReleaseRuns(t *testing.T) {
	now := time.Now().Truncate(time.Millisecond)
	store := memstore.New()
	g, err := idempotency.New(idempotency.Config{
		Store: store, Namespace: "strict", Strict: true, Now: func() time.Time { return now },
		Logger: slog.New(slog.DiscardHandler),
	})
	if err != nil {
		t.Fatal(err)
	}
	id, owner := lapsedKey(t, store, g, `"mail-1"`, now)
	var runs atomic.Int32
	op := func(context.Context) (int32, error) { return runs.Add(1), nil }
	key := idempotency.Raw([]byte(`"mail-1"`))
	if _, err := idempotency.Do(context.Background(), g, key, op); !errors.Is(err, idempotency.ErrQuarantined) {
		t.Fatalf("Config.Strict guard on a lapsed claim: err = %v, want ErrQuarantined", err)
	}
	if err := store.Release(context.Background(), id, owner); err != nil {
		t.Fatalf("release the quarantined record: %v", err)
	}
	for range 2 {
		if n, err := idempotency.Do(context.Background(), g, key, op); err != nil || n != 1 {
			t.Fatalf("delivery after the release = %d, %v; want one run, then its replay", n, err)
		}
	}

	// Control: the default guard runs a lapsed claim again.
	def, err := idempotency.New(idempotency.Config{Store: store, Namespace: "strict", Now: func() time.Time { return now },
		Logger: slog.New(slog.DiscardHandler)})
	if err != nil {
		t.Fatal(err)
	}
	lapsedKey(t, store, def, `"mail-2"`, now)
	if n, err := idempotency.Do(context.Background(), def, idempotency.Raw([]byte(`"mail-2"`)), op); err != nil || n != 2 {
		t.Fatalf("default guard on a lapsed claim = %d, %v; want a takeover and a second run (else this test proves nothing)", n, err)
	}
}

// mover records the messages a batch handler moves to the dead-letter queue.
type mover struct{ moves []batch.DeadLetterMove }

func (m *mover) MoveToDeadLetter(_ context.Context, moves []batch.DeadLetterMove) []error {
	m.moves = append(m.moves, moves...)
	return nil
}

// TestStrictQuarantineDeadLetters: through the batch handler with a
// dead-letter mover, a quarantined message goes to the dead-letter queue on
// its first receive, its reason the QuarantinedError's; the batch's other
// message runs.
func TestStrictQuarantineDeadLetters(t *testing.T) {
	now := time.Now().Truncate(time.Millisecond)
	store := memstore.New()
	g, err := idempotency.New(idempotency.Config{Store: store, Namespace: "strict", Strict: true,
		Now: func() time.Time { return now }, Logger: slog.New(slog.DiscardHandler)})
	if err != nil {
		t.Fatal(err)
	}
	key := idempotency.BodyField("idempotency_key")
	stuck := events.SQSMessage{MessageId: "m-stuck", Body: `{"idempotency_key":"pay-1"}`}
	k, err := idempotency.Select(key, stuck)
	if err != nil {
		t.Fatal(err)
	}
	id, err := g.ID(k)
	if err != nil {
		t.Fatal(err)
	}
	if _, _, err := store.Acquire(context.Background(), driver.Record{ID: id, Status: driver.StatusInProgress,
		ExpiresAt: now.Add(time.Hour), LeaseUntil: now.Add(-time.Minute), Owner: "dead-worker"}, now.Add(-2*time.Minute), driver.Takeover); err != nil {
		t.Fatal(err)
	}
	var runs []string
	m := &mover{}
	h := batch.SQS(idempotency.Wrap(g, key, func(_ context.Context, msg events.SQSMessage) (string, error) {
		runs = append(runs, msg.MessageId)
		return "paid", nil
	}), batch.Options{Concurrency: 1, DeadLetter: batch.DeadLetter{Mover: m}, Logger: slog.New(slog.DiscardHandler)})
	other := events.SQSMessage{MessageId: "m-other", Body: `{"idempotency_key":"pay-2"}`}
	resp, err := h(context.Background(), events.SQSEvent{Records: []events.SQSMessage{stuck, other}})
	if err != nil {
		t.Fatal(err)
	}
	if len(resp.BatchItemFailures) != 0 || !slices.Equal(runs, []string{"m-other"}) {
		t.Errorf("failures %v, runs %v; want none failed (the quarantined one moved) and m-other run", resp.BatchItemFailures, runs)
	}
	if len(m.moves) != 1 || m.moves[0].Message.MessageId != "m-stuck" || m.moves[0].ErrorType != "*idempotency.QuarantinedError" {
		t.Errorf("moves %+v, want m-stuck, error type *idempotency.QuarantinedError", m.moves)
	}
}

// TestStrictRace: strict guards of many processes (one guard each) claim
// one lapsed key at once: none runs the operation, every call fails with
// ErrQuarantined, and exactly one of them quarantined the record (the
// others found it quarantined: Source "store").
func TestStrictRace(t *testing.T) {
	now := time.Now().Truncate(time.Millisecond)
	store := memstore.New()
	const n = 50
	var (
		runs, own atomic.Int32
		guards    []*idempotency.Guard
	)
	for range n {
		g, err := idempotency.New(idempotency.Config{Store: store, Namespace: "strict", Strict: true,
			Now: func() time.Time { return now }, Logger: slog.New(slog.DiscardHandler),
			OnOutcome: func(_ context.Context, ev idempotency.Report) {
				if ev.Outcome == idempotency.OutcomeQuarantined && ev.Source == "" {
					own.Add(1)
				}
			}})
		if err != nil {
			t.Fatal(err)
		}
		guards = append(guards, g)
	}
	lapsedKey(t, store, guards[0], `"race"`, now)
	errs := make(chan error, n)
	start := make(chan struct{})
	for _, g := range guards {
		go func() {
			<-start
			_, err := idempotency.Do(context.Background(), g, idempotency.Raw([]byte(`"race"`)), func(context.Context) (int, error) {
				runs.Add(1)
				return 1, nil
			})
			errs <- err
		}()
	}
	close(start)
	for range n {
		if err := <-errs; !errors.Is(err, idempotency.ErrQuarantined) {
			t.Errorf("racing strict call: %v, want ErrQuarantined", err)
		}
	}
	if runs.Load() != 0 || own.Load() != 1 {
		t.Errorf("%d racing strict calls: %d runs (want 0), %d quarantined the record themselves (want 1)", n, runs.Load(), own.Load())
	}
}

// TestStrictRunSharedWithDefaultCalls: a strict call of a key runs in this
// process past its lease; a default call of the same key and payload
// through the base guard waits for it and shares its outcome, rather than
// taking its lapsed claim over and running the operation a second time.
func TestStrictRunSharedWithDefaultCalls(t *testing.T) {
	var mu sync.Mutex
	now := time.Now()
	clock := func() time.Time { mu.Lock(); defer mu.Unlock(); return now }
	g, err := idempotency.New(idempotency.Config{Store: memstore.New(), Namespace: "mix", Now: clock,
		Lease: time.Minute, SkewMargin: time.Second})
	if err != nil {
		t.Fatal(err)
	}
	key := idempotency.Raw([]byte(`"pay-1"`))
	var runs atomic.Int32
	started, release := make(chan struct{}), make(chan struct{})
	op := func(context.Context) (string, error) {
		if runs.Add(1) == 1 {
			close(started)
			<-release
		}
		return "paid", nil
	}
	first := make(chan error, 1)
	go func() { _, err := idempotency.Do(context.Background(), g, key, op, idempotency.Strict()); first <- err }()
	<-started
	mu.Lock()
	now = now.Add(2 * time.Minute) // the strict call outlived its lease
	mu.Unlock()
	second := make(chan error, 1)
	var got string
	go func() {
		var err error
		got, err = idempotency.Do(context.Background(), g, key, op)
		second <- err
	}()
	select {
	case err := <-second:
		t.Fatalf("the default call returned while the strict run went on: %v (runs %d)", err, runs.Load())
	case <-time.After(200 * time.Millisecond):
	}
	close(release)
	if err := <-first; err != nil {
		t.Fatalf("strict call: %v", err)
	}
	if err := <-second; err != nil || got != "paid" {
		t.Fatalf("default call: %q, %v", got, err)
	}
	if n := runs.Load(); n != 1 {
		t.Errorf("the operation ran %d times in one process, want 1", n)
	}
}

// TestDefaultGuardHonoursStrictClaim: a strict claim by a guard of its own
// (another process: no call is shared) is written with its lease apart:
// LeaseUntil at the record's expiry, StrictLease at the holder's deadline
// plus the margin. A default guard's call while that lease is live is in
// progress, and package batch paces its redelivery on StrictLease, not on
// the record's expiry; once StrictLease has passed, the default call
// quarantines the claim and runs nothing; the holder's late completion
// stands and is replayed.
func TestDefaultGuardHonoursStrictClaim(t *testing.T) {
	var mu sync.Mutex
	now := time.Now()
	clock := func() time.Time { mu.Lock(); defer mu.Unlock(); return now }
	store := memstore.New()
	cfg := idempotency.Config{Store: store, Namespace: "mix", Now: clock, Logger: slog.New(slog.DiscardHandler)}
	plain, err := idempotency.New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	cfg.Strict = true
	strict, err := idempotency.New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	deadline := now.Add(3 * time.Second)
	ctx, cancel := context.WithDeadline(t.Context(), deadline)
	defer cancel()
	keyFn := idempotency.BodyField("k")
	msg := events.SQSMessage{MessageId: "dup", ReceiptHandle: "rh", Body: `{"k":"pay-1"}`,
		EventSourceARN: "arn:aws:sqs:eu-west-1:123456789012:jobs", Attributes: map[string]string{"ApproximateReceiveCount": "1"}}
	material, _ := idempotency.Select(keyFn, msg)
	id := mustID(t, plain, material)
	release := holdingMessage(t, ctx, strict, keyFn, msg)

	rec, _ := store.Get(id)
	lease := deadline.Add(idempotency.DefaultSkewMargin)
	if !rec.StrictLease.Equal(lease) || !rec.LeaseUntil.Equal(rec.ExpiresAt) || !rec.LeaseEnd().Equal(lease) {
		t.Errorf("strict claim: LeaseUntil %v, StrictLease %v, LeaseEnd %v; want the expiry %v, and %v twice",
			rec.LeaseUntil, rec.StrictLease, rec.LeaseEnd(), rec.ExpiresAt, lease)
	}

	var runs atomic.Int32
	ch := &changes{}
	h := batch.SQS(idempotency.Wrap(plain, keyFn, func(context.Context, events.SQSMessage) (string, error) {
		runs.Add(1)
		return "ran again", nil
	}), batch.Options{Logger: slog.New(slog.DiscardHandler), Pacing: batch.Pacing{Changer: ch}, NoFullBatchError: true})
	before := time.Now()
	resp, err := h(t.Context(), events.SQSEvent{Records: []events.SQSMessage{msg}})
	after := time.Now()
	if err != nil || len(resp.BatchItemFailures) != 1 || len(ch.got) != 1 {
		t.Fatalf("default call while the strict lease is live: %+v, %v, changes %+v; want the record failed and paced", resp, err, ch.got)
	}
	lo, hi := lease.Sub(after), lease.Sub(before)+time.Duration(batch.DefaultPacingJitter*float64(batch.DefaultPacingBase))
	if got := ch.got[0].Timeout; got < lo || got > hi {
		t.Errorf("visibility timeout %v, want between %v and %v: just after the strict lease's end, not the record's expiry", got, lo, hi)
	}

	mu.Lock()
	now = lease.Add(time.Second) // the strict call outlived its lease
	mu.Unlock()
	_, err = idempotency.Do(context.Background(), plain, material, func(context.Context) (string, error) { runs.Add(1); return "", nil })
	if !errors.Is(err, idempotency.ErrQuarantined) {
		t.Errorf("default call after the strict lease lapsed: %v, want ErrQuarantined", err)
	}
	if n := runs.Load(); n != 0 {
		t.Fatalf("the default guard ran the operation %d times on a strict claim", n)
	}
	release() // the holder completes: its completion clears the mark
	got, err := idempotency.Do(context.Background(), plain, material, func(context.Context) (string, error) { runs.Add(1); return "", nil })
	if err != nil || got != "holder's result" || runs.Load() != 0 {
		t.Errorf("default call after the holder completed: %q, %v, runs %d; want the holder's result replayed", got, err, runs.Load())
	}
}
