package dynamosink

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"
	"github.com/sqsonce/sqsonce/handler"
	"github.com/sqsonce/sqsonce/middleware/idempotency/dynamostore"
)

// Sink is a [handler.Sink] that writes each summary to a DynamoDB table in
// the same transaction as the idempotency record's completion.
type Sink struct {
	table string
}

var _ handler.Sink = (*Sink)(nil)

// New returns a Sink writing to table, whose partition key is "id" (S).
func New(table string) (*Sink, error) {
	if table == "" {
		return nil, errors.New("dynamosink: table name is required")
	}
	return &Sink{table: table}, nil
}

// Save implements [handler.Sink]: it attaches a Put of the summary to the
// completion of the operation running in ctx (see dynamostore.Attach), so the
// summary and the completed record commit together or not at all. Outside
// an operation run by the guard it fails with idempotency.ErrNotClaimed.
func (s *Sink) Save(ctx context.Context, sum handler.Summary) error {
	if sum.ID == "" {
		return errors.New("dynamosink: summary has no id (set handler.Config.RecordID)")
	}
	put := types.TransactWriteItem{Put: &types.Put{TableName: aws.String(s.table), Item: Item(sum)}}
	if err := dynamostore.Attach(ctx, put); err != nil {
		return fmt.Errorf("dynamosink: %w", err)
	}
	return nil
}

// Item is the DynamoDB item of a summary: its JSON field names as attribute
// names, with "id" (the idempotency record id) as the partition key, token
// counts as numbers and created_at as RFC 3339.
func Item(sum handler.Summary) map[string]types.AttributeValue {
	s := func(v string) types.AttributeValue { return &types.AttributeValueMemberS{Value: v} }
	n := func(v int) types.AttributeValue { return &types.AttributeValueMemberN{Value: strconv.Itoa(v)} }
	return map[string]types.AttributeValue{
		"id":               s(sum.ID),
		"document_id":      s(sum.DocumentID),
		"document_version": s(sum.DocumentVersion),
		"prompt_version":   s(sum.PromptVersion),
		"provider":         s(sum.Provider),
		"model":            s(sum.Model),
		"summary":          s(sum.Summary),
		"input_tokens":     n(sum.InputTokens),
		"output_tokens":    n(sum.OutputTokens),
		"message_id":       s(sum.MessageID),
		"created_at":       s(sum.CreatedAt.UTC().Format(time.RFC3339Nano)),
	}
}
