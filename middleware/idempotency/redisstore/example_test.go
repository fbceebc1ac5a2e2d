package redisstore_test

import (
	"context"
	"log"

	"github.com/aws/aws-lambda-go/events"
	"github.com/redis/go-redis/v9"

	"github.com/sqsonce/sqsonce/middleware/idempotency"
	"github.com/sqsonce/sqsonce/middleware/idempotency/redisstore"
)

// The guard claims each message's key in Redis before the handler runs.
// (It needs a Redis server to run, so it has no output.)
func Example() {
	// Once, at start-up. ContextTimeoutEnabled: a step ends at its
	// context's deadline (New refuses a client without it).
	rdb := redis.NewClient(&redis.Options{Addr: "localhost:6379", ContextTimeoutEnabled: true})
	store, err := redisstore.New(context.Background(), rdb, redisstore.WithKeyPrefix("idempotency:"))
	if err != nil {
		log.Fatal(err)
	}
	guard, err := idempotency.New(idempotency.Config{Store: store, Namespace: "summarise"})
	if err != nil {
		log.Fatal(err)
	}
	handle := idempotency.Wrap(guard, idempotency.BodyField("idempotency_key"),
		func(ctx context.Context, m events.SQSMessage) (string, error) {
			return "summary of " + m.MessageId, nil // the expensive call
		})
	_ = handle // pass to the batch decorator, then lambda.Start
}
