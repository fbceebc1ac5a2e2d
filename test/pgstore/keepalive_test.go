package pgstore_test

import (
	"testing"

	"github.com/sqsonce/sqsonce/middleware/idempotency/storetest"
)

// TestKeepAliveLiveOwner: on PostgreSQL, a live owner whose operation
// runs three times its initial lease is never taken over (see
// storetest.KeepAliveLiveOwner).
func TestKeepAliveLiveOwner(t *testing.T) {
	storetest.KeepAliveLiveOwner(t, newStore(t, newPool(t, nil)))
}
