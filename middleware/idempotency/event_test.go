package idempotency_test

import (
	"context"
	"encoding/json"
	"errors"
	"log/slog"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/aws/aws-lambda-go/events"

	"github.com/sqsonce/sqsonce/middleware/idempotency"
	"github.com/sqsonce/sqsonce/middleware/idempotency/driver"
	"github.com/sqsonce/sqsonce/middleware/idempotency/memstore"
)

// apiOrder is the body of the API requests these tests send.
type apiOrder struct {
	OrderID string `json:"order_id"`
	Amount  int    `json:"amount"`
}

// apiRequest is an API Gateway HTTP API (v2) request carrying body.
func apiRequest(requestID string, body apiOrder) events.APIGatewayV2HTTPRequest {
	b, _ := json.Marshal(body)
	return events.APIGatewayV2HTTPRequest{
		Version: "2.0", RouteKey: "POST /orders", RawPath: "/orders",
		Headers:        map[string]string{"content-type": "application/json"},
		RequestContext: events.APIGatewayV2HTTPRequestContext{RequestID: requestID, HTTP: events.APIGatewayV2HTTPRequestContextHTTPDescription{Method: "POST", Path: "/orders"}},
		Body:           string(b),
	}
}

// apiOrderKey and apiOrderOpts take the key and the payload from an API
// request's body with functions of one's own, and name the request by its
// request id.
var apiOrderKey = idempotency.SelectorFunc(func(r events.APIGatewayV2HTTPRequest) (idempotency.Selection, error) {
	var o apiOrder
	if err := json.Unmarshal([]byte(r.Body), &o); err != nil {
		return idempotency.Selection{}, errors.New("body is not an order")
	}
	if o.OrderID == "" {
		return idempotency.Selection{}, idempotency.ErrNoKey
	}
	return idempotency.SelectionOf("order id", o.OrderID)
})

var apiOrderOpts = []idempotency.Option{
	idempotency.WithPayload(idempotency.SelectorFunc(func(r events.APIGatewayV2HTTPRequest) (idempotency.Selection, error) {
		var o apiOrder
		if err := json.Unmarshal([]byte(r.Body), &o); err != nil {
			return idempotency.Selection{}, errors.New("body is not an order")
		}
		return idempotency.SelectionOf("order", o)
	})),
	idempotency.WithInputID(func(r events.APIGatewayV2HTTPRequest) string { return r.RequestContext.RequestID }),
}

// TestWrapAPIRequest: a handler of API Gateway events, made idempotent per apiOrder:
// a retried request replays the first response, another apiOrder runs, a
// reused key with another body is a mismatch, a request without a key
// fails before anything is claimed. Outcomes name the request.
func TestWrapAPIRequest(t *testing.T) {
	var evs []idempotency.Report
	var mu sync.Mutex
	g, err := idempotency.New(idempotency.Config{Store: memstore.New(), Namespace: "api",
		Logger: slog.New(slog.DiscardHandler),
		OnOutcome: func(_ context.Context, ev idempotency.Report) {
			mu.Lock()
			defer mu.Unlock()
			evs = append(evs, ev)
		}})
	if err != nil {
		t.Fatal(err)
	}
	var runs atomic.Int32
	h := idempotency.Wrap(g, apiOrderKey, func(_ context.Context, r events.APIGatewayV2HTTPRequest) (events.APIGatewayV2HTTPResponse, error) {
		n := runs.Add(1)
		return events.APIGatewayV2HTTPResponse{StatusCode: 201, Body: r.RequestContext.RequestID + "/" + string(rune('0'+n))}, nil
	}, apiOrderOpts...)
	for _, tc := range []struct {
		req     events.APIGatewayV2HTTPRequest
		body    string
		outcome idempotency.Outcome
		wantErr error
	}{
		{apiRequest("r1", apiOrder{"o-1", 5}), "r1/1", idempotency.OutcomeClaimed, nil},
		{apiRequest("r2", apiOrder{"o-1", 5}), "r1/1", idempotency.OutcomeReplayed, nil},
		{apiRequest("r3", apiOrder{"o-2", 5}), "r3/2", idempotency.OutcomeClaimed, nil},
		{apiRequest("r4", apiOrder{"o-1", 6}), "", idempotency.OutcomeMismatch, idempotency.ErrPayloadMismatch},
		{apiRequest("r5", apiOrder{"", 6}), "", idempotency.OutcomeFailed, idempotency.ErrNoKey},
	} {
		resp, err := h(t.Context(), tc.req)
		if !errors.Is(err, tc.wantErr) || (tc.wantErr == nil) != (err == nil) {
			t.Errorf("%s: error %v, want %v", tc.req.RequestContext.RequestID, err, tc.wantErr)
		}
		if resp.Body != tc.body {
			t.Errorf("%s: body %q, want %q", tc.req.RequestContext.RequestID, resp.Body, tc.body)
		}
		mu.Lock()
		last := evs[len(evs)-1]
		mu.Unlock()
		if last.Outcome != tc.outcome || last.InputID != tc.req.RequestContext.RequestID {
			t.Errorf("%s: event %+v, want outcome %s for that request", tc.req.RequestContext.RequestID, last, tc.outcome)
		}
	}
	if runs.Load() != 2 {
		t.Errorf("the handler ran %d times, want 2 (orders o-1 and o-2)", runs.Load())
	}
	var ke *idempotency.KeyError
	if _, err := h(t.Context(), apiRequest("r6", apiOrder{"", 0})); !errors.As(err, &ke) || ke.InputID != "r6" ||
		ke.Source != "events.APIGatewayV2HTTPRequest" {
		t.Errorf("no key: %v, want a *KeyError naming the request and the event type", err)
	}
}

