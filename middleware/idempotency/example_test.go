package idempotency_test

import (
	"context"
	"errors"
	"fmt"
	"log/slog"

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
	key, _ := idempotency.JSONKey(map[string]any{"document_id": "4471", "version": 9})
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

	key := []byte(`"request-1"`)
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
	close(finish)
	<-done
	// SQS delivers the message again later: now it is replayed.
	s, err := idempotency.Do(context.Background(), second, key, func(context.Context) (string, error) {
		return "a second, billed, summary", nil
	})
	fmt.Println("second instance, later:", s, err)
	// Output:
	// second instance, in progress: true
	// first instance: the summary
	// second instance, later: the summary <nil>
}
