package main

// The duplicate-delivery check once per store (the same message twice, one
// provider call): the real bootstrap under the Lambda Runtime Interface
// Emulator, with SQSONCE_STORE set to each store and its server started by
// the test on loopback.

import (
	"context"
	"crypto/rand"
	"fmt"
	"os"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/redis/go-redis/v9"

	"github.com/sqsonce/sqsonce/internal/testenv/pgserver"
	"github.com/sqsonce/sqsonce/internal/testenv/redisserver"
)

var (
	redisSrv = redisserver.New()
	pgSrv    = pgserver.New()
)

func closeStoreServers() {
	for _, s := range []interface{ Close() error }{redisSrv, pgSrv} {
		if err := s.Close(); err != nil {
			fmt.Fprintln(os.Stderr, err)
		}
	}
}

// TestE2EPerStore sends the same message twice to the function on each
// store and checks that exactly one provider call appears in the request
// log, the second delivery being replayed from the store, which holds the
// completed record.
func TestE2EPerStore(t *testing.T) {
	rie := findRIE(t)
	bootstrap := buildBootstrap(t)
	stores := []struct {
		name string
		env  func(t *testing.T) map[string]string
		// status reads the record's status from the store.
		status func(t *testing.T, env map[string]string, id string) string
	}{
		{storeDynamoDB, func(*testing.T) map[string]string { return nil }, nil}, // read from the deployment's table
		{storeRedis, func(t *testing.T) map[string]string {
			return map[string]string{envStore: storeRedis, envRedisURL: redisSrv.URL(t)}
		}, func(t *testing.T, env map[string]string, id string) string {
			opts, err := redis.ParseURL(env[envRedisURL])
			if err != nil {
				t.Fatal(err)
			}
			rdb := redis.NewClient(opts)
			defer rdb.Close()
			st, err := rdb.HGet(context.Background(), id, "status").Result()
			if err != nil {
				t.Fatalf("read the record from Redis: %v", err)
			}
			return st
		}},
		{storePostgres, func(t *testing.T) map[string]string {
			return map[string]string{envStore: storePostgres, envPostgresURL: pgSrv.NewDatabase(t)}
		}, func(t *testing.T, env map[string]string, id string) string {
			ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
			defer cancel()
			conn, err := pgx.Connect(ctx, env[envPostgresURL])
			if err != nil {
				t.Fatal(err)
			}
			defer conn.Close(ctx)
			var st string
			if err := conn.QueryRow(ctx, `SELECT status FROM idempotency WHERE id = $1`, id).Scan(&st); err != nil {
				t.Fatalf("read the record from PostgreSQL: %v", err)
			}
			return st
		}},
	}
	for _, st := range stores {
		t.Run(st.name, func(t *testing.T) {
			extra := st.env(t)
			if extra == nil {
				extra = map[string]string{}
			}
			// A namespace of its own: the Redis server outlives one test.
			extra[envNamespace] = "summarise-" + strings.ToLower(rand.Text()[:8])
			d := newDeployment(t, extra)
			e := d.start(t, rie, bootstrap)
			ev := loadFixture(t, "duplicate-delivery.json")
			wantFailed(t, "first delivery", e.invoke(t, ev))
			wantFailed(t, "second delivery", e.invoke(t, ev))

			calls := requestLog(t, d.requestLog)
			if len(calls) != 1 {
				t.Fatalf("request log has %d lines, want exactly 1: %+v", len(calls), calls)
			}
			var outcomes []string
			for _, l := range e.logLines(t, "idempotency") {
				outcomes = append(outcomes, fmt.Sprint(l["outcome"], "/", l["source"]))
			}
			// The claim is logged at DEBUG, below the function's INFO.
			if !slices.Equal(outcomes, []string{"replayed/store"}) {
				t.Errorf("outcomes %v, want one line: replayed from the store", outcomes)
			}
			var status string
			if st.name == storeDynamoDB {
				status = attr(getItem(t, d.db, d.table, calls[0].RecordID), "status")
			} else {
				status = st.status(t, d.env, calls[0].RecordID)
			}
			if status != "COMPLETED" {
				t.Errorf("record %s in the %s store is %q, want COMPLETED", calls[0].RecordID, st.name, status)
			}
		})
	}
}
