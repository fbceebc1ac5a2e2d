// Package snippet: the names README.md's fragments use undeclared.
package snippet

import "context"

// charge is a payment, once per order (an Order).
func charge(ctx context.Context, order any) (Receipt, error) { return Receipt{}, nil }
