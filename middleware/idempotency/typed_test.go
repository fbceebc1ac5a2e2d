package idempotency_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/aws/aws-lambda-go/events"
	"github.com/aws/aws-lambda-go/lambda"

	"github.com/sqsonce/sqsonce/middleware/batch"
	"github.com/sqsonce/sqsonce/middleware/idempotency"
	"github.com/sqsonce/sqsonce/middleware/idempotency/driver"
	"github.com/sqsonce/sqsonce/middleware/idempotency/memstore"
)

// acquires counts the claims a store is asked for.
type acquires struct {
	driver.Store
	n atomic.Int32
}

func (s *acquires) Acquire(ctx context.Context, rec driver.Record, now time.Time, mode driver.ClaimMode) (driver.Record, bool, error) {
	s.n.Add(1)
	return s.Store.Acquire(ctx, rec, now, mode)
}

// jsonBody is how these tests describe a WrapJSON wiring: a key selector
// or a key function of the request, and the options.
type jsonBody[Req any] struct {
	Key                   idempotency.Selector // when KeyFunc is nil
	KeyFunc               func(Req) (idempotency.Selection, error)
	Check                 func(Req) error
	PayloadFunc           func(Req) (idempotency.Selection, error)
	DisallowUnknownFields bool
}

// wrapJSON is idempotency.WrapJSON wired as b says.
func wrapJSON[Req, T any](g *idempotency.Guard, b jsonBody[Req], fn func(context.Context, Req, events.SQSMessage) (T, error), opts ...idempotency.Option) func(context.Context, events.SQSMessage) (T, error) {
	key := b.Key
	if b.KeyFunc != nil {
		key = idempotency.SelectorFunc(b.KeyFunc)
	}
	if b.Check != nil {
		opts = append(opts, idempotency.WithCheck(b.Check))
	}
	if b.PayloadFunc != nil {
		opts = append(opts, idempotency.WithPayload(idempotency.SelectorFunc(b.PayloadFunc)))
	}
	if b.DisallowUnknownFields {
		opts = append(opts, idempotency.DisallowUnknownFields())
	}
	return idempotency.WrapJSON(g, key, fn, opts...)
}

// order is the request type of these tests.
type order struct {
	ID     string `json:"id"`
	Amount int    `json:"amount"`
	Note   note   `json:"note"` // not part of the key
}

// note is a string whose decodes are counted: one per decoded body that has
// a note.
type note string

var noteDecodes atomic.Int32

func (n *note) UnmarshalJSON(b []byte) error {
	noteDecodes.Add(1)
	return json.Unmarshal(b, (*string)(n))
}

func orderKey(o order) (idempotency.Selection, error) {
	if o.ID == "" {
		return idempotency.Selection{}, nil
	}
	return idempotency.SelectionOf("order", o.ID)
}

// typedFixture is WrapJSON over a claim-counting store, recording the
// guard's events and the operation's calls.
type typedFixture struct {
	store  *acquires
	mu     sync.Mutex
	events []idempotency.Report
	got    []order // the requests the operation was called with
	h      func(context.Context, events.SQSMessage) (string, error)
}

func newTypedFixture(t *testing.T, body jsonBody[order], mod func(*idempotency.Config)) *typedFixture {
	t.Helper()
	f := &typedFixture{store: &acquires{Store: memstore.New()}}
	cfg := idempotency.Config{
		Store: f.store, Namespace: "orders", Logger: slog.New(slog.DiscardHandler),
		OnOutcome: func(_ context.Context, ev idempotency.Report) {
			f.mu.Lock()
			defer f.mu.Unlock()
			f.events = append(f.events, ev)
		},
	}
	if mod != nil {
		mod(&cfg)
	}
	g, err := idempotency.New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	f.h = wrapJSON(g, body, func(_ context.Context, o order, m events.SQSMessage) (string, error) {
		f.mu.Lock()
		defer f.mu.Unlock()
		f.got = append(f.got, o)
		return fmt.Sprintf("%s:%d by %s", o.ID, o.Amount, m.MessageId), nil
	})
	return f
}

func (f *typedFixture) lastEvent(t *testing.T) idempotency.Report {
	t.Helper()
	f.mu.Lock()
	defer f.mu.Unlock()
	if len(f.events) == 0 {
		t.Fatal("no event reported")
	}
	return f.events[len(f.events)-1]
}

