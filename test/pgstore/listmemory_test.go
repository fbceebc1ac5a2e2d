package pgstore_test

import (
	"context"
	"net"
	"sync/atomic"
	"testing"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/sqsonce/sqsonce/middleware/idempotency/driver"
)

// readCounter counts the bytes a connection reads from the server.
type readCounter struct {
	net.Conn
	n *atomic.Int64
}

func (c readCounter) Read(p []byte) (int, error) {
	n, err := c.Conn.Read(p)
	c.n.Add(int64(n))
	return n, err
}

// TestListBoundedByResults: List reads a page of records at a time, and a
// page's results are bounded in bytes, not only in rows. Before, a page
// was 500 rows whatever their results: on a table of large results (the
// table keeps every result in full; or rows another writer put there)
// sqsonce-ops list read 500 of them, up to 500 MiB of 1 MiB results,
// before it saw the first record. Here 48 records of 1 MiB: the first
// record is yielded after far less than all of them was read, and every
// record is listed once, in full.
func TestListBoundedByResults(t *testing.T) {
	cfg, err := pgxpool.ParseConfig(server.NewDatabase(t))
	if err != nil {
		t.Fatal(err)
	}
	var read atomic.Int64
	dial := cfg.ConnConfig.DialFunc
	cfg.ConnConfig.DialFunc = func(ctx context.Context, network, addr string) (net.Conn, error) {
		c, err := dial(ctx, network, addr)
		if err != nil {
			return nil, err
		}
		return readCounter{Conn: c, n: &read}, nil
	}
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	pool, err := pgxpool.NewWithConfig(ctx, cfg)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(pool.Close)
	s := newStore(t, pool)
	if err := s.CreateSchema(ctx); err != nil {
		t.Fatal(err)
	}
	const records, size = 48, 1 << 20
	if _, err := pool.Exec(ctx, `INSERT INTO idempotency (id, status, expiration, in_progress_expiration, data, lease_owner)
		SELECT 'big#' || lpad(g::text, 3, '0'), 'COMPLETED', now() + interval '1 day', now(), decode(repeat('61', $1), 'hex'), 'o'
		FROM generate_series(1, $2) AS g`, size, records); err != nil {
		t.Fatal(err)
	}
	// A small record after them: a page cut by bytes is not the last.
	if _, err := pool.Exec(ctx, `INSERT INTO idempotency (id, status, expiration, in_progress_expiration, data, lease_owner)
		VALUES ('big#zzz', 'COMPLETED', now() + interval '1 day', now(), '"x"', 'o')`); err != nil {
		t.Fatal(err)
	}
	read.Store(0)
	seen := map[string]bool{}
	var atFirst int64 = -1
	for rec, err := range s.List(ctx, driver.ListOptions{Prefix: "big#"}) {
		if err != nil {
			t.Fatalf("list: %v", err)
		}
		if atFirst < 0 {
			atFirst = read.Load()
		}
		if seen[rec.ID] {
			t.Errorf("%s listed twice", rec.ID)
		}
		seen[rec.ID] = true
		if want := size; rec.ID != "big#zzz" && (len(rec.Data) != want || rec.Size != want) {
			t.Errorf("%s: %d bytes of result (size %d), want %d", rec.ID, len(rec.Data), rec.Size, want)
		}
	}
	if len(seen) != records+1 {
		t.Errorf("listed %d records, want %d", len(seen), records+1)
	}
	if limit := int64(16 << 20); atFirst > limit {
		t.Errorf("the first record was yielded after reading %d MiB from the server (of %d MiB of results): want at most %d MiB",
			atFirst>>20, records*size>>20, limit>>20)
	}
}
