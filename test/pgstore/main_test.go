// Package pgstore_test holds the tests of pgstore that need a PostgreSQL
// server (pgserver): here, in the test module, so that pgstore's own go.mod
// requires no module of the test harness and a user's graph names none.
package pgstore_test

import (
	"context"
	"net"
	"os"
	"sync"
	"testing"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/sqsonce/sqsonce/internal/testenv/pgserver"
	"github.com/sqsonce/sqsonce/middleware/idempotency/driver"
	"github.com/sqsonce/sqsonce/middleware/idempotency/pgstore"
	"github.com/sqsonce/sqsonce/middleware/idempotency/storetest"
)

var server = pgserver.New()

func TestMain(m *testing.M) { os.Exit(server.Run(m)) }

// newPool returns a pool on a new database holding the schema, closed when
// t ends. With a non-nil trips, the pool's connections count their round
// trips into it.
func newPool(t testing.TB, trips *roundTrips) *pgxpool.Pool {
	t.Helper()
	return newPoolOf(t, trips, 16)
}

// newPoolOf is newPool with at most maxConns connections.
func newPoolOf(t testing.TB, trips *roundTrips, maxConns int32) *pgxpool.Pool {
	t.Helper()
	cfg, err := pgxpool.ParseConfig(server.NewDatabase(t))
	if err != nil {
		t.Fatal(err)
	}
	cfg.MaxConns = maxConns
	if trips != nil {
		dial := cfg.ConnConfig.DialFunc
		cfg.ConnConfig.DialFunc = func(ctx context.Context, network, addr string) (net.Conn, error) {
			c, err := dial(ctx, network, addr)
			if err != nil {
				return nil, err
			}
			return &countingConn{Conn: c, trips: trips}, nil
		}
	}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	pool, err := pgxpool.NewWithConfig(ctx, cfg)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(pool.Close)
	if err := newStore(t, pool).CreateSchema(ctx); err != nil {
		t.Fatal(err)
	}
	return pool
}

func newStore(t testing.TB, db pgstore.DB) *pgstore.Store {
	t.Helper()
	s, err := pgstore.New(db)
	if err != nil {
		t.Fatal(err)
	}
	return s
}

func TestConformance(t *testing.T) {
	s := newStore(t, newPool(t, nil))
	storetest.Run(t, func(t *testing.T) driver.Store { return s })
}

// roundTrips counts the requests clients send: a write to the server after
// a read from it (or the first write) starts a round trip; writes that
// follow each other without a read (a pipelined batch) are one.
type roundTrips struct {
	mu sync.Mutex
	n  int
}

func (r *roundTrips) take() int {
	r.mu.Lock()
	defer r.mu.Unlock()
	n := r.n
	r.n = 0
	return n
}

type countingConn struct {
	net.Conn
	trips *roundTrips
	mu    sync.Mutex
	wrote bool // the last operation was a write
}

func (c *countingConn) Write(p []byte) (int, error) {
	c.mu.Lock()
	if !c.wrote {
		c.wrote = true
		c.trips.mu.Lock()
		c.trips.n++
		c.trips.mu.Unlock()
	}
	c.mu.Unlock()
	return c.Conn.Write(p)
}

func (c *countingConn) Read(p []byte) (int, error) {
	c.mu.Lock()
	c.wrote = false
	c.mu.Unlock()
	return c.Conn.Read(p)
}