// TestWrapJSONBadBodies: a body that is not the request type fails its
// message with a clear error, reports one failed outcome, and claims
// nothing; the operation never runs.
func TestWrapJSONBadBodies(t *testing.T) {
	check := func(o order) error {
		if o.Amount <= 0 {
			return errors.New("amount must be positive")
		}
		return nil
	}
	tests := []struct {
		name   string
		strict bool
		body   string
		want   string // in the error
		keyErr bool   // a *KeyError rather than a *BodyError
	}{
		{"not JSON", false, `{"id": `, "not valid JSON (at byte 7)", false},
		{"not JSON, strict", true, `{"id": `, "not valid JSON (at byte 7)", false},
		{"empty", false, ``, "not valid JSON (at byte 0)", false},
		{"empty, strict", true, ``, "not valid JSON (at byte 0)", false},
		{"array", false, `[1,2]`, "a JSON array, want idempotency_test.order", false},
		{"wrong type", false, `{"id":"o-1","amount":"12"}`, "field amount is a JSON string, want int", false},
		{"trailing data", false, `{"id":"o-1","amount":1} {}`, "not valid JSON (at byte 24)", false},
		{"trailing data, strict", true, `{"id":"o-1","amount":1} {}`, "not valid JSON (at byte 24)", false},
		{"unknown field, strict", true, `{"id":"o-1","amount":1,"coupon":"x"}`, `unknown field (6 bytes`, false},
		{"lone high surrogate", false, `{"id":"o-\ud800","amount":1}`, "unpaired surrogate escape", false},
		{"lone low surrogate", false, `{"id":"o-\udc00","amount":1}`, "unpaired surrogate escape", false},
		{"high surrogate, then another escape", false, `{"id":"o-\ud800\n","amount":1}`, "unpaired surrogate escape", false},
		{"high surrogate at the end of a string", false, `{"amount":1,"id":"o-\udbff"}`, "unpaired surrogate escape", false},
		{"invalid UTF-8", false, "{\"id\":\"o-\xff\",\"amount\":1}", "not valid UTF-8", false},
		{"refused by Check", false, `{"id":"o-1","amount":0}`, "amount must be positive", false},
		{"no key", false, `{"amount":1}`, "no idempotency key", true},
		{"null", false, `null`, "no idempotency key", true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			f := newTypedFixture(t, jsonBody[order]{KeyFunc: orderKey, Check: check, DisallowUnknownFields: tt.strict}, nil)
			_, err := f.h(t.Context(), events.SQSMessage{MessageId: "m-9", Body: tt.body})
			if err == nil || !strings.Contains(err.Error(), tt.want) || !strings.Contains(err.Error(), "m-9") {
				t.Fatalf("error %v, want one naming message m-9 and %q", err, tt.want)
			}
			var be *idempotency.BodyError
			var ke *idempotency.KeyError
			if tt.keyErr {
				if !errors.As(err, &ke) || !errors.Is(err, idempotency.ErrNoKey) {
					t.Errorf("error %v: want a *KeyError wrapping ErrNoKey", err)
				}
			} else if !errors.As(err, &be) || be.Type != "idempotency_test.order" || be.InputID != "m-9" {
				t.Errorf("error %v: want a *BodyError for idempotency_test.order, message m-9", err)
			}
			if ev := f.lastEvent(t); ev.Outcome != idempotency.OutcomeFailed || ev.InputID != "m-9" || ev.Ran || ev.Err == nil || !errors.Is(err, ev.Err) {
				t.Errorf("event %+v, want one failed outcome for m-9 with the error", ev)
			}
			if n := f.store.n.Load(); n != 0 || len(f.got) != 0 {
				t.Errorf("%d claims, %d runs; want none", n, len(f.got))
			}
		})
	}
}

