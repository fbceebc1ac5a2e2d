// Package linearize checks that each store's record operations are
// linearizable: many concurrent clients claim (with and without taking a
// lapsed lease over), complete, release, quarantine and read a handful of
// records on the real store, under faults, and porcupine
// (github.com/anishathalye/porcupine) checks the history they saw against
// the sequential model of one record in
// middleware/idempotency/storetest/linearize.
//
//	go test -race ./test/linearize                       # every store, 300 operations each
//	go test -race -v ./test/linearize -run TestMemstore -linearize.seed 7 -linearize.ops 20000
//
// Each store's run logs one line that sums it up (with -v):
//
//	linearize: dynamodb: 1158 operations checked, 16 clients, 264 faults injected (...), verdict Ok (want Ok)
//
// # The stores and their faults
//
//   - memstore, in process, behind a layer that loses requests (not
//     applied) and responses (applied) and sends again, as an SDK does.
//   - dynamostore on moto_server, through an HTTP proxy of the test's own
//     that drops requests (reset before forwarding), drops answers (reset
//     after), answers 500 after the write (the SDK's retryer sends it
//     again), stalls answers past the client's attempt timeout, and kills
//     connections, idle or busy, every 50 to 200 ms. The proxy counts the
//     writes it forwarded per operation, so that an answer after more
//     than one is recorded as sent again.
//   - redisstore on redis-server (TestRedis, a go-redis Client) and on a
//     Redis Cluster of a primary and its replica (TestRedisCluster, a
//     ClusterClient), failed over to the replica and back during the run
//     (CLUSTER FAILOVER: no acknowledged write lost). Every connection the
//     clients dial is the test's own, killed with a reset every 50 to
//     200 ms; go-redis sends a command again on a new connection, and the
//     test counts the script calls each operation wrote.
//   - pgstore on PostgreSQL 15 (TestPostgres, a pgx pool per client) with
//     synchronous_commit on, crashed (an immediate shutdown) and restarted
//     once, shut down fast and restarted once, its connections killed as
//     Redis's. pgx never sends a statement again, but a statement whose
//     connection died may commit later, so an unknown answer may land at
//     any time after its call.
//
// Redis deletes a key at its expiry by its own clock, so an operation
// there may find a record gone once the server's clock, read at the
// operation's return, passed its expiry, even though it passed an
// earlier now (the model's Input.Swept).
//
// Each run fails, not skips, under CI=true when its server cannot start.
//
// # The history
//
// Each client's owner tokens are its own, one per claim. Times are those
// of a clock the model understands: the store's own precision
// (milliseconds for DynamoDB and Redis, whose expiries are kept in whole
// seconds; microseconds for PostgreSQL and memstore), and a claim's and a
// quarantine's time is the now passed to the store. An operation whose
// answer was lost is recorded with an unknown answer; one that a client
// sent more than once and that then answered is recorded with its earlier
// attempts, of unknown answer (linearize.Resent); one that never reached
// the store is left out. An operation returns, in the history, once no
// attempt of it can land any more (the DynamoDB proxy refuses a late
// request of an operation that ended, by its operation number). A record id serves a few hundred operations and is
// then replaced by a fresh one, so that the checker's cost grows with the
// run's length, not faster.
//
// A store that implements lease extension (driver.Extender) gets its
// clients' latest claims extended, while their lease is live and never to
// an earlier end (the workload's choice; the model follows Extender's
// whole contract).
//
// A run that injected no fault fails.
//
// The workload is seeded (-linearize.seed, 1 unless set: make test runs
// that fixed seed, make verify passes 0 for a new one each run; the seed is
// printed): each client's choices and each fault's schedule follow from
// it. On a real server the interleaving of the clients, and so the
// history, is the machine's.
//
// # The checker bites
//
// TestPlanted plants one defect at a time in memstore (a completion or a
// release without the owner fence, a live lease taken over early, a
// strict claim that takes a lapsed lease over, a quarantine of a live
// lease, a completion or a claim sent again refused by its own first
// attempt, a completed record that never expires) and expects porcupine
// to find each history not linearizable. Those runs are in
// testing/synctest bubbles, one client at a time: a seed gives the same
// history, and verdict, every time (seeds 1 to 11 each catch all eight).
//
// # Figures
//
// With -v each test prints its seed, the operations by kind and answer,
// the faults injected by kind, the answers lost, sent again and left out,
// and porcupine's verdict, the operations it checked and its time.
//
// # When the check fails
//
// The test prints the first record whose history is not linearizable: the
// longest order of its operations the model accepts, the state it leads
// to, and the operations none of which can come next; and the path of
// porcupine's visualization of that record (an HTML page).
//
// # Flags
//
//	-linearize.seed N      the workload's seed (default 1; 0: a new one)
//	-linearize.ops N       operations per store (default 300; make verify passes more)
//	-linearize.clients N   concurrent clients (default 16)
//	-linearize.records N   records in use at a time (default 6)
//	-linearize.timeout D   porcupine's time limit per store (default 1m)
//	-linearize.out DIR     where visualizations are written (default the system's temporary directory)
package linearize
