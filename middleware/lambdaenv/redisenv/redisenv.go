// Package redisenv lets [lambdaenv.Load] open the Redis store: with
// SQSONCE_STORE=redis and SQSONCE_REDIS_URL (redis:// or rediss://), a
// function's main imports it for its side effect:
//
//	import _ "github.com/sqsonce/sqsonce/middleware/lambdaenv/redisenv"
//
// It is a module of its own so that only a function on Redis requires
// go-redis. The client it opens ends each call at the invocation's
// deadline (ContextTimeoutEnabled); Function.Close closes it. With
// SQSONCE_REDIS_CLUSTER=on it is a Redis Cluster client; with
// SQSONCE_REDIS_KEY_PREFIX the store's keys carry the prefix
// (redisstore.WithKeyPrefix, or WithUnseparatedKeyPrefix with
// SQSONCE_REDIS_KEY_PREFIX_UNSEPARATED=on), as sqsonce-ops reads them.
package redisenv

import (
	"context"
	"errors"
	"fmt"

	"github.com/redis/go-redis/v9"

	"github.com/sqsonce/sqsonce/internal/redact"
	"github.com/sqsonce/sqsonce/middleware/idempotency/driver"
	"github.com/sqsonce/sqsonce/middleware/idempotency/redisstore"
	"github.com/sqsonce/sqsonce/middleware/lambdaenv"
	"github.com/sqsonce/sqsonce/middleware/lambdaenv/envvars"
)

func init() { lambdaenv.RegisterStore(envvars.StoreRedis, Open) }

// Open opens the Redis store on s.RedisURL (a Redis Cluster with
// s.RedisCluster, keys prefixed with s.RedisKeyPrefix) and checks the
// server answers, within lambdaenv.OpenTimeout; lambdaenv calls it for
// SQSONCE_STORE=redis. Its errors name SQSONCE_REDIS_URL (or
// SQSONCE_REDIS_CLUSTER) and never quote the URL or its password.
func Open(ctx context.Context, s envvars.Settings) (driver.Store, func() error, error) {
	var rdb redis.UniversalClient
	if s.RedisCluster {
		opts, err := redis.ParseClusterURL(s.RedisURL)
		if err != nil {
			return nil, nil, fmt.Errorf("lambdaenv: %s is not a redis:// or rediss:// URL of a Redis Cluster (%s)", envvars.EnvRedisURL, redact.Digest(err.Error()))
		}
		opts.ContextTimeoutEnabled = true // a call ends at the invocation's deadline
		rdb = redis.NewClusterClient(opts)
	} else {
		opts, err := redis.ParseURL(s.RedisURL)
		if err != nil {
			return nil, nil, fmt.Errorf("lambdaenv: %s is not a redis:// or rediss:// URL (%s)", envvars.EnvRedisURL, redact.Digest(err.Error()))
		}
		opts.ContextTimeoutEnabled = true // a call ends at the invocation's deadline
		rdb = redis.NewClient(opts)
	}
	prefix := redisstore.WithKeyPrefix(s.RedisKeyPrefix)
	if s.RedisUnseparated {
		prefix = redisstore.WithUnseparatedKeyPrefix(s.RedisKeyPrefix)
	}
	start, cancel := context.WithTimeout(ctx, lambdaenv.OpenTimeout)
	defer cancel()
	st, err := redisstore.New(start, rdb, prefix)
	if err != nil {
		_ = rdb.Close()
		at := envvars.EnvRedisURL
		if s.RedisCluster {
			at += " (" + envvars.EnvRedisCluster + "=on)"
		}
		if errors.Is(start.Err(), context.DeadlineExceeded) && ctx.Err() == nil {
			return nil, nil, fmt.Errorf("lambdaenv: %s: the server did not answer within %v", at, lambdaenv.OpenTimeout)
		}
		return nil, nil, fmt.Errorf("lambdaenv: %s: %w", at, redact.ConnError(s.RedisURL, err))
	}
	return st, rdb.Close, nil
}
