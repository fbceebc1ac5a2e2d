package pgstore_test

import (
	"testing"

	"github.com/sqsonce/sqsonce/middleware/idempotency/pgstore"
)

// The tests that need a PostgreSQL server are in test/pgstore, so that
// this module's go.mod requires no module of the test harness.

// TestSchemaFile: schema.sql (Schema) is the SQL CreateSchema runs for the
// default table.
func TestSchemaFile(t *testing.T) {
	if got := pgstore.SchemaOf(pgstore.DefaultTable); got != pgstore.Schema {
		t.Errorf("CreateSchema's SQL for the default table:\n%s\nschema.sql:\n%s", got, pgstore.Schema)
	}
}
