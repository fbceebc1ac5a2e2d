package idempotency_test

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/aws/aws-lambda-go/events"

	"github.com/sqsonce/sqsonce/middleware/batch"
	"github.com/sqsonce/sqsonce/middleware/idempotency"
	"github.com/sqsonce/sqsonce/middleware/idempotency/driver"
	"github.com/sqsonce/sqsonce/middleware/idempotency/memstore"
)

func TestNewRefusesBadConfig(t *testing.T) {
	store := memstore.New()
	tests := []struct {
		name string
		cfg  idempotency.Config
		want string
	}{
		{"no store", idempotency.Config{Namespace: "n"}, "Store is required"},
		{"no namespace", idempotency.Config{Store: store}, "Namespace is required"},
		{"negative expiry", idempotency.Config{Store: store, Namespace: "n", ExpiresAfter: -time.Second}, "negative"},
		{"expiry below the queue window", idempotency.Config{Store: store, Namespace: "n",
			ExpiresAfter: time.Hour, MinExpiry: batch.QueueWindow(4*24*time.Hour, 5, 18*time.Minute)}, "shorter than the queue's window"},
		{"default expiry below a 14-day window", idempotency.Config{Store: store, Namespace: "n",
			MinExpiry: batch.QueueWindow(14*24*time.Hour, 1000, time.Hour)}, "shorter than the queue's window"},
		{"lease longer than expiry", idempotency.Config{Store: store, Namespace: "n", ExpiresAfter: time.Minute, Lease: time.Hour}, "longer than"},
		{"keep-alive limit negative", idempotency.Config{Store: store, Namespace: "n", KeepAliveLimit: -time.Second}, "KeepAliveLimit"},
		{"keep-alive limit longer than expiry", idempotency.Config{Store: store, Namespace: "n", ExpiresAfter: time.Hour, Lease: time.Minute,
			KeepAliveLimit: 2 * time.Hour}, "KeepAliveLimit"},
		{"expiry within the skew margin", idempotency.Config{Store: store, Namespace: "n", ExpiresAfter: 5 * time.Second, Lease: time.Second}, "SkewMargin"},
		{"negative cache", idempotency.Config{Store: store, Namespace: "n", CacheBytes: -1}, "CacheBytes"},
		{"unknown format", idempotency.Config{Store: store, Namespace: "n", Format: 7}, "Format"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			g, err := idempotency.New(tc.cfg)
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("New = %v, %v; want an error containing %q", g, err, tc.want)
			}
		})
	}
	if _, err := idempotency.New(idempotency.Config{Store: store, Namespace: "n",
		MinExpiry: batch.QueueWindow(4*24*time.Hour, 5, 18*time.Minute)}); err != nil {
		t.Errorf("default expiry over a 4-day queue: %v", err)
	}
	if _, err := idempotency.New(idempotency.Config{Store: store, Namespace: "n", ExpiresAfter: time.Hour, Lease: time.Minute}); err != nil {
		t.Errorf("an expiry below DefaultKeepAliveLimit, with the limit's zero value: %v", err)
	}
	// The bounds themselves are valid: an expiry equal to the queue's
	// window, a lease or a keep-alive limit equal to the expiry.
	for name, cfg := range map[string]idempotency.Config{
		"expiry at the queue's window":   {ExpiresAfter: time.Hour, MinExpiry: time.Hour},
		"lease at the expiry":            {ExpiresAfter: time.Minute, Lease: time.Minute},
		"keep-alive limit at the expiry": {ExpiresAfter: time.Hour, Lease: time.Minute, KeepAliveLimit: time.Hour},
	} {
		cfg.Store, cfg.Namespace = store, "n"
		if _, err := idempotency.New(cfg); err != nil {
			t.Errorf("%s: %v", name, err)
		}
	}
}

func TestCacheServesCompletedWithoutStore(t *testing.T) {
	now := t0
	f := newFixture(t, func(c *idempotency.Config) {
		c.CacheBytes = 1 << 20
		c.ExpiresAfter = time.Hour
		c.Now = func() time.Time { return now }
	})
	fn := func(context.Context) (int, error) { return int(f.calls.Add(1)), nil }
	for i := range 3 {
		got, err := idempotency.Do(ctxWithDeadline(t), f.guard, key, fn)
		if err != nil || got != 1 {
			t.Fatalf("call %d: %d, %v; want 1", i, got, err)
		}
	}
	if n := f.store.acquires.Load(); n != 1 {
		t.Errorf("store Acquire called %d times over 3 calls with the cache on, want 1", n)
	}
	if ev := f.lastEvent(t); ev.Outcome != idempotency.OutcomeReplayed || ev.Source != "cache" {
		t.Errorf("last event %+v, want replayed from the cache", ev)
	}
	now = now.Add(time.Hour) // the record expired: the cache must not serve it
	if got, err := idempotency.Do(ctxWithDeadline(t), f.guard, key, fn); err != nil || got != 2 {
		t.Fatalf("after expiry: %d, %v; want a second run", got, err)
	}
	other := idempotency.Raw([]byte(`"another key"`))
	if _, err := idempotency.Do(ctxWithDeadline(t), f.guard, other, fn, idempotency.WithPayload(idempotency.Raw([]byte("payload 1")))); err != nil {
		t.Fatal(err)
	}
	acquires := f.store.acquires.Load()
	_, err := idempotency.Do(ctxWithDeadline(t), f.guard, other, fn, idempotency.WithPayload(idempotency.Raw([]byte("payload 2"))))
	if !errors.Is(err, idempotency.ErrPayloadMismatch) {
		t.Fatalf("cached key reused with another payload: %v, want ErrPayloadMismatch", err)
	}
	if ev := f.lastEvent(t); ev.Source != "cache" || f.store.acquires.Load() != acquires {
		t.Errorf("mismatch event %+v after %d store calls, want it from the cache", ev, f.store.acquires.Load()-acquires)
	}
}

