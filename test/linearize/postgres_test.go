package linearize

import (
	"context"
	"testing"
	"time"

	"github.com/anishathalye/porcupine"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/sqsonce/sqsonce/internal/testenv/pgserver"
	"github.com/sqsonce/sqsonce/middleware/idempotency/pgstore"
)

// TestPostgres: pgstore's record operations on PostgreSQL 15, by
// concurrent clients (a pgx pool each) whose connections are killed, the
// server crashed (an immediate shutdown) and restarted once and shut down
// fast and restarted once during the run, are linearizable.
//
// pgx never sends a statement again, so each operation reached the
// server at most once; but a statement whose connection died may still
// commit after the client gave up (the server notices a dead client only
// when it writes to it), so an unknown answer may land at any time after
// its call (the subject does not settle).
func TestPostgres(t *testing.T) {
	t.Parallel()
	cfg := defaults()
	pg := pgserver.StartRestartable(t)
	faults := newTally()
	f := newTCPFaults(cfg.seed, faults)
	s := subject{name: "postgres", adapter: adapter{unit: time.Microsecond}, faults: faults,
		pause: 200 * time.Millisecond}
	s.inject = append(s.inject, f.killConns)
	crash := true
	s.inject = append(s.inject, at([]float64{0.3, 0.65}, func() error {
		began := time.Now()
		if err := pg.Restart(crash); err != nil {
			return err
		}
		kind := map[bool]string{true: "restart_crash", false: "restart_fast"}[crash]
		faults.add(kind)
		t.Logf("postgres: %s in %v", kind, time.Since(began).Round(time.Millisecond))
		crash = !crash
		return nil
	}, func(err error) { t.Errorf("postgres: %v", err) }))

	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	for i := range *flagClients {
		pc, err := pgxpool.ParseConfig(pg.URL())
		if err != nil {
			t.Fatal(err)
		}
		pc.MaxConns = 4
		pc.ConnConfig.DialFunc = f.dial(i)
		pool, err := pgxpool.NewWithConfig(ctx, pc)
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(pool.Close)
		st, err := pgstore.New(pool)
		if err != nil {
			t.Fatal(err)
		}
		if i == 0 {
			if err := st.CreateSchema(ctx); err != nil {
				t.Fatal(err)
			}
		}
		s.conns = append(s.conns, conn{store: st, inspect: st,
			begin: func() { f.begin(i) }, sent: func() int { return min(f.end(i), 1) }})
	}
	exercise(t, s, cfg, porcupine.Ok)
}
