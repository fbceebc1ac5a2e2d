package jmespath_test

import (
	"context"
	"errors"
	"fmt"
	"log/slog"

	"github.com/aws/aws-lambda-go/events"

	"github.com/sqsonce/sqsonce/middleware/idempotency"
	"github.com/sqsonce/sqsonce/middleware/idempotency/jmespath"
	"github.com/sqsonce/sqsonce/middleware/idempotency/memstore"
)

// A Powertools TypeScript configuration carried over: the same
// eventKeyJmesPath and payloadValidationJmesPath, the same keyPrefix, and
// the record id Powertools writes.
func ExampleCompile() {
	key := jmespath.MustCompile(`powertools_json(body).idempotency_key`)
	payload := jmespath.MustCompile(`powertools_json(body).[user_id, amount]`)
	g, err := idempotency.New(idempotency.Config{
		Store:     memstore.New(),
		Namespace: "orders", // keyPrefix
		Format:    idempotency.FormatPowertoolsTypeScript,
		Logger:    slog.New(slog.DiscardHandler),
	})
	if err != nil {
		panic(err)
	}
	m := events.SQSMessage{MessageId: "m-1",
		Body: `{"idempotency_key":"059f36b4-87a3-44ab-83d2-661975830a7d","user_id":"u1","amount":10.5}`}
	k, err := key.Select(m)
	if err != nil {
		panic(err)
	}
	fmt.Println(g.ID(k))

	charge := idempotency.Wrap(g, key.Selector(), func(context.Context, events.SQSMessage) (string, error) { return "charged", nil }, idempotency.WithPayload(payload.Selector()))
	fmt.Println(charge(context.Background(), m))
	m.Body = `{"idempotency_key":"059f36b4-87a3-44ab-83d2-661975830a7d","user_id":"u1","amount":99}`
	_, err = charge(context.Background(), m)
	fmt.Println(errors.Is(err, idempotency.ErrPayloadMismatch))
	// Output:
	// orders#BoBEp5J82IUkrcIkQu++2Q== <nil>
	// charged <nil>
	// true
}

// A selection that Powertools Python and TypeScript would compute
// differently is refused before anything is claimed: here length() of a
// string with an emoji, 1 code point in Python and 2 UTF-16 units in
// TypeScript. The error names the reason, never the message's content.
func ExampleExpression_Select_refused() {
	key := jmespath.MustCompile(`length(powertools_json(body).note)`)
	_, err := key.Select(events.SQSMessage{MessageId: "m-1", Body: `{"note":"thanks 😀"}`})
	var ke *idempotency.KeyError
	fmt.Println(errors.As(err, &ke), ke.InputID)
	fmt.Println(err)
	// Output:
	// true m-1
	// idempotency: key from JMESPath "length(powertools_json(body).note)" of input m-1: length(): a string with a character beyond U+FFFF (Python counts and reverses code points, TypeScript UTF-16 units)
}
