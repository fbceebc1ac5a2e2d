package idempotency_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"sync/atomic"
	"time"

	"github.com/aws/aws-lambda-go/events"

	"github.com/sqsonce/sqsonce/middleware/batch"
	"github.com/sqsonce/sqsonce/middleware/idempotency"
	"github.com/sqsonce/sqsonce/middleware/idempotency/memstore"
)

func ExampleDo() {
	g, err := idempotency.New(idempotency.Config{
		Store:     memstore.New(),
		Namespace: "summarise",
		Logger:    slog.New(slog.DiscardHandler),
	})
	if err != nil {
		panic(err)
	}
	key, _ := idempotency.SelectionOf("summary request", map[string]any{"document_id": "4471", "version": 9})
	calls := 0
	summarise := func(context.Context) (string, error) {
		calls++
		return "a summary of document 4471 at version 9", nil
	}
	for range 2 { // the same request, delivered twice
		s, err := idempotency.Do(context.Background(), g, key, summarise)
		fmt.Println(s, err)
	}
	fmt.Println("model calls:", calls)
	// Output:
	// a summary of document 4471 at version 9 <nil>
	// a summary of document 4471 at version 9 <nil>
	// model calls: 1
}

func ExampleDo_inProgress() {
	// Two Lambda instances share one table; here, two guards share one store.
	store := memstore.New()
	cfg := idempotency.Config{Store: store, Namespace: "summarise", Logger: slog.New(slog.DiscardHandler)}
	first, _ := idempotency.New(cfg)
	second, _ := idempotency.New(cfg)

	key := idempotency.Raw([]byte(`"request-1"`))
	started, finish, done := make(chan struct{}), make(chan struct{}), make(chan struct{})
	go func() {
		defer close(done)
		s, _ := idempotency.Do(context.Background(), first, key, func(context.Context) (string, error) {
			close(started)
			<-finish
			return "the summary", nil
		})
		fmt.Println("first instance:", s)
	}()
	<-started
	// The second instance holds a redelivery while the first still runs.
	_, err := idempotency.Do(context.Background(), second, key, func(context.Context) (string, error) {
		return "a second, billed, summary", nil
	})
	fmt.Println("second instance, in progress:", errors.Is(err, idempotency.ErrInProgress))
	// The error tells when the first instance's lease ends: the batch
	// handler's pacing has the message delivered again just after it.
	var ip *idempotency.InProgressError
	fmt.Println("lease end known:", errors.As(err, &ip) && ip.LeaseUntil.After(time.Now()))
	close(finish)
	<-done
	// SQS delivers the message again later: now it is replayed.
	s, err := idempotency.Do(context.Background(), second, key, func(context.Context) (string, error) {
		return "a second, billed, summary", nil
	})
	fmt.Println("second instance, later:", s, err)
	// Output:
	// second instance, in progress: true
	// lease end known: true
	// first instance: the summary
	// second instance, later: the summary <nil>
}

// ExampleWrap makes a per-message function idempotent and turns it into a
// Lambda SQS handler with partial batch responses. The batch carries the same
// request three times: the broker's duplicate (same messageId) and the
// producer's re-send (a new messageId, the same key).
func ExampleWrap() {
	g, err := idempotency.New(idempotency.Config{
		Store:     memstore.New(),
		Namespace: "summarise",
		Logger:    slog.New(slog.DiscardHandler),
	})
	if err != nil {
		panic(err)
	}
	var calls atomic.Int32
	summarise := func(_ context.Context, m events.SQSMessage) (string, error) {
		calls.Add(1)
		return "summary", nil
	}
	handler := batch.SQS(idempotency.Wrap(g, idempotency.BodyField("idempotency_key"), summarise), batch.Options{})
	// In main: lambda.StartHandlerFunc(handler)

	body := `{"idempotency_key":"b7e1","document_id":"4471","version":9}`
	resp, err := handler(context.Background(), events.SQSEvent{Records: []events.SQSMessage{
		{MessageId: "m-1", Body: body},
		{MessageId: "m-1", Body: body},                                 // the broker's duplicate
		{MessageId: "m-2", Body: body},                                 // the producer's re-send
		{MessageId: "m-3", Body: `{"document_id":"4471","version":9}`}, // no key: never run unprotected
	}})
	out, _ := json.Marshal(resp)
	fmt.Println(string(out), err)
	fmt.Println("model calls:", calls.Load())
	// Output:
	// {"batchItemFailures":[{"itemIdentifier":"m-3"}]} <nil>
	// model calls: 1
}

// The record id Powertools for AWS Lambda (Python) gives a message whose
// key it takes with eventKeyJmesPath "powertools_json(body).idempotency_key"
// and key_prefix "orders" (the tests check it against python3).
func ExampleFormatPowertoolsPython() {
	g, err := idempotency.New(idempotency.Config{
		Store:     memstore.New(),
		Namespace: "orders", // Powertools Python's key_prefix, or "{function}.{module}.{qualname}"
		Format:    idempotency.FormatPowertoolsPython,
	})
	if err != nil {
		panic(err)
	}
	m := events.SQSMessage{MessageId: "m-1", Body: `{"idempotency_key":"059f36b4-87a3-44ab-83d2-661975830a7d"}`}
	k, err := idempotency.Select(idempotency.BodyField("idempotency_key"), m)
	if err != nil {
		panic(err)
	}
	id, err := g.ID(k)
	fmt.Println(id, err)
	// Output: orders#068044a7927cd88524adc22442efbed9 <nil>
}