// TestWrapAPIRequestInProgress: a request whose key another worker holds fails
// with an *InProgressError the handler maps to 409, while the first runs.
// Two guards on one store are two Lambda environments.
func TestWrapAPIRequestInProgress(t *testing.T) {
	store := memstore.New()
	handler := func(started, release chan struct{}) func(context.Context, events.APIGatewayV2HTTPRequest) (string, error) {
		g, err := idempotency.New(idempotency.Config{Store: store, Namespace: "api", Logger: slog.New(slog.DiscardHandler)})
		if err != nil {
			t.Fatal(err)
		}
		return idempotency.Wrap(g, apiOrderKey, func(context.Context, events.APIGatewayV2HTTPRequest) (string, error) {
			if started != nil {
				close(started)
				<-release
			}
			return "created", nil
		}, apiOrderOpts...)
	}
	started, release := make(chan struct{}), make(chan struct{})
	first, other := handler(started, release), handler(nil, nil)
	done := make(chan error, 1)
	go func() { _, err := first(context.Background(), apiRequest("first", apiOrder{"o-9", 1})); done <- err }()
	<-started
	_, err := other(t.Context(), apiRequest("retry", apiOrder{"o-9", 1}))
	var ip *idempotency.InProgressError
	if !errors.As(err, &ip) || ip.LeaseUntil.IsZero() {
		t.Errorf("retry while the first runs: %v, want an *InProgressError with the lease end", err)
	}
	close(release)
	if err := <-done; err != nil {
		t.Fatal(err)
	}
	if got, err := other(t.Context(), apiRequest("retry", apiOrder{"o-9", 1})); err != nil || got != "created" {
		t.Errorf("retry after: %q, %v", got, err)
	}
}

// TestWrapStreamRecord: the wrapper takes a stream's records too, with
// the key from the record's data (Kinesis data is the producer's bytes).
func TestWrapStreamRecord(t *testing.T) {
	g, err := idempotency.New(idempotency.Config{Store: memstore.New(), Namespace: "stream", Logger: slog.New(slog.DiscardHandler)})
	if err != nil {
		t.Fatal(err)
	}
	var runs atomic.Int32
	h := idempotency.Wrap(g, idempotency.SelectorFunc(func(r events.KinesisEventRecord) (idempotency.Selection, error) {
		var d struct {
			Key string `json:"idempotency_key"`
		}
		if err := json.Unmarshal(r.Kinesis.Data, &d); err != nil || d.Key == "" {
			return idempotency.Selection{}, idempotency.ErrNoKey
		}
		return idempotency.SelectionOf("data idempotency_key", d.Key)
	}), func(_ context.Context, r events.KinesisEventRecord) (int, error) { return int(runs.Add(1)), nil },
		idempotency.WithInputID(func(r events.KinesisEventRecord) string { return r.Kinesis.SequenceNumber }))
	rec := func(seq, data string) events.KinesisEventRecord {
		return events.KinesisEventRecord{EventSource: "aws:kinesis", Kinesis: events.KinesisRecord{SequenceNumber: seq, PartitionKey: "p", Data: []byte(data)}}
	}
	for _, r := range []events.KinesisEventRecord{rec("1", `{"idempotency_key":"a"}`), rec("2", `{"idempotency_key":"a"}`), rec("3", `{"idempotency_key":"b"}`)} {
		if _, err := h(t.Context(), r); err != nil {
			t.Fatal(err)
		}
	}
	var ke *idempotency.KeyError
	if _, err := h(t.Context(), rec("4", `{}`)); !errors.As(err, &ke) || ke.InputID != "4" {
		t.Errorf("a record without a key: %v, want a *KeyError naming its sequence number", err)
	}
	if runs.Load() != 2 {
		t.Errorf("%d runs, want 2", runs.Load())
	}
}

