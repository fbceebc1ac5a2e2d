package linearize

import (
	"bytes"
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/anishathalye/porcupine"
	"github.com/redis/go-redis/v9"

	"github.com/sqsonce/sqsonce/internal/testenv/redisserver"
	"github.com/sqsonce/sqsonce/middleware/idempotency/redisstore"
)

// script reports whether a write to Redis is a script's call (EVALSHA,
// or EVAL after NOSCRIPT): redisstore writes records with scripts only,
// so that the handshake of a new connection (HELLO, CLIENT SETINFO) and
// the Cluster's CLUSTER SLOTS are not counted as the operation sent.
func script(b []byte) bool {
	head := bytes.ToLower(b[:min(len(b), 32)])
	return bytes.Contains(head, []byte("\r\neval"))
}

// redisSubject is redisstore on the clients rdb returns, one per client,
// each dialing through f.
func redisSubject(t *testing.T, name string, f *tcpFaults, faults *tally, rdb func(client int) redis.UniversalClient) subject {
	t.Helper()
	s := subject{name: name, adapter: adapter{unit: time.Millisecond, seconds: true}, faults: faults,
		leanReplaced: true, sweeps: true}
	s.inject = append(s.inject, f.killConns)
	for i := range *flagClients {
		c := rdb(i)
		t.Cleanup(func() { c.Close() })
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		st, err := redisstore.New(ctx, c)
		cancel()
		if err != nil {
			t.Fatal(err)
		}
		s.conns = append(s.conns, conn{store: st, inspect: st,
			begin: func() { f.begin(i) }, sent: func() int { return f.end(i) }})
	}
	return s
}

// TestRedis: redisstore's record operations on redis-server, by
// concurrent clients (go-redis, which sends a command again on a new
// connection when its connection fails) whose connections are killed,
// are linearizable.
func TestRedis(t *testing.T) {
	t.Parallel()
	cfg := defaults()
	addr := redisServer.Addr(t)
	faults := newTally()
	f := newTCPFaults(cfg.seed, faults)
	f.counts = script
	s := redisSubject(t, "redis", f, faults, func(i int) redis.UniversalClient {
		return redis.NewClient(&redis.Options{Addr: addr, ContextTimeoutEnabled: true, Dialer: f.dial(i)})
	})
	exercise(t, s, cfg, porcupine.Ok)
}

// TestRedisCluster: the same on a Redis Cluster of a primary and its
// replica (go-redis's ClusterClient, which follows the slots to the new
// primary), failed over twice during the run (to the replica and back),
// its connections killed, is linearizable. Not three times: a master
// votes for a second failover of the same master only 2 node timeouts
// (30 s by default) after the first.
func TestRedisCluster(t *testing.T) {
	t.Parallel()
	cfg := defaults()
	cluster := redisserver.StartReplicated(t)
	faults := newTally()
	f := newTCPFaults(cfg.seed, faults)
	f.counts = script
	s := redisSubject(t, "redis-cluster", f, faults, func(i int) redis.UniversalClient {
		return redis.NewClusterClient(&redis.ClusterOptions{Addrs: cluster.Addrs(), ContextTimeoutEnabled: true, Dialer: f.dial(i)})
	})
	s.inject = append(s.inject, at([]float64{0.3, 0.7}, func() error {
		began := time.Now()
		primary, err := cluster.Failover(30 * time.Second)
		if err != nil {
			return err
		}
		faults.add("failover")
		t.Logf("redis-cluster: failed over to %s in %v", primary, time.Since(began).Round(time.Millisecond))
		return nil
	}, func(err error) { t.Errorf("redis-cluster: %v", fmt.Errorf("failover: %w", err)) }))
	exercise(t, s, cfg, porcupine.Ok)
}
