// Package snippet is what every fragment of the manual may use without
// declaring it: the names its text introduces once (a guard g, a store, an
// AWS config cfg, ...). A page's own file (keys.go for docs/keys.md,
// README.go for README.md) adds the names only that page uses.
package snippet

import (
	"context"

	"github.com/aws/aws-lambda-go/events"
	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"

	"github.com/sqsonce/sqsonce/middleware/idempotency"
	"github.com/sqsonce/sqsonce/middleware/idempotency/driver"
)

var (
	cfg   aws.Config           // from config.LoadDefaultConfig
	db    *dynamodb.Client     // dynamodb.NewFromConfig(cfg)
	store driver.Store         // a store's New
	g     *idempotency.Guard   // idempotency.New
	key   idempotency.Selector // a key selector
)

// Summary is the summarise job's result.
type Summary struct {
	Text string `json:"text"`
}

// Receipt is a payment's result.
type Receipt struct {
	ChargeID string `json:"charge_id"`
}

// summarise is the summarise job's per-record function.
func summarise(context.Context, events.SQSMessage) (Summary, error) { return Summary{}, nil }
