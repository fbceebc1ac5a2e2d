package ptinterop_test

import (
	"context"
	"crypto/rand"
	"encoding/json"
	"errors"
	"log/slog"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/aws/aws-lambda-go/events"
	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	ptinterop "github.com/sqsonce/sqsonce/internal/testenv/powertools"
	"github.com/sqsonce/sqsonce/middleware/idempotency"
	"github.com/sqsonce/sqsonce/middleware/idempotency/jmespath"
)

// The function both runtimes run as. Neither side sets a key prefix:
// Powertools TypeScript then prefixes ids with AWS_LAMBDA_FUNCTION_NAME,
// and sqsonce's Namespace is idempotency.FormatPowertoolsTypeScript.Namespace of it.
const functionName = "orders-api"

// eventSide is the Go handler of one event type E on the shared table,
// with its calls and outcomes.
type eventSide[E any] struct {
	guard   *idempotency.Guard
	handler func(context.Context, E) (json.RawMessage, error)
	key     func(E) (idempotency.Selection, error)
	mu      sync.Mutex
	ran     int
	events  []idempotency.Report
}

func newEventSide[E any](t *testing.T, tb table, keyPath, payloadPath, replayHeader string) *eventSide[E] {
	t.Helper()
	s := &eventSide[E]{}
	g, err := idempotency.New(idempotency.Config{
		Store:     tb.store,
		Namespace: idempotency.FormatPowertoolsTypeScript.Namespace("", functionName, ""),
		Format:    idempotency.FormatPowertoolsTypeScript,
		Logger:    slog.New(slog.DiscardHandler),
		OnOutcome: func(_ context.Context, ev idempotency.Report) {
			s.mu.Lock()
			defer s.mu.Unlock()
			s.events = append(s.events, ev)
		},
	})
	if err != nil {
		t.Fatal(err)
	}
	key := jmespath.MustCompile(keyPath).Selector()
	s.guard, s.key = g, func(e E) (idempotency.Selection, error) { return idempotency.Select(key, e) }
	var opts []idempotency.Option
	if payloadPath != "" {
		opts = append(opts, idempotency.WithPayload(jmespath.MustCompile(payloadPath).Selector()))
	}
	if replayHeader != "" { // the typed hook, as Powertools' responseHook in handler.mjs
		opts = append(opts, idempotency.OnReplay(func(_ context.Context, r json.RawMessage, _ idempotency.Report) (json.RawMessage, error) {
			var resp map[string]any
			if err := json.Unmarshal(r, &resp); err != nil {
				return nil, err
			}
			headers, _ := resp["headers"].(map[string]any)
			if headers == nil {
				headers = map[string]any{}
			}
			headers[replayHeader] = "true"
			resp["headers"] = headers
			return json.Marshal(resp)
		}))
	}
	s.handler = idempotency.Wrap(g, key, func(context.Context, E) (json.RawMessage, error) {
		s.mu.Lock()
		defer s.mu.Unlock()
		s.ran++
		return json.RawMessage(`{"statusCode":201,"headers":{},"body":"{\"by\":\"sqsonce\"}"}`), nil
	}, opts...)
	return s
}

func (s *eventSide[E]) runs() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.ran
}

