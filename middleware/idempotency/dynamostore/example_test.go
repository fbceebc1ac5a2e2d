package dynamostore_test

import (
	"context"
	"encoding/json"
	"log"

	"github.com/aws/aws-lambda-go/events"
	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/config"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"github.com/sqsonce/sqsonce/middleware/idempotency"
	"github.com/sqsonce/sqsonce/middleware/idempotency/dynamostore"
)

// Summary is the handler's result, stored with the idempotency record.
type Summary struct {
	DocumentID string `json:"document_id"`
	Text       string `json:"text"`
}

// The handler writes the summary item in its own table together with the
// idempotency record's completion: both commit, or neither does. (It needs
// AWS credentials and tables to run, so it has no output.)
func Example() {
	ctx := context.Background()
	cfg, err := config.LoadDefaultConfig(ctx)
	if err != nil {
		log.Fatal(err)
	}
	db := dynamodb.NewFromConfig(cfg) // once, at start-up
	store, err := dynamostore.New(db, "idempotency")
	if err != nil {
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
			err := dynamostore.Attach(ctx, types.TransactWriteItem{Put: &types.Put{
				TableName: aws.String("summaries"),
				Item: map[string]types.AttributeValue{
					"id":      &types.AttributeValueMemberS{Value: s.DocumentID},
					"summary": &types.AttributeValueMemberS{Value: s.Text},
				},
			}})
			return s, err
		})
	_ = handle // pass to the batch decorator, then lambda.Start
}
