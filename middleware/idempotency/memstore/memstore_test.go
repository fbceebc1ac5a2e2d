package memstore_test

import (
	"testing"

	"github.com/sqsonce/sqsonce/middleware/idempotency"
	"github.com/sqsonce/sqsonce/middleware/idempotency/memstore"
	"github.com/sqsonce/sqsonce/middleware/idempotency/storetest"
)

func TestConformance(t *testing.T) {
	storetest.Run(t, func(*testing.T) idempotency.Store { return memstore.New() })
}
