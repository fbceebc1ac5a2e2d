package idempotency_test

import (
	"context"
	"errors"
	"testing"

	"github.com/aws/aws-lambda-go/events"

	"github.com/sqsonce/sqsonce/middleware/batch"
	"github.com/sqsonce/sqsonce/middleware/idempotency"
	"github.com/sqsonce/sqsonce/middleware/idempotency/driver"
)

// TestPayloadMismatchErrorNamesTheRecord: a reused key with another payload
// fails with a *PayloadMismatchError carrying the record id, from the store
// and from the cache, and it is ErrPayloadMismatch.
func TestPayloadMismatchErrorNamesTheRecord(t *testing.T) {
	for _, cached := range []bool{false, true} {
		f := newFixture(t, func(c *idempotency.Config) {
			if cached {
				c.CacheBytes = 1 << 20
			}
		})
		op := func(context.Context) (int, error) { return 1, nil }
		if _, err := idempotency.Do(ctxWithDeadline(t), f.guard, key, op, idempotency.WithPayload(idempotency.Raw([]byte(`"a"`)))); err != nil {
			t.Fatal(err)
		}
		_, err := idempotency.Do(ctxWithDeadline(t), f.guard, key, op, idempotency.WithPayload(idempotency.Raw([]byte(`"b"`))))
		pm, ok := errors.AsType[*idempotency.PayloadMismatchError](err)
		if !ok || pm.ID != mustID(t, f.guard, key) || !errors.Is(err, idempotency.ErrPayloadMismatch) {
			t.Errorf("cached %v: err = %v, want a *PayloadMismatchError with the record id that is ErrPayloadMismatch", cached, err)
		}
	}
}

// TestDoAndWrapShareRecords: key material is one type, so a Do caller and
// a Wrap consumer that select the same value share one record.
func TestDoAndWrapShareRecords(t *testing.T) {
	f := newFixture(t, nil)
	k, err := idempotency.Select(idempotency.BodyField("idempotency_key"), `{"idempotency_key": "k-17"}`)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := idempotency.Do(ctxWithDeadline(t), f.guard, k, func(context.Context) (string, error) { return "by Do", nil }); err != nil {
		t.Fatal(err)
	}
	h := idempotency.Wrap(f.guard, idempotency.BodyField("idempotency_key"), func(context.Context, events.SQSMessage) (string, error) {
		return "by Wrap", nil
	})
	got, err := h(ctxWithDeadline(t), events.SQSMessage{MessageId: "m-1", Body: `{"idempotency_key":"k-17"}`})
	if err != nil || got != "by Do" {
		t.Errorf("Wrap after Do of the same key: %q, %v; want the stored %q", got, err, "by Do")
	}
	id, err := f.guard.ID(k)
	if err != nil || f.lastEvent(t).ID != id {
		t.Errorf("Wrap's record %q, Guard.ID %q (%v): want one record", f.lastEvent(t).ID, id, err)
	}
}

// TestGuardIDFails: Guard.ID reports why a key has no id, rather than "".
func TestGuardIDFails(t *testing.T) {
	f := newFixture(t, func(c *idempotency.Config) { c.Format = idempotency.FormatPowertoolsPython })
	if id, err := f.guard.ID(idempotency.Raw([]byte("not JSON"))); err == nil || id != "" {
		t.Errorf("ID of non-JSON material in the Python format: %q, %v; want an error", id, err)
	}
}

type panicky struct{}

func (panicky) MarshalJSON() ([]byte, error) { panic("MarshalJSON bug") }

