// Command otelfunc is the function of the OTLP test: an idempotent SQS
// handler on memstore, traced, exporting with otlptracehttp to
// $OTEL_EXPORTER_OTLP_ENDPOINT. The key "busy" is held by another worker.
package main

import (
	"context"
	"log"
	"time"

	"github.com/aws/aws-lambda-go/events"
	"github.com/aws/aws-lambda-go/lambda"
	"go.opentelemetry.io/otel/exporters/otlp/otlptrace/otlptracehttp"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"

	"github.com/sqsonce/sqsonce/middleware/batch"
	"github.com/sqsonce/sqsonce/middleware/idempotency"
	"github.com/sqsonce/sqsonce/middleware/idempotency/driver"
	"github.com/sqsonce/sqsonce/middleware/idempotency/memstore"
	"github.com/sqsonce/sqsonce/middleware/oteltrace"
)

type order struct {
	Key string `json:"key"`
}

func main() {
	exp, err := otlptracehttp.New(context.Background())
	if err != nil {
		log.Fatal(err)
	}
	tp := sdktrace.NewTracerProvider(sdktrace.WithBatcher(exp))
	store := memstore.New()
	g, err := idempotency.New(oteltrace.Instrument(idempotency.Config{Store: store, Namespace: "orders"}, oteltrace.WithTracerProvider(tp)))
	if err != nil {
		log.Fatal(err)
	}
	holdBusy(g, store)
	h := idempotency.WrapJSON(g, idempotency.BodyField("key"), func(ctx context.Context, o order, _ events.SQSMessage) (string, error) {
		return "done", nil
	})
	lambda.StartHandlerFunc(oteltrace.SQS(h, batch.Options{}, oteltrace.WithTracerProvider(tp)))
}

// holdBusy claims the key "busy" as another live worker would.
func holdBusy(g *idempotency.Guard, store *memstore.Store) {
	sel, err := idempotency.Select(idempotency.BodyField("key"), events.SQSMessage{Body: `{"key":"busy"}`})
	if err != nil {
		log.Fatal(err)
	}
	id, err := g.ID(sel)
	if err != nil {
		log.Fatal(err)
	}
	now := time.Now()
	rec := driver.Record{ID: id, Status: driver.StatusInProgress, ExpiresAt: now.Add(time.Hour), LeaseUntil: now.Add(time.Hour), Owner: "elsewhere"}
	if _, _, err := store.Acquire(context.Background(), rec, now, driver.Takeover); err != nil {
		log.Fatal(err)
	}
}
