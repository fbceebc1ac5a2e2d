package redisstore_test

import (
	"context"
	"os"
	"testing"

	"github.com/redis/go-redis/v9"

	"github.com/sqsonce/sqsonce/internal/testenv/redisserver"
	"github.com/sqsonce/sqsonce/middleware/idempotency/driver"
	"github.com/sqsonce/sqsonce/middleware/idempotency/redisstore"
	"github.com/sqsonce/sqsonce/middleware/idempotency/storetest"
)

var (
	server  = redisserver.New()
	cluster = redisserver.NewCluster()
)

func TestMain(m *testing.M) {
	code := server.Run(m)
	_ = cluster.Close()
	os.Exit(code)
}

// newClient returns a client of the test server, closed when t ends.
func newClient(t testing.TB) *redis.Client {
	t.Helper()
	rdb := redis.NewClient(&redis.Options{Addr: server.Addr(t), PoolSize: 32, ContextTimeoutEnabled: true})
	t.Cleanup(func() { rdb.Close() })
	return rdb
}

func newStore(t testing.TB, rdb redis.UniversalClient, opts ...redisstore.Option) *redisstore.Store {
	t.Helper()
	s, err := redisstore.New(context.Background(), rdb, opts...)
	if err != nil {
		t.Fatal(err)
	}
	return s
}

func TestConformance(t *testing.T) {
	s := newStore(t, newClient(t))
	storetest.Run(t, func(t *testing.T) driver.Store { return s })
}

// TestConformanceCluster runs the suite through a redis.ClusterClient on a
// one-node Redis Cluster: every script names its one key, so the client
// routes it to that key's slot.
func TestConformanceCluster(t *testing.T) {
	rdb := redis.NewClusterClient(&redis.ClusterOptions{Addrs: []string{cluster.Addr(t)}, PoolSize: 32, ContextTimeoutEnabled: true})
	t.Cleanup(func() { rdb.Close() })
	s := newStore(t, rdb)
	storetest.Run(t, func(t *testing.T) driver.Store { return s })
}
