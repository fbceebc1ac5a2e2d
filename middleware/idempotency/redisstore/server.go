package redisstore

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"sync"

	"github.com/redis/go-redis/v9"
)

// checkClient reports what makes rdb unfit for the store, before any
// command: a client type whose routing can move a live key (Ring), or
// one that does not end a command at its context's deadline.
func checkClient(rdb redis.UniversalClient) error {
	switch c := rdb.(type) {
	case *redis.Client:
		if !c.Options().ContextTimeoutEnabled {
			return errContextTimeout
		}
	case *redis.ClusterClient:
		if !c.Options().ContextTimeoutEnabled {
			return errContextTimeout
		}
	case *redis.Ring:
		return errors.New("redisstore: a *redis.Ring is refused: when a shard fails its heartbeat, Ring maps its keys " +
			"to another shard, where a second worker can claim a key whose lease is live; use a *redis.Client " +
			"(one node, or NewFailoverClient for Sentinel) or a *redis.ClusterClient")
	default:
		return fmt.Errorf("redisstore: a %T is not a client New can check; pass a *redis.Client or a *redis.ClusterClient", rdb)
	}
	return nil
}

var errContextTimeout = errors.New("redisstore: the client ignores context deadlines: set ContextTimeoutEnabled: true " +
	"in its options, so that a step ends at its context's deadline (else a stalled read waits out ReadTimeout, " +
	"past the invocation's deadline)")

// nodes runs fn on every node New must check: the client's server, or
// every node of a Cluster (replicas included: a failover promotes them).
func nodes(ctx context.Context, rdb redis.UniversalClient, fn func(ctx context.Context, c *redis.Client) error) error {
	switch c := rdb.(type) {
	case *redis.Client:
		return fn(ctx, c)
	case *redis.ClusterClient:
		var mu sync.Mutex
		var errs []error
		err := c.ForEachShard(ctx, func(ctx context.Context, node *redis.Client) error {
			if err := fn(ctx, node); err != nil {
				mu.Lock()
				errs = append(errs, err)
				mu.Unlock()
			}
			return nil
		})
		return errors.Join(append(errs, err)...)
	}
	return nil
}

// checkServers reports every node whose configuration breaks the store's
// promise: an eviction policy other than noeviction, or (when maxData is
// above DefaultMaxData) limits that refuse a result of maxData bytes.
func checkServers(ctx context.Context, rdb redis.UniversalClient, maxData int) error {
	return nodes(ctx, rdb, func(ctx context.Context, c *redis.Client) error {
		addr := c.Options().Addr
		policy, err := evictionPolicy(ctx, c)
		if err != nil {
			return fmt.Errorf("redisstore: server %s: %w", addr, err)
		}
		if policy != "noeviction" {
			return fmt.Errorf("redisstore: server %s: maxmemory-policy is %s: under memory pressure the server "+
				"evicts keys with an expiry, which every record has, and a live claim or a completed record "+
				"vanishes (the operation then runs again); set maxmemory-policy to noeviction "+
				"(ElastiCache: in the cluster's parameter group)", addr, policy)
		}
		if maxData > DefaultMaxData {
			return checkLimits(ctx, c, addr, maxData)
		}
		return nil
	})
}

// evictionPolicy returns the server's maxmemory-policy, from INFO memory
// (which managed services such as ElastiCache answer) or else from CONFIG
// GET (which they disable).
func evictionPolicy(ctx context.Context, c *redis.Client) (string, error) {
	info, infoErr := c.Info(ctx, "memory").Result()
	if infoErr == nil {
		if p, ok := infoField(info, "maxmemory_policy"); ok {
			return p, nil
		}
		infoErr = errors.New("no maxmemory_policy in its reply")
	}
	cfg, cfgErr := c.ConfigGet(ctx, "maxmemory-policy").Result()
	if cfgErr == nil {
		if p, ok := cfg["maxmemory-policy"]; ok {
			return p, nil
		}
		cfgErr = errors.New("no maxmemory-policy in its reply")
	}
	return "", fmt.Errorf("cannot read the server's maxmemory-policy, so cannot tell that it never evicts a record "+
		"(INFO memory: %v; CONFIG GET: %v); let the client's user run INFO", infoErr, cfgErr)
}

// infoField returns the value of name in an INFO reply.
func infoField(info, name string) (string, bool) {
	for line := range strings.Lines(info) {
		k, v, ok := strings.Cut(strings.TrimRight(line, "\r\n"), ":")
		if ok && k == name {
			return v, true
		}
	}
	return "", false
}

// commandOverhead is what a completion's command holds besides the
// result, at most: the script or its digest, the key, the other arguments.
const commandOverhead = 64 << 10

// checkLimits refuses a maxData that the server's protocol limits would
// refuse, where CONFIG GET can read them.
func checkLimits(ctx context.Context, c *redis.Client, addr string, maxData int) error {
	var errs []error
	for _, name := range []string{"proto-max-bulk-len", "client-query-buffer-limit"} {
		cfg, err := c.ConfigGet(ctx, name).Result()
		if err != nil {
			continue // not readable (ElastiCache): the caller vouches for it
		}
		n, err := strconv.ParseInt(cfg[name], 10, 64)
		if err != nil {
			continue
		}
		if n < int64(maxData)+commandOverhead {
			errs = append(errs, fmt.Errorf("redisstore: WithMaxData(%d): server %s has %s %d, which refuses a "+
				"completion that long (the result plus up to %d bytes)", maxData, addr, name, n, commandOverhead))
		}
	}
	return errors.Join(errs...)
}
