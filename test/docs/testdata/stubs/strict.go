// Package snippet: the names docs/strict.md's fragments use undeclared.
package snippet

import (
	"context"

	"github.com/aws/aws-lambda-go/events"
)

// charge is a payment, once per message.
func charge(context.Context, events.SQSMessage) (Receipt, error) { return Receipt{}, nil }
