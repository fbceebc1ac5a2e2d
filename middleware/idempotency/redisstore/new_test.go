package redisstore_test

import (
	"context"
	"crypto/rand"
	"strings"
	"testing"

	"github.com/redis/go-redis/v9"

	"github.com/sqsonce/sqsonce/middleware/idempotency/redisstore"
)

// setConfig sets a server parameter for the rest of the test and restores
// it after.
func setConfig(t *testing.T, rdb *redis.Client, name, value string) {
	t.Helper()
	ctx := context.Background()
	old, err := rdb.ConfigGet(ctx, name).Result()
	if err != nil {
		t.Fatal(err)
	}
	if err := rdb.ConfigSet(ctx, name, value).Err(); err != nil {
		t.Fatalf("CONFIG SET %s %s: %v", name, value, err)
	}
	t.Cleanup(func() {
		if err := rdb.ConfigSet(context.Background(), name, old[name]).Err(); err != nil {
			t.Errorf("restore %s: %v", name, err)
		}
	})
}

func wantErr(t *testing.T, err error, parts ...string) {
	t.Helper()
	if err == nil {
		t.Fatalf("New succeeded, want an error saying %q", parts)
	}
	for _, p := range parts {
		if !strings.Contains(err.Error(), p) {
			t.Errorf("error %q does not say %q", err, p)
		}
	}
}

// TestNewRefusesEviction: a server that may evict a record (every record
// has an expiry, so every volatile-* and allkeys-* policy can) is refused
// at New; noeviction is accepted. Issue 15, item 8.
func TestNewRefusesEviction(t *testing.T) {
	rdb := newClient(t)
	ctx := context.Background()
	for _, policy := range []string{"volatile-lru", "volatile-lfu", "volatile-ttl", "volatile-random", "allkeys-lru", "allkeys-lfu", "allkeys-random"} {
		t.Run(policy, func(t *testing.T) {
			setConfig(t, rdb, "maxmemory-policy", policy)
			_, err := redisstore.New(ctx, rdb)
			wantErr(t, err, "maxmemory-policy is "+policy, "noeviction")
		})
	}
	t.Run("noeviction", func(t *testing.T) {
		setConfig(t, rdb, "maxmemory-policy", "noeviction")
		if _, err := redisstore.New(ctx, rdb); err != nil {
			t.Fatalf("New on a noeviction server: %v", err)
		}
	})
}

// TestNewRefusesEvictionOnClusterNode: through a ClusterClient, every node
// is checked.
func TestNewRefusesEvictionOnClusterNode(t *testing.T) {
	node := redis.NewClient(&redis.Options{Addr: cluster.Addr(t)})
	t.Cleanup(func() { node.Close() })
	setConfig(t, node, "maxmemory-policy", "volatile-lru")
	rdb := redis.NewClusterClient(&redis.ClusterOptions{Addrs: []string{cluster.Addr(t)}, ContextTimeoutEnabled: true})
	t.Cleanup(func() { rdb.Close() })
	_, err := redisstore.New(context.Background(), rdb)
	_, port, _ := strings.Cut(cluster.Addr(t), ":")
	wantErr(t, err, ":"+port+": maxmemory-policy is volatile-lru") // the node as the cluster names it
}

