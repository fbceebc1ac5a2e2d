package main

import (
	"context"
	"encoding/json"
	"fmt"
	"log"
	"os"
	"strings"

	"github.com/aws/aws-lambda-go/events"
	"github.com/aws/aws-lambda-go/lambda"
	"github.com/aws/aws-sdk-go-v2/config"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"

	"github.com/sqsonce/sqsonce/middleware/batch"
	"github.com/sqsonce/sqsonce/middleware/idempotency"
	"github.com/sqsonce/sqsonce/middleware/idempotency/driver"
	"github.com/sqsonce/sqsonce/middleware/idempotency/dynamostore"
	"github.com/sqsonce/sqsonce/middleware/idempotency/memstore"
)

// Result is what the work returns; it is stored as JSON and replayed.
type Result struct {
	Words int    `json:"words"`
	Upper string `json:"upper"`
}

// work is the operation to run once per key: here a stand-in for a paid call.
func work(_ context.Context, m events.SQSMessage) (Result, error) {
	log.Printf("minimal: work ran for message %s", m.MessageId)
	return Result{Words: len(strings.Fields(m.Body)), Upper: strings.ToUpper(m.Body)}, nil
}

func main() {
	ctx := context.Background()
	var store driver.Store = memstore.New()
	if table := os.Getenv("SQSONCE_TABLE"); table != "" {
		cfg, err := config.LoadDefaultConfig(ctx)
		if err != nil {
			log.Fatal(err)
		}
		s, err := dynamostore.New(dynamodb.NewFromConfig(cfg), table)
		if err != nil {
			log.Fatal(err)
		}
		store = s
	}
	g, err := idempotency.New(idempotency.Config{Store: store, Namespace: "minimal"})
	if err != nil {
		log.Fatal(fmt.Errorf("minimal: %w", err))
	}
	fn := idempotency.Wrap(g, idempotency.BodyField("idempotency_key"), work)
	h := batch.SQS(fn, batch.Options{})
	if len(os.Args) == 2 && os.Getenv("AWS_LAMBDA_RUNTIME_API") == "" {
		runFile(ctx, h, os.Args[1]) // outside Lambda: one batch from a file
		return
	}
	lambda.StartHandlerFunc(h)
}

// runFile runs the SQS event in file through h and prints the response.
func runFile(ctx context.Context, h func(context.Context, events.SQSEvent) (events.SQSEventResponse, error), file string) {
	b, err := os.ReadFile(file)
	if err != nil {
		log.Fatal(err)
	}
	var ev events.SQSEvent
	if err := json.Unmarshal(b, &ev); err != nil {
		log.Fatalf("minimal: %s: %v", file, err)
	}
	resp, err := h(ctx, ev)
	if err != nil {
		log.Fatal(err)
	}
	out, err := json.Marshal(resp)
	if err != nil {
		log.Fatal(err)
	}
	fmt.Println(string(out))
}
