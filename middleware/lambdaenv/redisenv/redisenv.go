// Package redisenv lets [lambdaenv.Load] open the Redis store: with
// SQSONCE_STORE=redis and SQSONCE_REDIS_URL (redis:// or rediss://), a
// function's main imports it for its side effect:
//
//	import _ "github.com/sqsonce/sqsonce/middleware/lambdaenv/redisenv"
//
// It is a module of its own so that only a function on Redis requires
// go-redis. The client it opens ends each call at the invocation's
// deadline (ContextTimeoutEnabled); Function.Close closes it.
package redisenv

import (
	"context"
	"fmt"

	"github.com/redis/go-redis/v9"

	"github.com/sqsonce/sqsonce/internal/redact"
	"github.com/sqsonce/sqsonce/middleware/idempotency/driver"
	"github.com/sqsonce/sqsonce/middleware/idempotency/redisstore"
	"github.com/sqsonce/sqsonce/middleware/lambdaenv"
	"github.com/sqsonce/sqsonce/middleware/lambdaenv/envvars"
)

func init() { lambdaenv.RegisterStore(envvars.StoreRedis, Open) }

// Open opens the Redis store on s.RedisURL and checks the server answers;
// lambdaenv calls it for SQSONCE_STORE=redis. Its errors name
// SQSONCE_REDIS_URL and never quote the URL or its password.
func Open(ctx context.Context, s envvars.Settings) (driver.Store, func() error, error) {
	opts, err := redis.ParseURL(s.RedisURL)
	if err != nil {
		return nil, nil, fmt.Errorf("lambdaenv: %s is not a redis:// or rediss:// URL (%s)", envvars.EnvRedisURL, redact.Digest(err.Error()))
	}
	opts.ContextTimeoutEnabled = true // a call ends at the invocation's deadline
	rdb := redis.NewClient(opts)
	st, err := redisstore.New(ctx, rdb)
	if err != nil {
		_ = rdb.Close()
		return nil, nil, fmt.Errorf("lambdaenv: %s: %w", envvars.EnvRedisURL, redact.ConnError(s.RedisURL, err))
	}
	return st, rdb.Close, nil
}
