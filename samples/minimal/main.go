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

	"github.com/sqsonce/sqsonce/middleware/batch"
	"github.com/sqsonce/sqsonce/middleware/idempotency"
	"github.com/sqsonce/sqsonce/middleware/idempotency/memstore"
	"github.com/sqsonce/sqsonce/middleware/lambdaenv"
	"github.com/sqsonce/sqsonce/middleware/lambdaenv/envvars"
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
	cfg, opts := idempotency.Config{Store: memstore.New(), Namespace: "minimal"}, batch.Options{}
	wrap := func(h func(context.Context, events.SQSEvent) (events.SQSEventResponse, error)) func(context.Context, events.SQSEvent) (events.SQSEventResponse, error) {
		return h
	}
	if os.Getenv(envvars.EnvTable) != "" {
		// The construct's variables (middleware/lambdaenv): the store, the
		// expiry, strict mode, the batch options and the metrics its alarms
		// watch. Run by hand, the namespace is the sample's own.
		if os.Getenv(envvars.EnvNamespace) == "" {
			_ = os.Setenv(envvars.EnvNamespace, "minimal")
		}
		env, err := lambdaenv.Load(ctx)
		if err != nil {
			log.Fatal(err)
		}
		cfg, opts, wrap = env.Config, env.Options, env.Handler
	}
	g, err := idempotency.New(cfg)
	if err != nil {
		log.Fatal(fmt.Errorf("minimal: %w", err))
	}
	fn := idempotency.Wrap(g, idempotency.BodyField("idempotency_key"), work)
	h := wrap(batch.SQS(fn, opts))
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