// runPowertools runs events through handler.mjs with the same expressions.
func runPowertools(t *testing.T, tb table, keyPath, payloadPath string, mod func(*ptinterop.HandlerRequest), evs ...any) ptinterop.HandlerReport {
	t.Helper()
	req := ptinterop.HandlerRequest{Endpoint: tb.endpoint, Table: tb.name, FunctionName: functionName,
		EventKeyJMESPath: keyPath, PayloadValidationJMESPath: payloadPath, RemainingMs: 60_000}
	for _, ev := range evs {
		b, err := json.Marshal(ev)
		if err != nil {
			t.Fatal(err)
		}
		req.Events = append(req.Events, b)
	}
	if mod != nil {
		mod(&req)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	rep, err := ptinterop.RunHandler(ctx, driverDir, req)
	if err != nil {
		t.Fatal(err)
	}
	return rep
}

// apiEvent is an API Gateway HTTP API (payload 2.0) request as Lambda
// delivers it, creating an order.
func apiEvent(orderID string, amount float64) events.APIGatewayV2HTTPRequest {
	body, _ := json.Marshal(map[string]any{"order_id": orderID, "customer": "c-7", "amount": amount, "note": "Zoë"})
	return events.APIGatewayV2HTTPRequest{
		Version: "2.0", RouteKey: "POST /orders", RawPath: "/prod/orders", RawQueryString: "",
		Headers: map[string]string{"content-type": "application/json", "idempotency-key": orderID},
		RequestContext: events.APIGatewayV2HTTPRequestContext{
			AccountID: "123456789012", APIID: "api1", DomainName: "api1.execute-api.us-east-1.amazonaws.com", Stage: "prod",
			RequestID: "req-" + rand.Text()[:8], RouteKey: "POST /orders", Time: "01/Dec/2026:10:00:00 +0000", TimeEpoch: 1796119200000,
			HTTP: events.APIGatewayV2HTTPRequestContextHTTPDescription{Method: "POST", Path: "/prod/orders", Protocol: "HTTP/1.1", SourceIP: "203.0.113.9", UserAgent: "curl/8"},
		},
		Body: string(body),
	}
}

// eventBridgeEvent is an EventBridge event as Lambda delivers it.
func eventBridgeEvent(orderID string, amount float64) events.EventBridgeEvent {
	detail, _ := json.Marshal(map[string]any{"order_id": orderID, "amount": amount, "items": []any{map[string]any{"sku": "a-1", "qty": 2}}})
	return events.EventBridgeEvent{
		Version: "0", ID: "ev-" + rand.Text()[:8], DetailType: "OrderPlaced", Source: "shop.orders", AccountID: "123456789012",
		Time: time.Date(2026, 12, 1, 10, 0, 0, 0, time.UTC), Region: "us-east-1", Resources: []string{}, Detail: detail,
	}
}

// responseBy is who made a handler's response: its body's "by".
func responseBy(t *testing.T, v json.RawMessage) (by string, headers map[string]any) {
	t.Helper()
	var r struct {
		Headers map[string]any `json:"headers"`
		Body    string         `json:"body"`
	}
	if err := json.Unmarshal(v, &r); err != nil {
		t.Fatalf("response %s: %v", v, err)
	}
	var b struct{ By string }
	_ = json.Unmarshal([]byte(r.Body), &b)
	return b.By, r.Headers
}

// TestEventsShareRecords: a Go handler of API Gateway (HTTP API) or
// EventBridge events made idempotent with WrapEvent and a handler made
// idempotent with Powertools TypeScript's makeIdempotent, with the same
// expressions and no key prefix, share records on one table in both
// directions: the key one wrote is replayed by the other without running,
// the payload one validated is checked by the other, and the record is at
// the id sqsonce computes.
func TestEventsShareRecords(t *testing.T) {
	tb := newTable(t)
	type eventCase struct {
		name, key, payload string
		event              func(key string, amount float64) any
		side               func(t *testing.T) (handle func(any) (json.RawMessage, error), runs func() int, key func(any) (idempotency.Selection, error), g *idempotency.Guard)
	}
	cases := []eventCase{
		{
			name: "API Gateway v2", key: `powertools_json(body).order_id`, payload: `powertools_json(body).[customer, amount]`,
			event: func(k string, a float64) any { return apiEvent(k, a) },
			side: func(t *testing.T) (func(any) (json.RawMessage, error), func() int, func(any) (idempotency.Selection, error), *idempotency.Guard) {
				s := newEventSide[events.APIGatewayV2HTTPRequest](t, tb, `powertools_json(body).order_id`, `powertools_json(body).[customer, amount]`, "")
				return func(e any) (json.RawMessage, error) {
						return s.handler(t.Context(), e.(events.APIGatewayV2HTTPRequest))
					},
					s.runs, func(e any) (idempotency.Selection, error) { return s.key(e.(events.APIGatewayV2HTTPRequest)) }, s.guard
			},
		},
		{
			name: "API Gateway v2, header key", key: `headers."idempotency-key"`, payload: `powertools_json(body).amount`,
			event: func(k string, a float64) any { return apiEvent(k, a) },
			side: func(t *testing.T) (func(any) (json.RawMessage, error), func() int, func(any) (idempotency.Selection, error), *idempotency.Guard) {
				s := newEventSide[events.APIGatewayV2HTTPRequest](t, tb, `headers."idempotency-key"`, `powertools_json(body).amount`, "")
				return func(e any) (json.RawMessage, error) {
						return s.handler(t.Context(), e.(events.APIGatewayV2HTTPRequest))
					},
					s.runs, func(e any) (idempotency.Selection, error) { return s.key(e.(events.APIGatewayV2HTTPRequest)) }, s.guard
			},
		},
		{
			name: "EventBridge", key: `detail.order_id`, payload: `detail`,
			event: func(k string, a float64) any { return eventBridgeEvent(k, a) },
			side: func(t *testing.T) (func(any) (json.RawMessage, error), func() int, func(any) (idempotency.Selection, error), *idempotency.Guard) {
				s := newEventSide[events.EventBridgeEvent](t, tb, `detail.order_id`, `detail`, "")
				return func(e any) (json.RawMessage, error) { return s.handler(t.Context(), e.(events.EventBridgeEvent)) },
					s.runs, func(e any) (idempotency.Selection, error) { return s.key(e.(events.EventBridgeEvent)) }, s.guard
			},
		},
	}
	for _, tc := range cases {
		t.Run(tc.name+": powertools writes, sqsonce replays and validates", func(t *testing.T) {
			k := "o-" + rand.Text()[:10]
			first := tc.event(k, 10.5)
			rep := runPowertools(t, tb, tc.key, tc.payload, nil, first)
			if !slices.Equal(rep.Ran, []int{0}) || rep.Results[0].Status != "success" {
				t.Fatalf("powertools: %+v", rep)
			}
			handle, runs, key, g := tc.side(t)
			// The record is at the id sqsonce computes.
			sel, err := key(first)
			if err != nil {
				t.Fatal(err)
			}
			id, err := g.ID(sel)
			if err != nil {
				t.Fatal(err)
			}
			out, err := tb.db.GetItem(context.Background(), &dynamodb.GetItemInput{TableName: aws.String(tb.name),
				Key: map[string]types.AttributeValue{"id": &types.AttributeValueMemberS{Value: id}}, ConsistentRead: aws.Bool(true)})
			if err != nil {
				t.Fatal(err)
			}
			if st, _ := out.Item["status"].(*types.AttributeValueMemberS); st == nil || st.Value != "COMPLETED" {
				t.Fatalf("no completed Powertools record at %s", id)
			}
			// A retry of the same request (a new request id): replayed.
			v, err := handle(tc.event(k, 10.5))
			if by, _ := responseBy(t, v); err != nil || by != "powertools" || runs() != 0 {
				t.Errorf("sqsonce: %s, %v, ran %d; want Powertools' response, not run", v, err, runs())
			}
			// The key reused with another payload.
			if _, err := handle(tc.event(k, 99)); !errors.Is(err, idempotency.ErrPayloadMismatch) || runs() != 0 {
				t.Errorf("another payload: %v, ran %d; want ErrPayloadMismatch, not run", err, runs())
			}
		})
		t.Run(tc.name+": sqsonce writes, powertools replays and validates", func(t *testing.T) {
			k := "o-" + rand.Text()[:10]
			handle, runs, _, _ := tc.side(t)
			if _, err := handle(tc.event(k, 10.5)); err != nil || runs() != 1 {
				t.Fatalf("sqsonce: %v, ran %d", err, runs())
			}
			rep := runPowertools(t, tb, tc.key, tc.payload, nil, tc.event(k, 10.5), tc.event(k, 99))
			if len(rep.Ran) != 0 {
				t.Errorf("powertools ran %v", rep.Ran)
			}
			if by, _ := responseBy(t, rep.Results[0].Value); rep.Results[0].Status != "success" || by != "sqsonce" {
				t.Errorf("powertools replayed %+v, want sqsonce's response", rep.Results[0])
			}
			if r := rep.Results[1]; r.Status != "fail" || r.Error != "IdempotencyValidationError" {
				t.Errorf("another payload: %+v, want IdempotencyValidationError", r)
			}
		})
	}
}

// TestEventInProgress: a Powertools handler that holds a key (it died mid
// call) makes sqsonce's handler fail with an *InProgressError, which an
// API maps to 409.
func TestEventInProgress(t *testing.T) {
	tb := newTable(t)
	k := "o-" + rand.Text()[:10]
	const key = `powertools_json(body).order_id`
	rep := runPowertools(t, tb, key, "", func(r *ptinterop.HandlerRequest) { r.Crash = true }, apiEvent(k, 1))
	if rep.Crashed == nil {
		t.Fatalf("the Powertools handler did not run: %+v", rep)
	}
	s := newEventSide[events.APIGatewayV2HTTPRequest](t, tb, key, "", "")
	var ip *idempotency.InProgressError
	if _, err := s.handler(t.Context(), apiEvent(k, 1)); !errors.As(err, &ip) || s.runs() != 0 {
		t.Errorf("sqsonce: %v, ran %d; want an *InProgressError, not run", err, s.runs())
	}
}

// TestReplayHookMatchesPowertools: Powertools' responseHook and sqsonce's
// OnReplay, each setting a header on replayed responses, mark the same
// responses: a replay of a record the other runtime wrote, never a
// response of a run.
func TestReplayHookMatchesPowertools(t *testing.T) {
	tb := newTable(t)
	const key, header = `powertools_json(body).order_id`, "x-idempotent-replay"
	withHook := func(r *ptinterop.HandlerRequest) { r.ReplayHeader = header }

	k := "o-" + rand.Text()[:10]
	rep := runPowertools(t, tb, key, "", withHook, apiEvent(k, 1), apiEvent(k, 1))
	_, h0 := responseBy(t, rep.Results[0].Value)
	_, h1 := responseBy(t, rep.Results[1].Value)
	if h0[header] != nil || h1[header] != "true" {
		t.Fatalf("powertools: run %v, replay %v; want the header on the replay only", h0, h1)
	}
	s := newEventSide[events.APIGatewayV2HTTPRequest](t, tb, key, "", header)
	v, err := s.handler(t.Context(), apiEvent(k, 1))
	if by, h := responseBy(t, v); err != nil || by != "powertools" || h[header] != "true" {
		t.Errorf("sqsonce replaying Powertools' record: %s, %v; want it marked", v, err)
	}

	k2 := "o-" + rand.Text()[:10]
	v, err = s.handler(t.Context(), apiEvent(k2, 1))
	if _, h := responseBy(t, v); err != nil || h[header] != nil {
		t.Errorf("sqsonce's own run: %s, %v; want it unmarked", v, err)
	}
	rep = runPowertools(t, tb, key, "", withHook, apiEvent(k2, 1))
	if by, h := responseBy(t, rep.Results[0].Value); len(rep.Ran) != 0 || by != "sqsonce" || h[header] != "true" {
		t.Errorf("powertools replaying sqsonce's record: %+v; want it marked", rep)
	}
}
