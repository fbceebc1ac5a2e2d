// Package redisstore is an [idempotency.Store] on Redis (or Valkey), through
// github.com/redis/go-redis/v9: one round trip per step, each step one Lua
// script run atomically by the server, completions fenced by a lease owner
// token.
//
//	rdb := redis.NewClient(&redis.Options{Addr: "localhost:6379"}) // built once, by main
//	store, err := redisstore.New(rdb)
//	guard, err := idempotency.New(idempotency.Config{Store: store, Namespace: "summarise"})
//
// New takes a redis.UniversalClient: a single node, Sentinel (failover
// client), Cluster or Ring. Every script touches one key, the record's, so a
// step never spans Cluster slots. The tests run the conformance suite on a
// single node and through a ClusterClient on a one-node Redis Cluster.
//
// # Records
//
// A record is a Redis hash at the record id (after [WithKeyPrefix]), with
// the fields of Powertools for AWS Lambda's attribute names:
//
//	status                  INPROGRESS or COMPLETED
//	expiration              epoch seconds
//	in_progress_expiration  epoch milliseconds: the lease's end
//	data                    the result, JSON (completed records)
//	validation              payload digest, when validation is on
//	lease_owner             the lease owner token
//
// The key expires with the record: each claim and completion sets
// PEXPIREAT to the record's ExpiresAt, so Redis deletes what no delivery
// can use any more. A record past its expiration but not yet deleted (the
// claim compares with the caller's clock) is claimable like an absent one.
//
// # Round trips
//
// Counted with a hook on the client (see the tests), after the scripts are
// cached on the server:
//
//	claim (free key)          1 EVALSHA
//	in progress (held key)    1 EVALSHA, which returns the holder's record
//	replay (completed key)    1 EVALSHA, which returns the record and result
//	complete                  1 EVALSHA
//	release                   1 EVALSHA
//	complete + attached write refused before any command (ErrAttachUnsupported)
//
// The first run of a script on a server that does not have it cached (a
// new server, a restart, a failover, SCRIPT FLUSH) is answered NOSCRIPT and
// sent again with EVAL: one round trip more, once per script and server.
// Through the guard, a first delivery is 2 round trips and a replay 1.
//
// # Rules
//
// Acquire claims the key when no record exists, the record expired, or it is
// INPROGRESS with its lease passed; otherwise it returns the record that
// holds the key, in the same reply. A claim sent again by its own owner (a
// retried request whose first attempt was applied) succeeds. Complete and
// Release act only on an INPROGRESS record owned by the caller and otherwise
// fail with [idempotency.ErrLeaseLost]; a Complete that finds the record
// already COMPLETED by its own owner (an earlier attempt whose reply was
// lost) succeeds without writing again.
//
// # Attached writes
//
// Redis cannot commit an operation's own writes atomically with the
// completion (they may live on other slots, and a script cannot roll
// back), so [idempotency.Attach] fails with [idempotency.ErrAttachUnsupported]
// with this store, before the operation's work is lost. Use pgstore or
// dynamostore when the result must commit with other data.
//
// # Durability
//
// A claim is as durable as the Redis write that made it. A primary that
// fails over before the claim reached a replica, or restarts without an
// append-only file synced on every write (appendfsync always), loses it:
// the next delivery of the key then runs the operation a second time. See
// "Choosing a store" in the README.
//
// # Errors
//
// Every error returned by Acquire, Complete and Release is an
// [*idempotency.StoreError] with Op and ID set. A lost lease wraps
// [idempotency.ErrLeaseLost]; a failed command wraps go-redis's error (a
// connection error, a context deadline, a redis.Error from the server).
package redisstore
