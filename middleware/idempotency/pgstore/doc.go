// Package pgstore is a [driver.Store] on PostgreSQL, through
// github.com/jackc/pgx/v5: one statement per step, completions fenced by a
// lease owner token, and completion atomic with the operation's own SQL.
//
//	// databaseURL: postgres://app@db.example.internal:5432/app?sslmode=verify-full
//	pool, err := pgxpool.New(ctx, databaseURL) // built once, by main
//	store, err := pgstore.New(pool)            // or pgstore.New(pool, pgstore.WithTable("records"))
//	err = store.CreateSchema(ctx)              // or run schema.sql in a migration
//	guard, err := idempotency.New(idempotency.Config{Store: store, Namespace: "summarise"})
//
// Name sslmode=verify-full in the URL (with sslrootcert= where the server's
// CA is not in the system's pool): without sslmode pgx uses "prefer", which
// checks no certificate and falls back to plaintext, and the records carry
// the operations' results. The password belongs in PGPASSWORD, ~/.pgpass or
// a secret, not in a URL that a log may show.
//
// The store calls only the methods of [DB], which *pgxpool.Pool satisfies;
// it never reads configuration or opens connections.
//
// # Table
//
// [Store.CreateSchema] creates the store's table, "idempotency" unless
// [WithTable] names another, in the connection's current schema, with
// Powertools for AWS Lambda's attribute names as columns (names only:
// Powertools has no PostgreSQL layer to share records with). [Schema], the
// file schema.sql, is the same SQL for the default table:
//
//	id                      text PRIMARY KEY   "{namespace}#{digest}"
//	status                  text               INPROGRESS or COMPLETED
//	expiration              timestamptz        the record counts until then
//	in_progress_expiration  timestamptz        the lease's end
//	data                    bytea              the result, JSON
//	validation              text               payload digest, when validation is on
//	lease_owner             text               the lease owner token
//	quarantined             timestamptz        when strict mode quarantined the claim, else NULL
//	strict_lease_expiration timestamptz        a strict claim's lease end, else NULL
//
// and an index on expiration. CreateSchema adds the columns quarantined
// and strict_lease_expiration to a table created before them (ALTER TABLE
// … ADD COLUMN IF NOT EXISTS). To keep the table elsewhere, set the
// connection's search_path.
//
// # Round trips
//
// Counted on the connection (see test/pgstore's TestRoundTrips; a round
// trip is a request written after a reply was read):
//
//	claim (free key)                 1  INSERT … ON CONFLICT DO UPDATE … WHERE … RETURNING
//	in progress (held key)           1  the same statement returns the holder's record
//	replay (completed key)           1  the same statement returns the record and result
//	complete                         1  UPDATE fenced by status and owner
//	release                          1  DELETE fenced by status and owner
//	quarantine (strict mode)         1  UPDATE fenced by status, owner, expiry, lease and mark
//	complete with attached writes    1  one batch: the fenced UPDATE, then the statements
//
// pgx prepares a statement the first time it runs on a connection (one round
// trip more, once per statement and connection); after DDL that changes a
// prepared statement's result type, the store sends a statement PostgreSQL
// refused with SQLSTATE 0A000 once more. A claim refused by a record that a
// concurrent claim committed while the statement ran costs one SELECT more.
// Each fenced write locks the record's row before it judges it (SELECT …
// FOR UPDATE in the same statement), so that a write it waited for (the
// owner's own completion, sent again while the first still ran on the
// server) is judged as it left the record. A statement refused with a
// serialization failure is sent again (see Isolation).
//
// # Rules
//
// Acquire claims the key when no record exists, the record expired, or it is
// INPROGRESS with its lease passed; otherwise it returns the record that
// holds the key. A claim sent again by its own owner succeeds. Complete and
// Release act only on an INPROGRESS record owned by the caller and otherwise
// fail with [driver.ErrLeaseLost]; a Complete that finds the record
// already COMPLETED by its own owner (an earlier attempt whose reply was
// lost) succeeds without writing again. Times are the caller's clock,
// truncated to microseconds (timestamptz's resolution) on both sides of a
// comparison.
//
// A timestamp of 'infinity' or '-infinity' (timestamptz takes them; an
// operator may keep a record for good by hand) is read as
// 9999-12-31T23:59:59.999999Z or 0001-01-01T00:00:00.000001Z, after or
// before any time the store compares with, as PostgreSQL compares the
// infinities, and those times are written back as the infinities: an
// infinite expiry never expires (DeleteExpired keeps it, a duplicate
// replays), an infinite lease never lapses (the claim is held until the
// record expires, or an operator releases it), and an operator's or a
// quarantine's fence matches the record as read.
//
// # Isolation
//
// The statements are written for READ COMMITTED, PostgreSQL's default:
// each is its own transaction, and one that waits for a row another
// transaction changes goes on with the row as that one left it. Where the
// sessions' default_transaction_isolation is REPEATABLE READ or
// SERIALIZABLE, PostgreSQL refuses such a statement instead (SQLSTATE
// 40001), and SERIALIZABLE may refuse claims of keys whose index entries
// share a page; the store sends a refused statement again, up to 10 times,
// each after a random pause below 64 ms, within its context (nothing of
// it was applied), and returns the last refusal. Statements attached to a
// completion run at the session's level, in a batch sent again the same
// way. Where nothing else needs the stricter level, give the store's role
// READ COMMITTED (ALTER ROLE … SET default_transaction_isolation = 'read
// committed'): the store then never retries.
//
// # Attached statements
//
// Inside an operation, [Attach] adds SQL statements ([Statement]) to its
// completion. Complete sends the record's fenced UPDATE and those statements
// as one batch, which PostgreSQL runs in one implicit transaction: if the
// lease was lost, the UPDATE aborts the transaction and nothing is written
// (Complete fails with ErrLeaseLost); if a statement fails, nothing is
// written, the record stays in progress, and Complete returns a
// [*StatementError] naming it. The statements run only when the record is
// the operation's to complete.
//
// # Expired records
//
// PostgreSQL has no TTL. Expired records are claimable like absent ones,
// but stay in the table until [Store.DeleteExpired] deletes them, in batches of a
// size you choose, each its own short transaction that skips rows a claim
// holds. Run it on a schedule (pg_cron, a scheduled function).
//
// # Errors
//
// Every error returned by Acquire, Complete and Release is an
// [*idempotency.StoreError] with Op and ID set. A lost lease wraps
// [driver.ErrLeaseLost]; an attached statement that failed wraps a
// [*StatementError], whose message names the statement and the SQLSTATE
// but not the server's message (which can quote an argument); a failed
// statement of the store, the completion's fenced update included, wraps
// pgx's error (a *pgconn.PgError, a connection error, a context deadline).
//
// Each step ends at its context's deadline. pgx then closes the connection
// without cancelling the statement on the server, which may still run it:
// like a lost reply, the error says nothing of whether the step was applied.
package pgstore
