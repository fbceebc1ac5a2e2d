package memstore_test

import (
	"testing"

	"github.com/sqsonce/sqsonce/middleware/idempotency"
	"github.com/sqsonce/sqsonce/middleware/idempotency/memstore"
	"github.com/sqsonce/sqsonce/middleware/idempotency/storetest"
)

func TestInspector(t *testing.T) {
	s := memstore.New()
	storetest.RunInspector(t, s, func(t *testing.T, rec idempotency.Record) { s.Put(rec) }, 50)
}
