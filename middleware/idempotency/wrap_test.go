package idempotency_test

import (
	"context"
	"encoding/base64"
	"encoding/json"
	"errors"
	"log/slog"
	"strings"
	"testing"
	"time"

	"github.com/aws/aws-lambda-go/events"

	"github.com/sqsonce/sqsonce/middleware/idempotency"
	"github.com/sqsonce/sqsonce/middleware/idempotency/driver"
	"github.com/sqsonce/sqsonce/middleware/idempotency/memstore"
)

// ownBody is an input of a caller's own type that carries a JSON body.
type ownBody struct{ payload []byte }

func (b ownBody) JSONBody() []byte { return b.payload }

// bodyID is the record id Wrap claims for in with key, and the input id it
// reports.
func bodyID[In any](t *testing.T, g *idempotency.Guard, reports *[]idempotency.Report, key idempotency.Selector, in In) (string, string, error) {
	t.Helper()
	_, err := idempotency.Wrap(g, key, func(context.Context, In) (int, error) { return 1, nil })(t.Context(), in)
	r := (*reports)[len(*reports)-1]
	return r.ID, r.InputID, err
}

// TestBodySelectorsOnEveryInput: BodyField, BodySubset and FirstOf read
// the JSON body of every input that carries one, each where its event
// puts it (base64-decoded where the event says so), and give the record id
// they give an SQS message of that body; each event's own id names it.
func TestBodySelectorsOnEveryInput(t *testing.T) {
	var reports []idempotency.Report
	g, err := idempotency.New(idempotency.Config{Store: memstore.New(), Namespace: "inputs", Logger: slog.New(slog.DiscardHandler),
		OnOutcome: func(_ context.Context, r idempotency.Report) { reports = append(reports, r) }})
	if err != nil {
		t.Fatal(err)
	}
	const body = `{"order_id" : "o-1", "amount": 5, "currency": "EUR"}`
	b64 := base64.StdEncoding.EncodeToString([]byte(body))
	for _, key := range []idempotency.Selector{
		idempotency.BodyField("order_id"),
		idempotency.BodySubset("amount", "currency"),
		idempotency.FirstOf(idempotency.BodyField("absent"), idempotency.BodyField("order_id")),
	} {
		want, _, err := bodyID(t, g, &reports, key, events.SQSMessage{MessageId: "m-1", Body: body})
		if err != nil || want == "" {
			t.Fatalf("SQS: %q, %v", want, err)
		}
		for _, tc := range []struct {
			name    string
			id      func() (string, string, error)
			inputID string
		}{
			{"Kinesis", func() (string, string, error) {
				return bodyID(t, g, &reports, key, events.KinesisEventRecord{EventID: "shard-0:1", Kinesis: events.KinesisRecord{Data: []byte(body)}})
			}, "shard-0:1"},
			{"API Gateway REST", func() (string, string, error) {
				return bodyID(t, g, &reports, key, events.APIGatewayProxyRequest{Body: body, RequestContext: events.APIGatewayProxyRequestContext{RequestID: "r-1"}})
			}, "r-1"},
			{"API Gateway REST, base64", func() (string, string, error) {
				return bodyID(t, g, &reports, key, events.APIGatewayProxyRequest{Body: b64, IsBase64Encoded: true})
			}, ""},
			{"API Gateway HTTP, base64", func() (string, string, error) {
				return bodyID(t, g, &reports, key, events.APIGatewayV2HTTPRequest{Body: b64, IsBase64Encoded: true, RequestContext: events.APIGatewayV2HTTPRequestContext{RequestID: "r-2"}})
			}, "r-2"},
			{"ALB", func() (string, string, error) {
				return bodyID(t, g, &reports, key, events.ALBTargetGroupRequest{Body: body})
			}, ""},
			{"function URL, base64", func() (string, string, error) {
				return bodyID(t, g, &reports, key, events.LambdaFunctionURLRequest{Body: b64, IsBase64Encoded: true, RequestContext: events.LambdaFunctionURLRequestContext{RequestID: "r-3"}})
			}, "r-3"},
			{"EventBridge", func() (string, string, error) {
				return bodyID(t, g, &reports, key, events.EventBridgeEvent{ID: "e-1", Detail: json.RawMessage(body)})
			}, "e-1"},
			{"SNS", func() (string, string, error) {
				return bodyID(t, g, &reports, key, events.SNSEventRecord{SNS: events.SNSEntity{MessageID: "n-1", Message: body}})
			}, "n-1"},
			{"[]byte", func() (string, string, error) { return bodyID(t, g, &reports, key, []byte(body)) }, ""},
			{"json.RawMessage", func() (string, string, error) { return bodyID(t, g, &reports, key, json.RawMessage(body)) }, ""},
			{"string", func() (string, string, error) { return bodyID(t, g, &reports, key, body) }, ""},
			{"a type with JSONBody", func() (string, string, error) { return bodyID(t, g, &reports, key, ownBody{[]byte(body)}) }, ""},
		} {
			got, inputID, err := tc.id()
			if err != nil || got != want || inputID != tc.inputID {
				t.Errorf("%s: record %q, input %q, %v; want %q (the SQS message's record), input %q", tc.name, got, inputID, err, want, tc.inputID)
			}
		}
	}
	// Base64 that is not: a KeyError, nothing claimed.
	_, err = idempotency.Wrap(g, idempotency.BodyField("order_id"), func(context.Context, events.APIGatewayProxyRequest) (int, error) {
		t.Error("ran")
		return 0, nil
	})(t.Context(), events.APIGatewayProxyRequest{Body: "%%%", IsBase64Encoded: true})
	var ke *idempotency.KeyError
	if !errors.As(err, &ke) || !strings.Contains(err.Error(), "base64") {
		t.Errorf("a body marked base64 that is not: %v, want a *KeyError saying so", err)
	}
}

