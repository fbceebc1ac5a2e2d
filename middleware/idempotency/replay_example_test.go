package idempotency_test

import (
	"context"
	"fmt"
	"log/slog"
	"maps"

	"github.com/aws/aws-lambda-go/events"

	"github.com/sqsonce/sqsonce/middleware/idempotency"
	"github.com/sqsonce/sqsonce/middleware/idempotency/memstore"
)

// An API handler that marks a replayed response with a header, so that a
// client can tell a retry's answer from the first.
func ExampleOnReplay() {
	g, err := idempotency.New(idempotency.Config{Store: memstore.New(), Namespace: "orders-api", Logger: slog.New(slog.DiscardHandler)})
	if err != nil {
		panic(err)
	}
	type request = events.APIGatewayV2HTTPRequest
	type response = events.APIGatewayV2HTTPResponse
	createOrder := func(context.Context, request) (response, error) {
		return response{StatusCode: 201, Body: `{"order":1}`}, nil
	}
	h := idempotency.Wrap(g, idempotency.BodyField("order_id"), createOrder,
		idempotency.OnReplay(func(_ context.Context, r response, _ idempotency.Report) (response, error) {
			r.Headers = maps.Clone(r.Headers)
			if r.Headers == nil {
				r.Headers = map[string]string{}
			}
			r.Headers["x-idempotent-replay"] = "true"
			return r, nil
		}))
	for range 2 { // a request and a client's retry
		r, err := h(context.Background(), request{Body: `{"order_id":"o-1"}`})
		fmt.Println(r.StatusCode, r.Body, r.Headers, err)
	}
	// Output:
	// 201 {"order":1} map[] <nil>
	// 201 {"order":1} map[x-idempotent-replay:true] <nil>
}
