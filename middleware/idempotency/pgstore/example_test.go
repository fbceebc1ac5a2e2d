package pgstore_test

import (
	"context"
	"encoding/json"
	"log"
	"time"

	"github.com/aws/aws-lambda-go/events"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/sqsonce/sqsonce/middleware/idempotency"
	"github.com/sqsonce/sqsonce/middleware/idempotency/pgstore"
)

// Summary is the handler's result, stored with the idempotency record.
type Summary struct {
	DocumentID string `json:"document_id"`
	Text       string `json:"text"`
}

// The handler writes the summary row in its own table together with the
// idempotency record's completion: both commit, or neither does. (It needs a
// PostgreSQL server to run, so it has no output.)
func Example() {
	ctx := context.Background()
	pool, err := pgxpool.New(ctx, "postgres://localhost:5432/app") // once, at start-up
	if err != nil {
		log.Fatal(err)
	}
	store, err := pgstore.New(pool)
	if err != nil {
		log.Fatal(err)
	}
	if err := store.CreateSchema(ctx); err != nil { // or run schema.sql in a migration
		log.Fatal(err)
	}
	guard, err := idempotency.New(idempotency.Config{Store: store, Namespace: "summarise"})
	if err != nil {
		log.Fatal(err)
	}

	handle := idempotency.Wrap(guard, idempotency.BodyField("idempotency_key"),
		func(ctx context.Context, m events.SQSMessage) (Summary, error) {
			var req struct {
				DocumentID string `json:"document_id"`
			}
			if err := json.Unmarshal([]byte(m.Body), &req); err != nil {
				return Summary{}, err
			}
			s := Summary{DocumentID: req.DocumentID, Text: "..."} // the expensive call
			// Committed in one transaction with the record's completion.
			err := pgstore.Attach(ctx, pgstore.Statement{
				SQL: `INSERT INTO summaries (id, document_id, summary, created_at)
				      VALUES ($1, $2, $3, $4)`,
				Args: []any{idempotency.RecordID(ctx), s.DocumentID, s.Text, time.Now()},
			})
			return s, err
		})
	_ = handle // pass to the batch decorator, then lambda.Start
}