// TestResultMarshalPanic: a panic in the result's MarshalJSON is a
// *PanicError (not a store error); the operation ran, so the record is
// completed without a result and a redelivery does not run it again.
func TestResultMarshalPanic(t *testing.T) {
	f := newFixture(t, nil)
	runs := 0
	_, err := idempotency.Do(ctxWithDeadline(t), f.guard, key, func(context.Context) (panicky, error) { runs++; return panicky{}, nil })
	pe, ok := errors.AsType[*batch.PanicError](err)
	if !ok || pe.Value != "MarshalJSON bug" || len(pe.Stack) == 0 {
		t.Fatalf("err = %v, want a *PanicError with the panic value and a stack", err)
	}
	if _, ok := errors.AsType[*idempotency.StoreError](err); ok {
		t.Errorf("err = %v, want no *StoreError: the store did not fail", err)
	}
	if ev := f.lastEvent(t); ev.Outcome != idempotency.OutcomeFailed || !ev.Ran {
		t.Errorf("event %+v, want failed with Ran", ev)
	}
	if rec, _ := f.store.Get(mustID(t, f.guard, key)); rec.Status != driver.StatusCompleted || rec.Data != nil {
		t.Errorf("record %+v, want COMPLETED without a result", rec)
	}
	if _, err := idempotency.Do(ctxWithDeadline(t), f.guard, key, func(context.Context) (panicky, error) { runs++; return panicky{}, nil }); err != nil || runs != 1 {
		t.Errorf("redelivery: %v after %d runs; want the empty stored result after 1 run", err, runs)
	}
}

func TestWrapRefusesZeroPayload(t *testing.T) {
	g := newFixture(t, nil).guard
	defer func() {
		if recover() == nil {
			t.Error("Wrap with WithPayload of a zero Selector did not panic")
		}
	}()
	idempotency.Wrap(g, idempotency.BodyField("k"), func(context.Context, events.SQSMessage) (int, error) { return 0, nil }, idempotency.WithPayload(idempotency.Selector{}))
}

// TestDocumentedErrorsReachable: every error type the package documents
// as returned by Do and Wrap is reached with errors.As from what they
// return, and each such error tells package batch it was logged.
func TestDocumentedErrorsReachable(t *testing.T) {
	f := newFixture(t, nil)
	ctx := ctxWithDeadline(t)
	held := idempotency.Raw([]byte(`"held"`))
	release := holding(t, ctx, newFixture(t, func(c *idempotency.Config) { c.Store = f.store }).guard, held)
	defer release()
	for name, tc := range map[string]struct {
		run  func() error
		want func(error) bool
	}{
		"*KeyError": {func() error {
			_, err := idempotency.Do(ctx, f.guard, idempotency.Selection{}, func(context.Context) (int, error) { return 1, nil })
			return err
		}, func(err error) bool { _, ok := errors.AsType[*idempotency.KeyError](err); return ok }},
		"*BodyError": {func() error {
			_, err := wrapJSON(f.guard, jsonBody[struct{ K string }]{KeyFunc: func(struct{ K string }) (idempotency.Selection, error) {
				return idempotency.SelectionOf("k", "k")
			}}, func(context.Context, struct{ K string }, events.SQSMessage) (int, error) { return 1, nil })(ctx, events.SQSMessage{Body: "{"})
			return err
		}, func(err error) bool { _, ok := errors.AsType[*idempotency.BodyError](err); return ok }},
		"*InProgressError": {func() error {
			_, err := idempotency.Do(ctx, f.guard, held, func(context.Context) (int, error) { return 1, nil })
			return err
		}, func(err error) bool { _, ok := errors.AsType[*idempotency.InProgressError](err); return ok }},
		"*PanicError": {func() error {
			_, err := idempotency.Do(ctx, f.guard, idempotency.Raw([]byte(`"p"`)), func(context.Context) (int, error) { panic("boom") })
			return err
		}, func(err error) bool { _, ok := errors.AsType[*batch.PanicError](err); return ok }},
		"*StoreError": {func() error {
			f := newFixture(t, nil)
			f.store.acquireErr = errors.New("down")
			_, err := idempotency.Do(ctx, f.guard, key, func(context.Context) (int, error) { return 1, nil })
			return err
		}, func(err error) bool { _, ok := errors.AsType[*idempotency.StoreError](err); return ok }},
	} {
		err := tc.run()
		if !tc.want(err) {
			t.Errorf("%s: err = %v (%T), want one reachable with errors.As", name, err, err)
		}
		if l, ok := errors.AsType[batch.LoggedError](err); !ok || !l.Logged() {
			t.Errorf("%s: err = %v does not say it was logged", name, err)
		}
	}
}