// The record id Powertools for AWS Lambda (TypeScript) gives the same
// message with keyPrefix "orders" (the tests check it against the pinned
// package).
func ExampleFormatPowertoolsTypeScript() {
	g, err := idempotency.New(idempotency.Config{
		Store:     memstore.New(),
		Namespace: "orders", // Powertools TypeScript's keyPrefix, or the function's name
		Format:    idempotency.FormatPowertoolsTypeScript,
	})
	if err != nil {
		panic(err)
	}
	m := events.SQSMessage{MessageId: "m-1", Body: `{"idempotency_key":"059f36b4-87a3-44ab-83d2-661975830a7d"}`}
	k, err := idempotency.Select(idempotency.BodyField("idempotency_key"), m)
	if err != nil {
		panic(err)
	}
	id, err := g.ID(k)
	fmt.Println(id, err)
	// Output: orders#BoBEp5J82IUkrcIkQu++2Q== <nil>
}

// A key function's selector is part of a native record id: a producer key
// that holds another request's fields does not give that request's id,
// although all three keys select {"x":1} or 1 from bodies alike.
func ExampleBodyField() {
	g, _ := idempotency.New(idempotency.Config{Store: memstore.New(), Namespace: "summarise"})
	field, _ := idempotency.Select(idempotency.BodyField("x"), events.SQSMessage{Body: `{"x":{"x":1}}`})
	subset, _ := idempotency.Select(idempotency.BodySubset("x"), events.SQSMessage{Body: `{"x":1}`})
	nested, _ := idempotency.Select(idempotency.BodyField("x", "x"), events.SQSMessage{Body: `{"x":{"x":1}}`})
	for _, k := range []idempotency.Selection{field, subset, nested} {
		id, _ := g.ID(k)
		fmt.Printf("%s %s %s\n", k.Selector, k.Value, id[:len("summarise#")+8])
	}
	// Output:
	// body ["x"] {"x":1} summarise#ee2de4d3
	// body fields {"x":1} summarise#05749a17
	// body ["x","x"] 1 summarise#0e3ea660
}

// The producer's order id is the key, and the amount and currency are the
// payload that must be the same whenever it is reused: a re-send with
// another amount fails, as a key reused for other work must, instead of
// returning the first charge.
func ExampleWithPayload() {
	g, err := idempotency.New(idempotency.Config{Store: memstore.New(), Namespace: "payments", Logger: slog.New(slog.DiscardHandler)})
	if err != nil {
		panic(err)
	}
	charge := idempotency.Wrap(g, idempotency.BodyField("order_id"),
		func(_ context.Context, m events.SQSMessage) (string, error) { return "charged", nil },
		idempotency.WithPayload(idempotency.BodySubset("amount", "currency")))
	for _, body := range []string{
		`{"order_id":"o-1","amount":1250,"currency":"EUR","sent_at":"10:00"}`,
		`{"order_id":"o-1","amount":1250,"currency":"EUR","sent_at":"10:05"}`, // the producer's re-send
		`{"order_id":"o-1","amount":990,"currency":"EUR"}`,                    // the key reused for another charge
	} {
		s, err := charge(context.Background(), events.SQSMessage{MessageId: "m", Body: body})
		fmt.Printf("%q %v\n", s, errors.Is(err, idempotency.ErrPayloadMismatch))
	}
	// Output:
	// "charged" false
	// "charged" false
	// "" true
}

// A key of one's own, typed on the input: here a Kinesis record's
// partition key and sequence of the producer's batch, which the record
// carries outside its data.
func ExampleSelectorFunc() {
	g, err := idempotency.New(idempotency.Config{Store: memstore.New(), Namespace: "ingest", Logger: slog.New(slog.DiscardHandler)})
	if err != nil {
		panic(err)
	}
	key := idempotency.SelectorFunc(func(r events.KinesisEventRecord) (idempotency.Selection, error) {
		if r.Kinesis.PartitionKey == "" {
			return idempotency.Selection{}, idempotency.ErrNoKey
		}
		return idempotency.SelectionOf("partition key", r.Kinesis.PartitionKey)
	})
	runs := 0
	ingest := idempotency.Wrap(g, key, func(context.Context, events.KinesisEventRecord) (int, error) { runs++; return runs, nil })
	for _, pk := range []string{"batch-7", "batch-7", ""} {
		n, err := ingest(context.Background(), events.KinesisEventRecord{EventID: "shard-0:" + pk, Kinesis: events.KinesisRecord{PartitionKey: pk}})
		fmt.Println(n, err)
	}
	// Output:
	// 1 <nil>
	// 1 <nil>
	// 0 idempotency: key from events.KinesisEventRecord of input shard-0:: no idempotency key
}
