package pgserver_test

import (
	"context"
	"os"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/sqsonce/sqsonce/internal/testenv/pgserver"
)

var pg = pgserver.New()

func TestMain(m *testing.M) { os.Exit(pg.Run(m)) }

func TestNewDatabase(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	conn, err := pgx.Connect(ctx, pg.NewDatabase(t))
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close(ctx)
	var db string
	var n int
	if err := conn.QueryRow(ctx, "SELECT current_database(), (SELECT count(*) FROM pg_tables WHERE schemaname = 'public')").Scan(&db, &n); err != nil {
		t.Fatal(err)
	}
	if n != 0 {
		t.Errorf("new database %s has %d tables, want none", db, n)
	}
	if os.Getenv(pgserver.EnvURL) == "" {
		var addr string
		if err := conn.QueryRow(ctx, "SELECT host(inet_server_addr())").Scan(&addr); err != nil {
			t.Fatal(err)
		}
		if addr != "127.0.0.1" {
			t.Errorf("server answers on %s, want 127.0.0.1", addr)
		}
	}
}