// TestWrapJSONDecodesOnce: each body is decoded once, the operation gets the
// decoded request and the message, and duplicates replay without running.
func TestWrapJSONDecodesOnce(t *testing.T) {
	var keyCalls, validateCalls, checkCalls atomic.Int32
	f := newTypedFixture(t, jsonBody[order]{
		KeyFunc: func(o order) (idempotency.Selection, error) { keyCalls.Add(1); return orderKey(o) },
		Check:   func(order) error { checkCalls.Add(1); return nil },
		PayloadFunc: func(o order) (idempotency.Selection, error) {
			validateCalls.Add(1)
			return idempotency.SelectionOf("amount", o.Amount)
		},
	}, nil)
	noteDecodes.Store(0)
	msgs := []events.SQSMessage{
		{MessageId: "m-1", Body: `{"id":"o-1","amount":5,"note":"first","extra":true}`}, // lenient: extra ignored
		{MessageId: "m-1", Body: `{"id":"o-1","amount":5,"note":"first","extra":true}`},
		{MessageId: "m-2", Body: `{"note":"re-sent","amount":5,"id":"o-1"}`},
	}
	for _, m := range msgs {
		s, err := f.h(t.Context(), m)
		if err != nil || s != "o-1:5 by m-1" {
			t.Fatalf("%s: %q, %v; want the first run's result", m.MessageId, s, err)
		}
	}
	if n := noteDecodes.Load(); n != int32(len(msgs)) {
		t.Errorf("%d decodes for %d messages, want one each", n, len(msgs))
	}
	if k, c, v := keyCalls.Load(), checkCalls.Load(), validateCalls.Load(); k != 3 || c != 3 || v != 3 {
		t.Errorf("KeyFunc, Check, PayloadFunc called %d, %d, %d times; want 3 each", k, c, v)
	}
	if len(f.got) != 1 || f.got[0] != (order{ID: "o-1", Amount: 5, Note: "first"}) {
		t.Errorf("operation called with %+v, want once with the decoded first order", f.got)
	}
	if _, err := f.h(t.Context(), events.SQSMessage{MessageId: "m-3", Body: `{"id":"o-1","amount":6}`}); !errors.Is(err, idempotency.ErrPayloadMismatch) {
		t.Errorf("key reused with another amount: %v, want ErrPayloadMismatch", err)
	}
}

// TestWrapJSONPayload: JSONBody.PayloadFunc validates the payload; its
// error fails the message before any claim.
func TestWrapJSONPayload(t *testing.T) {
	f := newTypedFixture(t, jsonBody[order]{KeyFunc: orderKey, PayloadFunc: func(o order) (idempotency.Selection, error) {
		if o.Amount == 0 {
			return idempotency.Selection{}, errors.New("no amount")
		}
		return idempotency.SelectionOf("amount", o.Amount)
	}}, nil)
	if _, err := f.h(t.Context(), events.SQSMessage{MessageId: "m-1", Body: `{"id":"o-1","amount":5}`}); err != nil {
		t.Fatal(err)
	}
	if _, err := f.h(t.Context(), events.SQSMessage{MessageId: "m-2", Body: `{"id":"o-1","amount":7}`}); !errors.Is(err, idempotency.ErrPayloadMismatch) {
		t.Errorf("error %v, want ErrPayloadMismatch", err)
	}
	claims := f.store.n.Load()
	_, err := f.h(t.Context(), events.SQSMessage{MessageId: "m-3", Body: `{"id":"o-2"}`})
	var ke *idempotency.KeyError
	if !errors.As(err, &ke) || !strings.Contains(err.Error(), "payload for validation") {
		t.Errorf("error %v, want a *KeyError for the payload", err)
	}
	if f.store.n.Load() != claims {
		t.Error("a message without its validated payload was claimed")
	}
}

// TestWrapJSONKeyError: a key function's error fails the message as a
// *KeyError naming the request type, before any claim.
func TestWrapJSONKeyError(t *testing.T) {
	boom := errors.New("id has no shop prefix")
	f := newTypedFixture(t, jsonBody[order]{KeyFunc: func(order) (idempotency.Selection, error) { return idempotency.Selection{}, boom }}, nil)
	_, err := f.h(t.Context(), events.SQSMessage{MessageId: "m-1", Body: `{"id":"o-1"}`})
	var ke *idempotency.KeyError
	if !errors.As(err, &ke) || !errors.Is(err, boom) || ke.Source != "idempotency_test.order" {
		t.Errorf("error %v, want a *KeyError from idempotency_test.order wrapping the key function's", err)
	}
	if f.store.n.Load() != 0 {
		t.Error("claimed without a key")
	}
}

