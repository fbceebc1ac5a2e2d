package driver_test

import (
	"testing"

	"github.com/sqsonce/sqsonce/middleware/idempotency/driver"
	"github.com/sqsonce/sqsonce/middleware/idempotency/storetest"
)

// TestExampleStoreConforms: the package example's store passes the
// conformance suite, so the example shows a whole store.
func TestExampleStoreConforms(t *testing.T) {
	storetest.Run(t, func(*testing.T) driver.Store { return newMapStore() })
}