// TestNewReadsPolicyWithoutConfig: a server that disables CONFIG (as
// ElastiCache does) is checked through INFO memory; one that allows
// neither is refused, saying so.
func TestNewReadsPolicyWithoutConfig(t *testing.T) {
	admin := newClient(t)
	ctx := context.Background()
	user := func(t *testing.T, rules ...any) *redis.Client {
		t.Helper()
		name, pass := "u"+strings.ToLower(rand.Text()), rand.Text()
		args := append([]any{"ACL", "SETUSER", name, "reset", "on", ">" + pass, "~*", "&*", "+@all"}, rules...)
		if err := admin.Do(ctx, args...).Err(); err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { admin.Do(context.Background(), "ACL", "DELUSER", name) })
		c := redis.NewClient(&redis.Options{Addr: server.Addr(t), Username: name, Password: pass, ContextTimeoutEnabled: true})
		t.Cleanup(func() { c.Close() })
		return c
	}
	t.Run("no CONFIG: INFO says noeviction", func(t *testing.T) {
		if _, err := redisstore.New(ctx, user(t, "-config")); err != nil {
			t.Fatalf("New: %v", err)
		}
	})
	t.Run("no CONFIG: INFO says volatile-lru", func(t *testing.T) {
		setConfig(t, admin, "maxmemory-policy", "volatile-lru")
		_, err := redisstore.New(ctx, user(t, "-config"))
		wantErr(t, err, "maxmemory-policy is volatile-lru")
	})
	t.Run("no INFO: CONFIG GET says volatile-lru", func(t *testing.T) {
		setConfig(t, admin, "maxmemory-policy", "volatile-lru")
		_, err := redisstore.New(ctx, user(t, "-info"))
		wantErr(t, err, "maxmemory-policy is volatile-lru")
	})
	t.Run("neither", func(t *testing.T) {
		_, err := redisstore.New(ctx, user(t, "-info", "-config"))
		wantErr(t, err, "cannot read the server's maxmemory-policy", "INFO memory", "CONFIG GET", "NOPERM")
	})
}

// TestNewRefusesRing: Ring's client-side sharding moves a key to another
// shard when one fails its heartbeat, where a second worker claims it.
// Issue 15, item 9.
func TestNewRefusesRing(t *testing.T) {
	ring := redis.NewRing(&redis.RingOptions{Addrs: map[string]string{"one": server.Addr(t)}, ContextTimeoutEnabled: true})
	t.Cleanup(func() { ring.Close() })
	_, err := redisstore.New(context.Background(), ring)
	wantErr(t, err, "*redis.Ring is refused", "*redis.Client", "*redis.ClusterClient")
}

// TestNewRefusesClientIgnoringDeadlines: without ContextTimeoutEnabled, a
// stalled read waits out ReadTimeout past the context's deadline.
func TestNewRefusesClientIgnoringDeadlines(t *testing.T) {
	ctx := context.Background()
	single := redis.NewClient(&redis.Options{Addr: server.Addr(t)})
	t.Cleanup(func() { single.Close() })
	_, err := redisstore.New(ctx, single)
	wantErr(t, err, "ContextTimeoutEnabled")
	clustered := redis.NewClusterClient(&redis.ClusterOptions{Addrs: []string{cluster.Addr(t)}})
	t.Cleanup(func() { clustered.Close() })
	_, err = redisstore.New(ctx, clustered)
	wantErr(t, err, "ContextTimeoutEnabled")
}

// TestNewReportsEveryProblem: New reports all of its arguments' problems
// in one error.
func TestNewReportsEveryProblem(t *testing.T) {
	ring := redis.NewRing(&redis.RingOptions{Addrs: map[string]string{"one": server.Addr(t)}})
	t.Cleanup(func() { ring.Close() })
	_, err := redisstore.New(context.Background(), ring, redisstore.WithCompressAbove(-1), redisstore.WithMaxData(0))
	wantErr(t, err, "Ring", "WithCompressAbove(-1)", "WithMaxData(0)")
	_, err = redisstore.New(context.Background(), nil, redisstore.WithMaxData(1<<30))
	wantErr(t, err, "client is nil", "WithMaxData(1073741824)")
}

// TestNewChecksLimitsAboveDefault: a WithMaxData above the default is
// checked against the server's protocol limits where CONFIG can read them.
func TestNewChecksLimitsAboveDefault(t *testing.T) {
	rdb := newClient(t)
	ctx := context.Background()
	if _, err := redisstore.New(ctx, rdb, redisstore.WithMaxData(8<<20)); err != nil {
		t.Fatalf("WithMaxData(8 MiB) on a server with the default limits (512 MB, 1 GB): %v", err)
	}
	setConfig(t, rdb, "proto-max-bulk-len", "4mb")
	_, err := redisstore.New(ctx, rdb, redisstore.WithMaxData(8<<20))
	wantErr(t, err, "WithMaxData(8388608)", "proto-max-bulk-len 4194304")
}
