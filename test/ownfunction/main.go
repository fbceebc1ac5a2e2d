package main

import (
	"context"
	"errors"
	"log"

	"github.com/aws/aws-lambda-go/events"
	"github.com/aws/aws-lambda-go/lambda"

	"github.com/sqsonce/sqsonce/middleware/batch"
	"github.com/sqsonce/sqsonce/middleware/idempotency"
	"github.com/sqsonce/sqsonce/middleware/lambdaenv"
)

// Order is the producer's request.
type Order struct {
	OrderID     string `json:"order_id"`
	AmountCents int64  `json:"amount_cents"`
}

// Receipt is what a charge returns; it is stored and replayed to duplicates.
type Receipt struct {
	ChargeID string `json:"charge_id"`
}

// charge is the paid work, run once per order id.
func charge(ctx context.Context, o Order, m events.SQSMessage) (Receipt, error) {
	// call the payment provider here
	return Receipt{ChargeID: "ch_" + o.OrderID}, nil
}

func main() {
	// The variables the construct sets: the DynamoDB store, the guard's
	// Config, the batch's Options and the metrics its alarms watch.
	env, err := lambdaenv.Load(context.Background())
	if err != nil {
		log.Fatal(err)
	}
	g, err := idempotency.New(env.Config)
	if err != nil {
		log.Fatal(err)
	}
	h := idempotency.WrapJSON(g, idempotency.BodyField("order_id"), charge,
		idempotency.WithPayload(idempotency.BodySubset("amount_cents")),
		idempotency.WithCheck(func(o Order) error {
			if o.AmountCents <= 0 {
				return errors.New("amount_cents must be positive")
			}
			return nil
		}),
		idempotency.DisallowUnknownFields())
	lambda.StartHandlerFunc(env.Handler(batch.SQS(h, env.Options)))
}
