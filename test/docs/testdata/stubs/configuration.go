// Package snippet: the names docs/configuration.md's fragments use undeclared.
package snippet

import (
	"context"

	"github.com/aws/aws-lambda-go/events"
)

var ctx context.Context // main's context

// charge is an order's per-message operation.
func charge(context.Context, events.SQSMessage) (Receipt, error) { return Receipt{}, nil }
