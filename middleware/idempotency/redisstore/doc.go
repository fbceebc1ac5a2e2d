// Package redisstore is an [idempotency.Store] on Redis (or Valkey), through
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
// one key, the record's, so a step never spans Cluster slots; Cluster
// decides which node owns a slot and a node that does not answers MOVED,
// so two workers never claim one key on two nodes. The tests run the
// conformance suite on a single node and through a ClusterClient on a
// one-node Redis Cluster.
//
// New refuses:
//
//   - a *redis.Ring: Ring shards keys on the client, and when a shard fails
//     its heartbeat it maps the shard's keys to another one, where a second
//     worker claims a key whose lease is live. Use Cluster to spread keys
//     over nodes.
//   - a client without ContextTimeoutEnabled: it waits out ReadTimeout on
//     a stalled reply, past the step's deadline (the invocation's).
//   - a server whose maxmemory-policy is not noeviction, on any node of a
//     Cluster: every record has an expiry, so every volatile-* and
//     allkeys-* policy may evict a live claim or a completed record under
//     memory pressure, and the operation runs again. New reads the policy
//     with INFO memory (which ElastiCache answers), else CONFIG GET, and
//     refuses a server that answers neither. With noeviction, a full
//     server refuses the claim: the delivery fails, and the operation does
//     not run. A failover promotes a replica with its own configuration:
//     set the policy on every node (ElastiCache: the parameter group).
//
// # Records
//
// A record is a Redis hash at the record id (after [WithKeyPrefix]), whose
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
// [WithMaxData] (default 960 KiB, which every server accepts) even
// compressed is left out: the record is completed with data_omitted set
// and an error is logged ([WithLogger]). Every delivery then gets the zero
// value of the result, the one that ran the operation included
// ([Store.CompleteData] tells the guard what was kept), instead of running
// the operation again: a completed operation is never re-run for lack of
// space. These are dynamostore's flags, with its meaning.
//
// # Round trips
//
// Counted with a hook on the client (see the tests), after the scripts are
// cached on the server:
//
//	claim (free key)          1 EVALSHA
//	in progress (held key)    1 EVALSHA, which returns the holder's record
//	replay (completed key)    1 EVALSHA, which returns the record and result
//	complete                  1 EVALSHA (compressed or left out alike)
//	release                   1 EVALSHA
//	complete + attached write refused before any command (ErrAttachUnsupported)
//
// The first run of a script on a server that does not have it cached (a
// new server, a restart, a failover, SCRIPT FLUSH) is answered NOSCRIPT and
// sent again with EVAL: one round trip more, once per script and server.
// Through the guard, a first delivery is 2 round trips and a replay 1.
// Each step ends at its context's deadline.
//
// # Rules
//
// Acquire claims the key when no record exists, the record expired, or it is
// INPROGRESS with its lease passed; otherwise it returns the record that
// holds the key, in the same reply. The record a claim replaced is
// returned without its result. Complete and Release act only on an
// INPROGRESS record owned by the caller and otherwise fail with
// [idempotency.ErrLeaseLost].
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
// # Powertools
//
// The records cannot be shared with Powertools for AWS Lambda. Its Redis
// persistence layer (CachePersistenceLayer, in Python and TypeScript)
// stores a record as one JSON string, written with SET NX (an expired or
// orphaned record is overwritten after a SET NX on the key "{id}:lock"),
// and completes it with a plain SET, unfenced. Record ids can match (the
// guard's Powertools key formats) and the field names are the same, but a
// key written by one is a type error for the other: this store fails the
// delivery (the key is not a hash) and never runs the operation. Keep the
// two apart with [WithKeyPrefix] or distinct namespaces. Sharing records
// with Powertools needs dynamostore.
//
// # Errors
//
// Every error returned by Acquire, Complete and Release is an
// [*idempotency.StoreError] with Op and ID set. A lost lease wraps
// [idempotency.ErrLeaseLost]; a failed command wraps go-redis's error (a
// connection error, a context deadline, a redis.Error from the server).
// An error about a stored record names the field, never its value.
package redisstore
