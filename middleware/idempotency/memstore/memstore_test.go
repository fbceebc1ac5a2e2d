package memstore_test

import (
	"testing"

	"github.com/sqsonce/sqsonce/middleware/idempotency/driver"
	"github.com/sqsonce/sqsonce/middleware/idempotency/memstore"
	"github.com/sqsonce/sqsonce/middleware/idempotency/storetest"
)

func TestConformance(t *testing.T) {
	storetest.Run(t, func(*testing.T) driver.Store { return memstore.New() })
}

// TestStrictAcrossGuards: two guards of their own on one store, one strict:
// the strict call outlives its lease, and the default call does not run
// the operation (storetest.StrictAcrossGuards).
func TestStrictAcrossGuards(t *testing.T) { storetest.StrictAcrossGuards(t, memstore.New()) }