// TestWrapAPIRequestDeadline: the operation of an event handler gets the
// invocation's deadline less the reserve for storing its result, so a
// handler whose operation takes all the time it is given still returns
// before the deadline, with its result stored.
func TestWrapAPIRequestDeadline(t *testing.T) {
	store := memstore.New()
	g, err := idempotency.New(idempotency.Config{Store: store, Namespace: "api", Logger: slog.New(slog.DiscardHandler)})
	if err != nil {
		t.Fatal(err)
	}
	h := idempotency.Wrap(g, apiOrderKey, func(ctx context.Context, _ events.APIGatewayV2HTTPRequest) (string, error) {
		<-ctx.Done() // a slow operation
		return "late but whole", nil
	}, apiOrderOpts...)
	ctx, cancel := context.WithTimeout(context.Background(), 500*time.Millisecond)
	defer cancel()
	deadline, _ := ctx.Deadline()
	got, err := h(ctx, apiRequest("r", apiOrder{"o-slow", 1}))
	if err != nil || got != "late but whole" {
		t.Fatalf("%q, %v", got, err)
	}
	if returned := time.Now(); !returned.Before(deadline) {
		t.Errorf("returned %v after the deadline", returned.Sub(deadline))
	}
	k, _ := idempotency.SelectionOf("order id", "o-slow")
	if rec, _ := store.Get(mustID(t, g, k)); rec.Status != driver.StatusCompleted {
		t.Errorf("record %s, want COMPLETED", rec.Status)
	}
}

// TestWrapAPIRequestNoContentInErrors: the errors and log lines of Wrap
// name the event type, the request and the kind of failure, never what
// the event holds, whatever the key function's error (property 3).
func TestWrapAPIRequestNoContentInErrors(t *testing.T) {
	const secret = "SENTINEL-4111-1111-1111-1111"
	var logs logCapture
	g, err := idempotency.New(idempotency.Config{Store: memstore.New(), Namespace: "api",
		Logger: slog.New(slog.NewJSONHandler(&logs, &slog.HandlerOptions{Level: slog.LevelDebug}))})
	if err != nil {
		t.Fatal(err)
	}
	h := idempotency.Wrap(g, apiOrderKey, func(context.Context, events.APIGatewayV2HTTPRequest) (string, error) { return "ok", nil }, apiOrderOpts...)
	for name, req := range map[string]events.APIGatewayV2HTTPRequest{
		"body not JSON": {Body: "not json " + secret},
		"no order id":   {Body: `{"amount":1,"note":"` + secret + `"}`},
		"mismatch":      apiRequest("m", apiOrder{"o-1", 2}),
	} {
		if name == "mismatch" {
			if _, err := h(t.Context(), apiRequest("first", apiOrder{"o-1", 1})); err != nil {
				t.Fatal(err)
			}
			req.Body = strings.Replace(req.Body, `"amount":2`, `"amount":2,"x":"`+secret+`"`, 1)
		}
		_, err := h(t.Context(), req)
		if err == nil {
			t.Errorf("%s: no error", name)
		} else if strings.Contains(err.Error(), secret) {
			t.Errorf("%s: the error quotes the event: %v", name, err)
		}
	}
	for _, l := range logs.lines(t) {
		if b, _ := json.Marshal(l); strings.Contains(string(b), secret) {
			t.Errorf("a log line quotes the event: %s", b)
		}
	}
}

// TestPowertoolsPrefix pins the prefixes Powertools writes before the "#",
// as its sources build them (TypeScript 2.35 BasePersistenceLayer.configure:
// keyPrefix.trim() or AWS_LAMBDA_FUNCTION_NAME; Python
// BasePersistenceLayer.configure: key_prefix or
// f"{AWS_LAMBDA_FUNCTION_NAME or 'test-func'}.{module}.{qualname}"). The
// TypeScript default is checked against the real runtime in test/ptinterop.
func TestPowertoolsPrefix(t *testing.T) {
	for _, tc := range []struct{ got, want string }{
		{idempotency.FormatPowertoolsTypeScript.Namespace("", "orders-api", ""), "orders-api"},
		{idempotency.FormatPowertoolsTypeScript.Namespace("orders", "orders-api", ""), "orders"},
		{idempotency.FormatPowertoolsTypeScript.Namespace(" \u00a0orders\ufeff\n", "orders-api", ""), "orders"},
		{idempotency.FormatPowertoolsTypeScript.Namespace("  ", "orders-api", ""), "orders-api"},
		{idempotency.FormatPowertoolsTypeScript.Namespace("\u0085x", "f", ""), "\u0085x"}, // NEL is not white space in JavaScript
		{idempotency.FormatPowertoolsPython.Namespace("", "orders-api", "app.lambda_handler"), "orders-api.app.lambda_handler"},
		{idempotency.FormatPowertoolsPython.Namespace("", "", "app.lambda_handler"), "test-func.app.lambda_handler"},
		{idempotency.FormatPowertoolsPython.Namespace(" orders ", "orders-api", "app.lambda_handler"), " orders "},
	} {
		if tc.got != tc.want {
			t.Errorf("prefix %q, want %q", tc.got, tc.want)
		}
	}
}
