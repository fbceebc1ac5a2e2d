package handler_test

import (
	"context"
	"fmt"

	"github.com/aws/aws-lambda-go/events"

	"github.com/sqsonce/sqsonce/handler"
	"github.com/sqsonce/sqsonce/middleware/idempotency"
	"github.com/sqsonce/sqsonce/middleware/idempotency/memstore"
)

// The acceptance test in miniature: the same request delivered twice, and
// re-sent by the producer with a new request id, makes one provider call.
func Example() {
	calls := &handler.Calls{}
	g, err := idempotency.New(idempotency.Config{Store: memstore.New(), Namespace: "summarise"})
	if err != nil {
		panic(err)
	}
	h, err := handler.New(handler.Config{
		Documents: handler.Dir("../samples/documents"),
		Provider:  handler.LogRequests(handler.Stub{}, calls, nil),
		Model:     "stub-model",
	})
	if err != nil {
		panic(err)
	}
	summarise := idempotency.Wrap(g, handler.Key(), h.Handle, idempotency.WithPayload(idempotency.SelectorFunc(handler.WorkKey)))

	body := `{"document":{"id":"4472","version":"1"},"prompt_version":"v1","parameters":{"temperature":0.7},"request_id":"%s"}`
	for _, m := range []events.SQSMessage{
		{MessageId: "m-1", Body: fmt.Sprintf(body, "r-1")},
		{MessageId: "m-1", Body: fmt.Sprintf(body, "r-1")}, // the broker's duplicate
		{MessageId: "m-2", Body: fmt.Sprintf(body, "r-2")}, // the producer's re-send
	} {
		s, err := summarise(context.Background(), m)
		if err != nil {
			panic(err)
		}
		fmt.Println(m.MessageId, "->", s.MessageID, s.OutputTokens, "tokens")
	}
	fmt.Println("provider calls:", calls.Len())
	// Output:
	// m-1 -> m-1 24 tokens
	// m-1 -> m-1 24 tokens
	// m-2 -> m-1 24 tokens
	// provider calls: 1
}

func ExampleWorkKey() {
	for _, body := range []string{
		`{"document":{"id":"4471","version":"9"},"prompt_version":"v1","parameters":{"temperature":0.7},"request_id":"a"}`,
		`{"request_id":"b","parameters":{"temperature":0.70},"prompt_version":"v1","document":{"version":9,"id":4471}}`,
	} {
		k, err := handler.WorkKey(events.SQSMessage{Body: body})
		if err != nil {
			panic(err)
		}
		fmt.Println(k.Selector, string(k.Value)) // what the record id hashes
	}
	// Output:
	// summarise work {"document_id":"4471","document_version":"9","prompt_version":"v1","parameters":{"temperature":0.7}}
	// summarise work {"document_id":"4471","document_version":"9","prompt_version":"v1","parameters":{"temperature":0.7}}
}
