package redisstore_test

import (
	"os"
	"testing"

	"github.com/redis/go-redis/v9"

	"github.com/sqsonce/sqsonce/internal/redisserver"
	"github.com/sqsonce/sqsonce/middleware/idempotency"
	"github.com/sqsonce/sqsonce/middleware/idempotency/redisstore"
	"github.com/sqsonce/sqsonce/middleware/idempotency/storetest"
)

var server = redisserver.New()

func TestMain(m *testing.M) { os.Exit(server.Run(m)) }

// newClient returns a client of the test server, closed when t ends.
func newClient(t testing.TB) *redis.Client {
	t.Helper()
	rdb := redis.NewClient(&redis.Options{Addr: server.Addr(t), PoolSize: 32})
	t.Cleanup(func() { rdb.Close() })
	return rdb
}

func newStore(t testing.TB, rdb redis.UniversalClient, opts ...redisstore.Option) *redisstore.Store {
	t.Helper()
	s, err := redisstore.New(rdb, opts...)
	if err != nil {
		t.Fatal(err)
	}
	return s
}

func TestConformance(t *testing.T) {
	s := newStore(t, newClient(t))
	storetest.Run(t, func(t *testing.T) idempotency.Store { return s })
}
