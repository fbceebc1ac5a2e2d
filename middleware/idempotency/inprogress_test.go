package idempotency_test

import (
	"context"
	"errors"
	"log/slog"
	"sync"
	"testing"
	"time"

	"github.com/aws/aws-lambda-go/events"

	"github.com/sqsonce/sqsonce/middleware/batch"
	"github.com/sqsonce/sqsonce/middleware/idempotency"
	"github.com/sqsonce/sqsonce/middleware/idempotency/memstore"
)

// holding starts a call of key on g that claims it with ctx and blocks in
// its operation until the returned release is called; it returns once the
// key is claimed. release waits for the call to return.
func holding(t *testing.T, ctx context.Context, g *idempotency.Guard, key idempotency.Selection) (release func()) {
	t.Helper()
	return hold(t, func(op func(context.Context) (string, error)) error {
		_, err := idempotency.Do(ctx, g, key, op)
		return err
	})
}

// holdingMessage is holding for the key that keyFn takes from m, claimed
// through Wrap as a batch handler would.
func holdingMessage(t *testing.T, ctx context.Context, g *idempotency.Guard, keyFn idempotency.Selector, m events.SQSMessage) (release func()) {
	t.Helper()
	return hold(t, func(op func(context.Context) (string, error)) error {
		_, err := idempotency.Wrap(g, keyFn, func(ctx context.Context, _ events.SQSMessage) (string, error) { return op(ctx) })(ctx, m)
		return err
	})
}

func hold(t *testing.T, call func(op func(context.Context) (string, error)) error) (release func()) {
	t.Helper()
	claimed, finish, done := make(chan struct{}), make(chan struct{}), make(chan struct{})
	go func() {
		defer close(done)
		err := call(func(context.Context) (string, error) {
			close(claimed)
			<-finish
			return "holder's result", nil
		})
		if err != nil {
			t.Errorf("holder: %v", err)
		}
	}()
	select {
	case <-claimed:
	case <-done:
		t.Fatal("the holder returned without claiming the key")
	case <-time.After(failsafe):
		t.Fatal("the holder did not claim the key within the failsafe")
	}
	var once sync.Once
	release = func() {
		once.Do(func() { close(finish); <-done })
	}
	t.Cleanup(release)
	return release
}

// failsafe bounds a wait that only a bug can make long.
const failsafe = 10 * time.Second

func TestInProgressErrorCarriesLease(t *testing.T) {
	store := memstore.New()
	cfg := idempotency.Config{Store: store, Namespace: "ip", Logger: slog.New(slog.DiscardHandler)}
	holder, _ := idempotency.New(cfg)
	other, _ := idempotency.New(cfg)
	deadline := time.Now().Add(3 * time.Minute)
	ctx, cancel := context.WithDeadline(t.Context(), deadline)
	defer cancel()
	k := idempotency.Raw([]byte(`"held"`))
	holding(t, ctx, holder, k)

	// Two calls of the key at once in the other process: one finds the
	// lease, the other shares its outcome (or finds the lease itself).
	var wg sync.WaitGroup
	errs := make([]error, 2)
	for i := range errs {
		wg.Go(func() {
			_, errs[i] = idempotency.Do(t.Context(), other, k, func(context.Context) (string, error) {
				return "", errors.New("ran while the key was held")
			})
		})
	}
	wg.Wait()
	rec, _ := store.Get(mustID(t, other, k))
	for _, err := range errs {
		var ip *idempotency.InProgressError
		if !errors.As(err, &ip) || !errors.Is(err, idempotency.ErrInProgress) {
			t.Fatalf("err = %v, want an *InProgressError that is ErrInProgress", err)
		}
		if ip.ID != mustID(t, other, k) || !ip.LeaseUntil.Equal(rec.LeaseUntil) || ip.LeaseUntil.Before(deadline) {
			t.Errorf("InProgressError{%s, %v}, want {%s, the stored lease end %v, not before the holder's deadline %v}",
				ip.ID, ip.LeaseUntil, mustID(t, other, k), rec.LeaseUntil, deadline)
		}
		var ra interface{ RetryAt() time.Time }
		if !errors.As(err, &ra) || !ra.RetryAt().Equal(ip.LeaseUntil) {
			t.Errorf("RetryAt through an interface = %v, want %v", ra, ip.LeaseUntil)
		}
	}
}

type changes struct {
	mu  sync.Mutex
	got []batch.VisibilityChange
}

func (c *changes) ChangeVisibility(_ context.Context, ch []batch.VisibilityChange) []error {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.got = append(c.got, ch...)
	return nil
}

// TestInProgressPacedByBatch: a redelivery refused because another
// invocation holds its key comes back just after the holder's lease end,
// not after the queue's visibility timeout.
func TestInProgressPacedByBatch(t *testing.T) {
	store := memstore.New()
	cfg := idempotency.Config{Store: store, Namespace: "pace", Logger: slog.New(slog.DiscardHandler)}
	holder, _ := idempotency.New(cfg)
	other, _ := idempotency.New(cfg)
	deadline := time.Now().Add(3 * time.Minute)
	ctx, cancel := context.WithDeadline(t.Context(), deadline)
	defer cancel()
	keyFn := idempotency.BodyField("k")
	msg := events.SQSMessage{MessageId: "dup", ReceiptHandle: "rh", Body: `{"k":"busy"}`,
		EventSourceARN: "arn:aws:sqs:eu-west-1:123456789012:jobs", Attributes: map[string]string{"ApproximateReceiveCount": "1"}}
	material, _ := idempotency.Select(keyFn, msg)
	id, err := other.ID(material)
	if err != nil {
		t.Fatal(err)
	}
	holdingMessage(t, ctx, holder, keyFn, msg)

	ch := &changes{}
	h := batch.SQS(idempotency.Wrap(other, keyFn, func(context.Context, events.SQSMessage) (string, error) {
		return "", errors.New("ran while the key was held")
	}), batch.Options{Logger: slog.New(slog.DiscardHandler), Pacing: batch.Pacing{Changer: ch}, NoFullBatchError: true})
	before := time.Now()
	resp, err := h(t.Context(), events.SQSEvent{Records: []events.SQSMessage{msg}})
	after := time.Now()
	if err != nil || len(resp.BatchItemFailures) != 1 {
		t.Fatalf("resp = %+v, %v; want the record failed", resp, err)
	}
	rec, _ := store.Get(id)
	if len(ch.got) != 1 {
		t.Fatalf("changes = %+v, want one", ch.got)
	}
	lo := rec.LeaseUntil.Sub(after)
	hi := rec.LeaseUntil.Sub(before) + time.Duration(batch.DefaultPacingJitter*float64(batch.DefaultPacingBase))
	if got := ch.got[0].Timeout; got < lo || got > hi {
		t.Errorf("visibility timeout %v, want between %v and %v: just after the holder's lease end %v", got, lo, hi, rec.LeaseUntil)
	}
}
