package pgserver_test

import (
	"context"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/sqsonce/sqsonce/internal/testenv/pgserver"
)

// TestRestart: a committed row survives a crash of the server and a fast
// restart, and a connection made before a restart is ended by it.
func TestRestart(t *testing.T) {
	r := pgserver.StartRestartable(t)
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	conn, err := pgx.Connect(ctx, r.URL())
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close(ctx)
	if _, err := conn.Exec(ctx, "CREATE TABLE kept (n int); INSERT INTO kept VALUES (1)"); err != nil {
		t.Fatal(err)
	}
	for i, crash := range []bool{true, false} {
		if err := r.Restart(crash); err != nil {
			t.Fatal(err)
		}
		if err := conn.Ping(ctx); err == nil {
			t.Errorf("restart %d (crash %v): a connection from before it still answers", i, crash)
		}
		conn.Close(ctx)
		if conn, err = pgx.Connect(ctx, r.URL()); err != nil {
			t.Fatal(err)
		}
		var n int
		if err := conn.QueryRow(ctx, "SELECT count(*) FROM kept").Scan(&n); err != nil || n != 1 {
			t.Errorf("restart %d (crash %v): %d rows, %v; want the 1 committed", i, crash, n, err)
		}
	}
}