func TestWrap(t *testing.T) {
	f := newFixture(t, nil)
	h := idempotency.Wrap(f.guard, idempotency.BodyField("idempotency_key"), func(_ context.Context, m events.SQSMessage) (string, error) {
		f.calls.Add(1)
		return "summary of " + m.MessageId, nil
	}, idempotency.WithPayload(idempotency.BodySubset("document_id", "version")))
	first := events.SQSMessage{MessageId: "a", Body: `{"idempotency_key":"k1","document_id":"4471","version":9}`}
	resend := events.SQSMessage{MessageId: "b", Body: `{"version":9,"document_id":"4471","idempotency_key":"k1","sent_at":"later"}`}
	reused := events.SQSMessage{MessageId: "c", Body: `{"idempotency_key":"k1","document_id":"4471","version":10}`}
	noKey := events.SQSMessage{MessageId: "d", Body: `{"document_id":"4471","version":9}`}

	ctx := ctxWithDeadline(t)
	if got, err := h(ctx, first); err != nil || got != "summary of a" {
		t.Fatalf("first delivery: %q, %v", got, err)
	}
	if got, err := h(ctx, resend); err != nil || got != "summary of a" {
		t.Fatalf("producer re-send: %q, %v; want the stored result", got, err)
	}
	if ev := f.lastEvent(t); ev.InputID != "b" || ev.Outcome != idempotency.OutcomeReplayed {
		t.Errorf("re-send event %+v", ev)
	}
	if _, err := h(ctx, reused); !errors.Is(err, idempotency.ErrPayloadMismatch) {
		t.Fatalf("key reused for other work: err = %v, want ErrPayloadMismatch", err)
	}
	_, err := h(ctx, noKey)
	var ke *idempotency.KeyError
	if !errors.Is(err, idempotency.ErrNoKey) || !errors.As(err, &ke) || ke.InputID != "d" {
		t.Fatalf("missing key: err = %v, want a *KeyError wrapping ErrNoKey for message d", err)
	}
	if n := f.calls.Load(); n != 1 {
		t.Errorf("operation ran %d times, want 1", n)
	}
}

func TestAttach(t *testing.T) {
	if id := idempotency.RecordID(context.Background()); id != "" {
		t.Errorf("RecordID outside an operation = %q, want empty", id)
	}
	if err := idempotency.Attach(context.Background(), "w"); !errors.Is(err, idempotency.ErrNotClaimed) {
		t.Errorf("Attach outside an operation: %v, want ErrNotClaimed", err)
	}
	f := newFixture(t, nil)
	var inner context.Context
	var attachErr error
	_, err := idempotency.Do(ctxWithDeadline(t), f.guard, key, func(ctx context.Context) (int, error) {
		inner = ctx
		if id := idempotency.RecordID(ctx); id != mustID(t, f.guard, key) {
			t.Errorf("RecordID inside the operation = %q, want %q", id, mustID(t, f.guard, key))
		}
		attachErr = idempotency.Attach(ctx, "a write")
		return 1, attachErr
	})
	// The memory store cannot commit attached writes: Attach refuses them
	// when they are attached, before any work is lost.
	if !errors.Is(attachErr, driver.ErrAttachUnsupported) || !errors.Is(err, driver.ErrAttachUnsupported) {
		t.Fatalf("Attach on memstore: %v (Do: %v), want ErrAttachUnsupported", attachErr, err)
	}
	if err := idempotency.Attach(inner, "late"); !errors.Is(err, idempotency.ErrNotClaimed) {
		t.Errorf("Attach after the operation returned: %v, want ErrNotClaimed", err)
	}
}

// attachStore is memstore with attached writes of type string: it refuses
// any other when it is attached, keeps what each validation saw, and takes
// the writes its completion carried.
type attachStore struct {
	*memstore.Store
	seen      [][]any
	committed []any
}

var errNotAString = errors.New("attachStore: not a string")

func (s *attachStore) ValidateAttached(id string, writes []any) error {
	s.seen = append(s.seen, writes)
	for _, w := range writes {
		if _, ok := w.(string); !ok {
			return errNotAString
		}
	}
	return nil
}

func (s *attachStore) Complete(ctx context.Context, rec driver.Record) ([]byte, error) {
	s.committed, rec.Attached = rec.Attached, nil
	return s.Store.Complete(ctx, rec)
}

// TestAttachValidated: each Attach hands the store every write attached so
// far with the new one; a refused write is refused at once and not kept,
// and the completion carries the writes that were accepted, in order.
func TestAttachValidated(t *testing.T) {
	s := &attachStore{Store: memstore.New()}
	g, err := idempotency.New(idempotency.Config{Store: s, Namespace: "n"})
	if err != nil {
		t.Fatal(err)
	}
	var errs []error
	if _, err := idempotency.Do(ctxWithDeadline(t), g, key, func(ctx context.Context) (int, error) {
		for _, w := range []any{"a", 42, "b"} {
			errs = append(errs, idempotency.Attach(ctx, w))
		}
		return 1, nil
	}); err != nil {
		t.Fatal(err)
	}
	if errs[0] != nil || !errors.Is(errs[1], errNotAString) || errs[2] != nil {
		t.Errorf("Attach of a, 42, b: %v; want nil, the store's refusal, nil", errs)
	}
	want := "[[a] [a 42] [a b]]"
	if got := fmt.Sprint(s.seen); got != want {
		t.Errorf("the store validated %s, want %s", got, want)
	}
	if got := fmt.Sprint(s.committed); got != "[a b]" {
		t.Errorf("the completion carried %s, want [a b]", got)
	}
}
