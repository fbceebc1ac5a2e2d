package idempotency_test

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net/http"

	"github.com/aws/aws-lambda-go/events"

	"github.com/sqsonce/sqsonce/middleware/idempotency"
	"github.com/sqsonce/sqsonce/middleware/idempotency/memstore"
)

// An API Gateway (HTTP API) handler made idempotent per order: the body
// selectors read the request's JSON body as they read an SQS message's,
// and the request id names each request in the guard's log. The handler
// answers a request whose order another invocation is creating with 409, a
// key reused with another body with 422, and a request without a key with
// 400. Inside Lambda: lambda.Start(handler).
func ExampleWrap_apiGateway() {
	store := memstore.New() // dynamostore.New(db, "idempotency") in Lambda
	newHandler := func(create func(context.Context, events.APIGatewayV2HTTPRequest) (events.APIGatewayV2HTTPResponse, error)) func(context.Context, events.APIGatewayV2HTTPRequest) (events.APIGatewayV2HTTPResponse, error) {
		g, err := idempotency.New(idempotency.Config{Store: store, Namespace: "orders-api", Logger: slog.New(slog.DiscardHandler)})
		if err != nil {
			panic(err)
		}
		type request = events.APIGatewayV2HTTPRequest
		createOnce := idempotency.Wrap(g, idempotency.BodyField("order_id"), create,
			idempotency.WithPayload(idempotency.BodySubset("customer", "amount")))
		return func(ctx context.Context, r request) (events.APIGatewayV2HTTPResponse, error) {
			resp, err := createOnce(ctx, r)
			var ke *idempotency.KeyError
			switch {
			case errors.Is(err, idempotency.ErrInProgress):
				return events.APIGatewayV2HTTPResponse{StatusCode: http.StatusConflict}, nil
			case errors.Is(err, idempotency.ErrPayloadMismatch):
				return events.APIGatewayV2HTTPResponse{StatusCode: http.StatusUnprocessableEntity}, nil
			case errors.As(err, &ke):
				return events.APIGatewayV2HTTPResponse{StatusCode: http.StatusBadRequest}, nil
			}
			return resp, err // other errors: the invocation fails, API Gateway answers 500
		}
	}

	created := 0
	handler := newHandler(func(_ context.Context, r events.APIGatewayV2HTTPRequest) (events.APIGatewayV2HTTPResponse, error) {
		created++
		return events.APIGatewayV2HTTPResponse{StatusCode: http.StatusCreated, Body: fmt.Sprintf(`{"order":%d}`, created)}, nil
	})
	post := func(h func(context.Context, events.APIGatewayV2HTTPRequest) (events.APIGatewayV2HTTPResponse, error), id, body string) {
		resp, err := h(context.Background(), events.APIGatewayV2HTTPRequest{
			RouteKey: "POST /orders", Body: body,
			RequestContext: events.APIGatewayV2HTTPRequestContext{RequestID: id},
		})
		fmt.Println(id, resp.StatusCode, resp.Body, err)
	}
	post(handler, "r1", `{"order_id":"o-1","customer":"c-7","amount":30}`)
	post(handler, "r2", `{"order_id":"o-1","customer":"c-7","amount":30}`) // a client's retry
	post(handler, "r3", `{"order_id":"o-1","customer":"c-7","amount":31}`) // the key reused for another order
	post(handler, "r4", `{"customer":"c-7","amount":30}`)                  // no key

	// Another invocation is creating order o-2 while a retry arrives.
	started, finish, done := make(chan struct{}), make(chan struct{}), make(chan struct{})
	slow := newHandler(func(context.Context, events.APIGatewayV2HTTPRequest) (events.APIGatewayV2HTTPResponse, error) {
		close(started)
		<-finish
		return events.APIGatewayV2HTTPResponse{StatusCode: http.StatusCreated, Body: `{"order":2}`}, nil
	})
	go func() {
		defer close(done)
		_, _ = slow(context.Background(), events.APIGatewayV2HTTPRequest{Body: `{"order_id":"o-2","customer":"c-8","amount":5}`})
	}()
	<-started
	post(handler, "r5", `{"order_id":"o-2","customer":"c-8","amount":5}`)
	close(finish)
	<-done
	post(handler, "r6", `{"order_id":"o-2","customer":"c-8","amount":5}`)
	fmt.Println("orders created here:", created)
	// Output:
	// r1 201 {"order":1} <nil>
	// r2 201 {"order":1} <nil>
	// r3 422  <nil>
	// r4 400  <nil>
	// r5 409  <nil>
	// r6 201 {"order":2} <nil>
	// orders created here: 1
}
