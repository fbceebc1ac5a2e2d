package pgstore_test

import (
	"context"
	"strings"
	"testing"

	"github.com/sqsonce/sqsonce/middleware/idempotency/driver"
	"github.com/sqsonce/sqsonce/middleware/idempotency/pgstore"
	"github.com/sqsonce/sqsonce/middleware/idempotency/storetest"
)

// TestWithTable: a store on a table whose name needs quoting (upper case,
// a quote, a semicolon, SQL text) passes the conformance suite there, and
// creates, uses and cleans no other table.
func TestWithTable(t *testing.T) {
	const name = `Idem "records"; DROP TABLE idempotency; --`
	pool := newPool(t, nil) // holds the default table
	s, err := pgstore.New(pool, pgstore.WithTable(name))
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	if err := s.CreateSchema(ctx); err != nil {
		t.Fatal(err)
	}
	storetest.Run(t, func(t *testing.T) driver.Store { return s })
	if n := count(t, pool, `SELECT count(*) FROM pg_tables WHERE tablename = '`+strings.ReplaceAll(name, `'`, `''`)+`'`); n != 1 {
		t.Fatalf("%d tables named %q, want 1", n, name)
	}
	if n := count(t, pool, `SELECT count(*) FROM "`+strings.ReplaceAll(name, `"`, `""`)+`"`); n == 0 {
		t.Error("the conformance suite wrote no record in the named table")
	}
	if n := count(t, pool, `SELECT count(*) FROM idempotency`); n != 0 {
		t.Errorf("%d records in the default table, want none", n)
	}
	mustExec(t, pool, `UPDATE "`+strings.ReplaceAll(name, `"`, `""`)+`" SET expiration = now() - interval '1 hour'`)
	if _, err := s.DeleteExpired(ctx, 100); err != nil {
		t.Fatal(err)
	}
	if n := count(t, pool, `SELECT count(*) FROM "`+strings.ReplaceAll(name, `"`, `""`)+`"`); n != 0 {
		t.Errorf("%d records left after DeleteExpired, want none", n)
	}
}

// TestNewReportsEveryProblem: New names each problem of its arguments.
func TestNewReportsEveryProblem(t *testing.T) {
	for _, tc := range []struct {
		name  string
		db    pgstore.DB
		table string
		want  []string
	}{
		{"nil DB and empty table", nil, "", []string{"DB is nil", "empty table name"}},
		{"NUL", newPool(t, nil), "a\x00b", []string{"NUL"}},
		{"too long", newPool(t, nil), strings.Repeat("t", 64), []string{"64 bytes"}},
	} {
		_, err := pgstore.New(tc.db, pgstore.WithTable(tc.table))
		for _, w := range tc.want {
			if err == nil || !strings.Contains(err.Error(), w) {
				t.Errorf("%s: New: %v, want an error naming %q", tc.name, err, w)
			}
		}
	}
	if _, err := pgstore.New(newPool(t, nil), pgstore.WithTable(strings.Repeat("t", 63))); err != nil {
		t.Errorf("a 63-byte table name: %v", err)
	}
	if _, err := pgstore.New(nil); err == nil || !strings.Contains(err.Error(), "DB is nil") {
		t.Errorf("New(nil): %v, want an error naming the nil DB", err)
	}
}
