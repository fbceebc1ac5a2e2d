// Package snippet: the names docs/failures.md's fragments use undeclared.
package snippet

import (
	"context"
	"errors"

	"github.com/aws/aws-lambda-go/events"
)

// charge is a payment, once per message.
func charge(context.Context, events.SQSMessage) (Receipt, error) { return Receipt{}, nil }

// errDeclined is a payment provider's refusal.
var errDeclined = errors.New("declined")

// pay calls the payment provider.
func pay(context.Context, events.SQSMessage) (Receipt, error) { return Receipt{}, nil }
