// Package redisstore is a [driver.Store] on Redis (or Valkey), through
// github.com/redis/go-redis/v9: one round trip per step, each step one Lua
// script run atomically by the server, completions fenced by a lease owner
// token.
//
//	rdb := redis.NewClient(&redis.Options{Addr: "localhost:6379", ContextTimeoutEnabled: true}) // built once, by main
//	store, err := redisstore.New(ctx, rdb)
//	guard, err := idempotency.New(idempotency.Config{Store: store, Namespace: "summarise"})
//
// # Clients and servers
//
// New takes a *redis.Client (one node, or Sentinel through
// redis.NewFailoverClient) or a *redis.ClusterClient. Every script touches
// one key, the record's, so a step never spans Cluster slots.
//
// New refuses:
//
//   - a *redis.Ring, which moves a failed shard's keys to another shard,
//     where a second worker can claim a live key;
//   - a client without ContextTimeoutEnabled, whose stalled reply would
//     outlive the step's deadline;
//   - a server, or any node of a Cluster, whose maxmemory-policy is not
//     noeviction (an eviction forgets a claim), or that answers neither
//     INFO memory nor CONFIG GET. Set the policy on every node: a failover
//     promotes a replica with its own configuration.
//
// # Records
//
// A record is a Redis hash at the record id (after [WithKeyPrefix]'s prefix and "#"), whose
// fields bear the names of the attributes of dynamostore's items:
//
//	status                  INPROGRESS or COMPLETED
//	expiration              epoch seconds
//	in_progress_expiration  epoch milliseconds: the lease's end
//	data                    the result, as the operation's JSON (gzipped when data_encoding says so)
//	validation              payload digest, when validation is on
//	lease_owner             the lease owner token
//	data_encoding           "gzip" when data is compressed
//	data_omitted            "true" when the result was too large to store
//	replaced                what a takeover replaced (INPROGRESS records only)
//	quarantined             epoch milliseconds: when strict mode quarantined the claim (INPROGRESS records only)
//	strict_lease_expiration epoch milliseconds: a strict claim's lease end (its in_progress_expiration is its expiration)
//
// A released key holds, until a minute after its Release's deadline, a
// marker with only released_by and release_call, which claims treat as
// no record.
//
// The key expires with the record: each claim and completion sets
// PEXPIREAT to the record's ExpiresAt, so Redis deletes what no delivery
// can use any more. A record past its expiration but not yet deleted (the
// claim compares with the caller's clock) is claimable like an absent one.
//
// # Large results
//
// A result longer than [WithCompressAbove] (default 64 KiB) is stored
// gzip-compressed when that makes it smaller. A result that does not fit in
// [WithMaxData] (default 960 KiB) even compressed is left out, as
// dynamostore leaves it out: the record is completed with data_omitted
// set, an error is logged ([WithLogger]), and every delivery gets the zero
// value of the result ([Store.Complete]). A sealed result
// (idempotency.Config.Sealer) barely compresses: where its seal would not
// fit, the guard gzips the result before sealing it ([Store.FitsData]), so
// a compressible result is kept sealed as unsealed; an incompressible one
// of about 720 to 960 KiB fits unsealed but not sealed (a seal is about
// 4/3 of the result).
//
// # Round trips
//
// After the scripts are cached on the server:
//
//	claim (free key)          1 EVALSHA
//	in progress (held key)    1 EVALSHA, which returns the holder's record
//	replay (completed key)    1 EVALSHA, which returns the record and result
//	complete                  1 EVALSHA (compressed or left out alike)
//	release                   1 EVALSHA
//	complete + attached write refused before any command (ErrAttachUnsupported)
//
// The first run of a script on a server that does not have it cached is
// answered NOSCRIPT and sent again with EVAL: one round trip more, once per
// script and server. Each step ends at its context's deadline.
//
// # Rules
//
// Acquire claims the key when no record exists, the record expired, or it is
// INPROGRESS with its lease passed; otherwise it returns the record that
// holds the key, in the same reply. The record a claim replaced is
// returned without its result. Complete and Release act only on an
// INPROGRESS record owned by the caller and otherwise fail with
// [driver.ErrLeaseLost].
//
// go-redis sends a command again after a read timeout, and the first run
// may have been applied; each step then reports what that run did. A claim
// sent again by its owner succeeds and returns the record its first run
// replaced (so a takeover is reported as one); a Complete that finds the
// record already COMPLETED by its own owner succeeds without writing again,
// and returns the result as stored then; a Release whose first run
// released the record succeeds (a new Release call does not).
//
// # Attached writes
//
// [idempotency.Attach] fails with [driver.ErrAttachUnsupported] with
// this store: Redis cannot commit other writes atomically with the
// completion. Use pgstore or dynamostore for that.
//
// # Durability
//
// A claim is as durable as the Redis write that made it: a failover before
// it reached a replica, or a restart without appendfsync always, loses it,
// and the next delivery runs the operation again (the README's "Choosing a
// store").
//
// # Powertools
//
// The records cannot be shared with Powertools for AWS Lambda's Redis
// layer, which stores a record as one JSON string: a key written by one is
// a type error for the other, and this store fails the delivery without
// running the operation. Keep the two apart with [WithKeyPrefix] or
// distinct namespaces.
//
// # Errors
//
// Every error returned by Acquire, Complete and Release is an
// [*idempotency.StoreError] with Op and ID set. A lost lease wraps
// [driver.ErrLeaseLost]; a failed command wraps go-redis's error (a
// connection error, a context deadline, a redis.Error from the server).
// An error about a stored record names the field, never its value.
package redisstore
