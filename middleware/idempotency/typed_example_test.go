package idempotency_test

import (
	"context"
	"fmt"
	"log/slog"

	"github.com/aws/aws-lambda-go/events"

	"github.com/sqsonce/sqsonce/middleware/idempotency"
	"github.com/sqsonce/sqsonce/middleware/idempotency/memstore"
)

// Charge is a producer's request, decoded once from the message body.
type Charge struct {
	OrderID     string `json:"order_id"`
	AmountCents int    `json:"amount_cents"`
	RequestID   string `json:"request_id"` // new on every re-send: never part of the key
}

// IdempotencyKey is the order id: the producer decided to charge this order once.
// An empty key means no key: the message fails without running.
func (c Charge) IdempotencyKey() (idempotency.Selection, error) {
	if c.OrderID == "" {
		return idempotency.Selection{}, nil
	}
	return idempotency.SelectionOf("order", c.OrderID)
}

// ExampleWrapJSON decodes each body once into a Charge, takes the key from
// it and the validated payload from the body, and calls the operation with
// it. Bodies
// that do not decode fail their own message, before anything is claimed.
func ExampleWrapJSON() {
	g, err := idempotency.New(idempotency.Config{
		Store:     memstore.New(),
		Namespace: "payments",
		Logger:    slog.New(slog.DiscardHandler),
	})
	if err != nil {
		panic(err)
	}
	charges := 0
	charge := func(_ context.Context, c Charge, m events.SQSMessage) (string, error) {
		charges++
		return fmt.Sprintf("charged %d cents for %s (message %s)", c.AmountCents, c.OrderID, m.MessageId), nil
	}
	h := idempotency.WrapJSON(g, idempotency.SelectorFunc(Charge.IdempotencyKey), charge,
		idempotency.WithPayload(idempotency.BodySubset("amount_cents")),
		idempotency.DisallowUnknownFields())
	// In main: lambda.StartHandlerFunc(batch.SQS(h, batch.Options{}))

	for _, m := range []events.SQSMessage{
		{MessageId: "m-1", Body: `{"order_id":"o-17","amount_cents":1250,"request_id":"r-1"}`},
		{MessageId: "m-2", Body: `{"order_id":"o-17","amount_cents":1250,"request_id":"r-2"}`}, // the producer's re-send
		{MessageId: "m-3", Body: `{"order_id":"o-18","amount_cents":"12.50"}`},                 // not a Charge
		{MessageId: "m-4", Body: `{"order_id":"o-19","amount_cents":900,"coupon":"X"}`},        // a field Charge lacks
		{MessageId: "m-5", Body: `{"amount_cents":900}`},                                       // no key
		{MessageId: "m-6", Body: `{"order_id":"o-17","amount_cents":99}`},                      // the key reused for another amount
	} {
		s, err := h(context.Background(), m)
		fmt.Printf("%s: %q %v\n", m.MessageId, s, err)
	}
	fmt.Println("charges:", charges)
	// Output:
	// m-1: "charged 1250 cents for o-17 (message m-1)" <nil>
	// m-2: "charged 1250 cents for o-17 (message m-1)" <nil>
	// m-3: "" idempotency: body of message m-3 is not a valid idempotency_test.Charge: field amount_cents is a JSON string, want int
	// m-4: "" idempotency: body of message m-4 is not a valid idempotency_test.Charge: unknown field (6 bytes, sha256:72309c04)
	// m-5: "" idempotency: key from idempotency_test.Charge of input m-5: no idempotency key
	// m-6: "" idempotency: key reused with a different payload: payments#9f75777c4c8dd7518891df799321e4b1ad5c1658f5ad9bc940c53ee2d17894a9
	// charges: 1
}
