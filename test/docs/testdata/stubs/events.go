// Package snippet: the names docs/events.md's fragments use undeclared.
package snippet

import (
	"context"

	"github.com/aws/aws-lambda-go/events"
)

// createOrder is an API's operation.
func createOrder(context.Context, events.APIGatewayV2HTTPRequest) (events.APIGatewayV2HTTPResponse, error) {
	return events.APIGatewayV2HTTPResponse{}, nil
}

// charge is a stream's per-record operation.
func charge(context.Context, events.KinesisEventRecord) (Receipt, error) { return Receipt{}, nil }
