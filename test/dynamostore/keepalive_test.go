package dynamostore_test

import (
	"fmt"
	"testing"

	"github.com/sqsonce/sqsonce/middleware/idempotency/storetest"
)

// TestKeepAliveLiveOwner: on moto's DynamoDB, a live owner whose
// operation runs three times its initial lease is never taken over (see
// storetest.KeepAliveLiveOwner).
func TestKeepAliveLiveOwner(t *testing.T) {
	storetest.KeepAliveLiveOwner(t, newEnv(t).store)
}

// TestKeepAliveSkewedReader: on moto's DynamoDB, a reader whose clock runs
// 3 s ahead never finds a kept-alive owner's record expired while the
// owner works (see storetest.KeepAliveSkewedReader).
func TestKeepAliveSkewedReader(t *testing.T) {
	e := newEnv(t)
	for _, strict := range []bool{false, true} {
		t.Run(fmt.Sprintf("strict=%v", strict), func(t *testing.T) { storetest.KeepAliveSkewedReader(t, e.store, strict) })
	}
}