// TestWrapRefusesAtConstruction: Wrap panics, naming the problem, for a
// selector or an option that cannot apply to its input or result type, a
// WrapJSON option, an option given twice or a zero one; WrapJSON likewise
// for an option of Wrap's input or another request type; Do returns the
// error for options it does not take, and claims nothing.
func TestWrapRefusesAtConstruction(t *testing.T) {
	g, err := idempotency.New(idempotency.Config{Store: memstore.New(), Namespace: "n", Logger: slog.New(slog.DiscardHandler)})
	if err != nil {
		t.Fatal(err)
	}
	sqs := func(context.Context, events.SQSMessage) (int, error) { return 1, nil }
	stream := func(context.Context, events.DynamoDBEventRecord) (int, error) { return 1, nil }
	typed := func(context.Context, order, events.SQSMessage) (int, error) { return 1, nil }
	kinesisKey := idempotency.SelectorFunc(func(events.KinesisEventRecord) (idempotency.Selection, error) { return idempotency.SelectionOf("k", 1) })
	for _, tc := range []struct {
		name, want string
		build      func()
	}{
		{"a body selector on an input without a body", "events.DynamoDBEventRecord does not carry", func() { idempotency.Wrap(g, idempotency.BodyField("k"), stream) }},
		{"FirstOf with a body selector on it", "does not carry", func() {
			idempotency.Wrap(g, idempotency.FirstOf(idempotency.SelectorFunc(func(events.DynamoDBEventRecord) (idempotency.Selection, error) {
				return idempotency.SelectionOf("k", 1)
			}), idempotency.BodyField("k")), stream)
		}},
		{"a SelectorFunc of another input", "takes events.KinesisEventRecord", func() { idempotency.Wrap(g, kinesisKey, sqs) }},
		{"a payload SelectorFunc of another input", "WithPayload", func() { idempotency.Wrap(g, idempotency.BodyField("k"), sqs, idempotency.WithPayload(kinesisKey)) }},
		{"a hook of another result", "OnReplay", func() {
			idempotency.Wrap(g, idempotency.BodyField("k"), sqs, idempotency.OnReplay(func(_ context.Context, s string, _ idempotency.Report) (string, error) { return s, nil }))
		}},
		{"an input id of another input", "WithInputID", func() {
			idempotency.Wrap(g, idempotency.BodyField("k"), sqs, idempotency.WithInputID(func(events.KinesisEventRecord) string { return "" }))
		}},
		{"WrapJSON's options", "WrapJSON's", func() { idempotency.Wrap(g, idempotency.BodyField("k"), sqs, idempotency.DisallowUnknownFields()) }},
		{"a payload Selection", "Do's", func() {
			idempotency.Wrap(g, idempotency.BodyField("k"), sqs, idempotency.WithPayload(idempotency.Raw([]byte(`1`))))
		}},
		{"an option twice", "twice", func() {
			idempotency.Wrap(g, idempotency.BodyField("k"), sqs, idempotency.Strict(), idempotency.Strict())
		}},
		{"a zero option", "zero Option", func() { idempotency.Wrap(g, idempotency.BodyField("k"), sqs, idempotency.Option{}) }},
		{"WrapJSON: a SelectorFunc of neither the message nor the request", "takes events.KinesisEventRecord", func() { idempotency.WrapJSON(g, kinesisKey, typed) }},
		{"WrapJSON: a check of another request type", "WithCheck", func() {
			idempotency.WrapJSON(g, idempotency.BodyField("id"), typed, idempotency.WithCheck(func(string) error { return nil }))
		}},
		{"WrapJSON: an input id", "WithInputID", func() {
			idempotency.WrapJSON(g, idempotency.BodyField("id"), typed, idempotency.WithInputID(func(events.SQSMessage) string { return "" }))
		}},
		{"WrapJSON: a payload Selection", "give WrapJSON a Selector", func() {
			idempotency.WrapJSON(g, idempotency.BodyField("id"), typed, idempotency.WithPayload(idempotency.Raw([]byte(`1`))))
		}},
		{"WrapJSON: a payload SelectorFunc of another input", "WithPayload", func() {
			idempotency.WrapJSON(g, idempotency.BodyField("id"), typed, idempotency.WithPayload(kinesisKey))
		}},
		{"WrapJSON: a hook of another result", "OnReplay", func() {
			idempotency.WrapJSON(g, idempotency.BodyField("id"), typed, idempotency.OnReplay(func(_ context.Context, s string, _ idempotency.Report) (string, error) { return s, nil }))
		}},
		{"WrapJSON: a nil check", "WithCheck: nil function", func() {
			idempotency.WrapJSON(g, idempotency.BodyField("id"), typed, idempotency.WithCheck[order](nil))
		}},
		{"a nil input id", "WithInputID: nil function", func() {
			idempotency.Wrap(g, idempotency.BodyField("k"), sqs, idempotency.WithInputID[events.SQSMessage](nil))
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			defer func() {
				p := recover()
				if s, _ := p.(string); !strings.HasPrefix(s, "idempotency: Wrap") || !strings.Contains(s, tc.want) {
					t.Errorf("panic %v, want one naming %q", p, tc.want)
				}
			}()
			tc.build()
		})
	}
	for _, opt := range []idempotency.Option{
		idempotency.WithPayload(idempotency.BodyField("k")),
		idempotency.WithInputID(func(events.SQSMessage) string { return "" }),
		idempotency.DisallowUnknownFields(),
	} {
		ran := false
		if _, err := idempotency.Do(t.Context(), g, idempotency.Raw([]byte(`"k"`)), func(context.Context) (int, error) { ran = true; return 1, nil }, opt); err == nil || ran {
			t.Errorf("Do with an option it does not take: ran %v, %v; want an error and no run", ran, err)
		}
	}
}

