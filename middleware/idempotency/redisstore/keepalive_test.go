package redisstore_test

import (
	"testing"

	"github.com/sqsonce/sqsonce/middleware/idempotency/storetest"
)

// TestKeepAliveLiveOwner: on redis-server, a live owner whose operation
// runs three times its initial lease is never taken over (see
// storetest.KeepAliveLiveOwner).
func TestKeepAliveLiveOwner(t *testing.T) {
	storetest.KeepAliveLiveOwner(t, newStore(t, newClient(t)))
}