// TestWrapJSONSameKeyAtOnce: goroutines delivering one request at once
// through one guard run the operation once and all get its result (the
// others wait for the run in process).
func TestWrapJSONSameKeyAtOnce(t *testing.T) {
	f := newTypedFixture(t, jsonBody[order]{KeyFunc: orderKey}, nil)
	const n = 16
	var wg sync.WaitGroup
	for i := range n {
		wg.Go(func() {
			m := events.SQSMessage{MessageId: fmt.Sprintf("m-%d", i), Body: `{"id":"o-1","amount":5}`}
			s, err := f.h(context.Background(), m)
			if err != nil || !strings.HasPrefix(s, "o-1:5 by ") {
				t.Errorf("%s: %q, %v", m.MessageId, s, err)
			}
		})
	}
	wg.Wait()
	if len(f.got) != 1 {
		t.Errorf("operation ran %d times, want once", len(f.got))
	}
}

// TestWrapJSONInBatch: WrapJSON's function is what batch.SQS takes, and the
// batch handler is what lambda.StartHandlerFunc infers; a bad body fails
// only its own record.
func TestWrapJSONInBatch(t *testing.T) {
	f := newTypedFixture(t, jsonBody[order]{KeyFunc: orderKey, DisallowUnknownFields: true}, nil)
	h := batch.SQS(f.h, batch.Options{Logger: slog.New(slog.DiscardHandler)})
	_ = func() { lambda.StartHandlerFunc(h) } // compiles: the type parameters are inferred
	resp, err := h(t.Context(), events.SQSEvent{Records: []events.SQSMessage{
		{MessageId: "m-1", Body: `{"id":"o-1","amount":5}`},
		{MessageId: "m-2", Body: `{"id":"o-2","amount":5,"typo":1}`},
		{MessageId: "m-3", Body: `{"id":"o-1","amount":5}`},
	}})
	if err != nil {
		t.Fatal(err)
	}
	if len(resp.BatchItemFailures) != 1 || resp.BatchItemFailures[0].ItemIdentifier != "m-2" {
		t.Errorf("failures %+v, want m-2 only", resp.BatchItemFailures)
	}
	if len(f.got) != 1 {
		t.Errorf("operation ran %d times, want once", len(f.got))
	}
}

func TestWrapJSONRefusesNilConfiguration(t *testing.T) {
	g, err := idempotency.New(idempotency.Config{Store: memstore.New(), Namespace: "n"})
	if err != nil {
		t.Fatal(err)
	}
	op := func(context.Context, order, events.SQSMessage) (int, error) { return 0, nil }
	for name, wrap := range map[string]func(){
		"guard":     func() { idempotency.WrapJSON(nil, idempotency.SelectorFunc(orderKey), op) },
		"key":       func() { idempotency.WrapJSON(g, idempotency.Selector{}, op) },
		"operation": func() { idempotency.WrapJSON[order, int](g, idempotency.SelectorFunc(orderKey), nil) },
	} {
		t.Run(name, func(t *testing.T) {
			defer func() {
				if v := recover(); v == nil || !strings.HasPrefix(fmt.Sprint(v), "idempotency: WrapJSON: ") {
					t.Errorf("recovered %v, want a WrapJSON panic", v)
				}
			}()
			wrap()
		})
	}
}

// TestWrapJSONLossyStrings: bodies that encoding/json would decode with a
// loss (U+FFFD for a lone surrogate) are refused above; these decode
// exactly and run, each under its own key.
func TestWrapJSONLossyStrings(t *testing.T) {
	f := newTypedFixture(t, jsonBody[order]{KeyFunc: orderKey}, nil)
	for i, body := range []string{
		`{"id":"o-\ud83d\ude00","amount":1}`, // a surrogate pair: one emoji
		`{"id":"o-\\ud800","amount":1}`,      // an escaped backslash, then the text ud800
		`{"id":"o-\u00e9","amount":1}`,
	} {
		m := events.SQSMessage{MessageId: fmt.Sprintf("m-%d", i), Body: body}
		if _, err := f.h(context.Background(), m); err != nil {
			t.Errorf("%s: %v", body, err)
		}
	}
	if len(f.got) != 3 {
		t.Errorf("operation ran %d times, want 3 (three keys)", len(f.got))
	}
}