// TestSelect: Select applies a selector to an input as Wrap does, and
// fails as Wrap would.
func TestSelect(t *testing.T) {
	k, err := idempotency.Select(idempotency.BodyField("id"), events.SQSMessage{MessageId: "m-1", Body: `{"id" : "x"}`})
	if err != nil || k.Selector != `body ["id"]` || string(k.Value) != `"x"` {
		t.Errorf("Select of a field: %+v, %v", k, err)
	}
	var ke *idempotency.KeyError
	if _, err := idempotency.Select(idempotency.BodyField("id"), events.SQSMessage{MessageId: "m-2", Body: `{}`}); !errors.As(err, &ke) || !errors.Is(err, idempotency.ErrNoKey) || ke.InputID != "m-2" {
		t.Errorf("Select of a missing field: %v, want a *KeyError wrapping ErrNoKey naming m-2", err)
	}
	if _, err := idempotency.Select(idempotency.BodyField("id"), events.DynamoDBEventRecord{}); err == nil || errors.As(err, &ke) {
		t.Errorf("Select of a body field of an input without a body: %v, want the construction error", err)
	}
}

// TestStrictPerWrap: Strict on one wrapper makes its calls strict, beside
// a default wrapper of the same guard: a lapsed claim is quarantined by
// the strict one, and the default one then finds it quarantined too.
func TestStrictPerWrap(t *testing.T) {
	store := memstore.New()
	g, err := idempotency.New(idempotency.Config{Store: store, Namespace: "pay", Logger: slog.New(slog.DiscardHandler)})
	if err != nil {
		t.Fatal(err)
	}
	runs := 0
	op := func(context.Context, events.SQSMessage) (string, error) { runs++; return "paid", nil }
	strict := idempotency.Wrap(g, idempotency.BodyField("k"), op, idempotency.Strict())
	plain := idempotency.Wrap(g, idempotency.BodyField("k"), op)
	m := events.SQSMessage{MessageId: "m-1", Body: `{"k":"pay-1"}`}
	k, err := idempotency.Select(idempotency.BodyField("k"), m)
	if err != nil {
		t.Fatal(err)
	}
	id, err := g.ID(k)
	if err != nil {
		t.Fatal(err)
	}
	now := time.Now()
	if _, _, err := store.Acquire(t.Context(), driver.Record{ID: id, Status: driver.StatusInProgress, ExpiresAt: now.Add(time.Hour),
		LeaseUntil: now.Add(-time.Minute), Owner: "dead-worker"}, now.Add(-2*time.Minute), driver.Takeover); err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct {
		name string
		h    func(context.Context, events.SQSMessage) (string, error)
	}{{"strict", strict}, {"default, after", plain}} {
		if _, err := c.h(t.Context(), m); !errors.Is(err, idempotency.ErrQuarantined) {
			t.Errorf("%s call: %v, want ErrQuarantined", c.name, err)
		}
	}
	if rec, _ := store.Get(id); rec.Quarantined.IsZero() || runs != 0 {
		t.Errorf("record %+v after %d runs; want it quarantined, nothing run", rec, runs)
	}
}
