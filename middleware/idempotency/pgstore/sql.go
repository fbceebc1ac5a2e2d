package pgstore

import (
	"strings"

	"github.com/jackc/pgx/v5"
)

// The statements of the store. Each is one round trip. {{table}} stands for
// the record table's quoted name (see render).

// claimSQL claims $1 with one INSERT … ON CONFLICT DO UPDATE whose WHERE
// is the takeover rule: the record expired, or is INPROGRESS with its
// lease passed (not when $7, a strict claim, is true). $8 is a strict
// claim's lease end, NULL for another claim. It also returns the record
// the claim met (the old CTE): the one a takeover replaced, or the one
// that refused the claim; none when the claim inserted a new record.
//
// The old CTE locks the row (FOR UPDATE) before the INSERT runs (the
// INSERT reads its one row from old, so it cannot run first): a write
// that commits while the statement runs (a release's delete, a claim's
// update) is waited for, and old then reads the row as that write left it,
// or none when it deleted it, not the row as of the statement's start;
// and no other write can change the row between old's read and the
// INSERT.
const claimSQL = `
WITH old AS MATERIALIZED (
    SELECT status, expiration, in_progress_expiration, data, validation, lease_owner, quarantined, strict_lease_expiration
    FROM {{table}} WHERE id = $1
    FOR UPDATE
), claim AS (
    INSERT INTO {{table}} AS r (id, status, expiration, in_progress_expiration, data, validation, lease_owner, strict_lease_expiration)
    SELECT $1, 'INPROGRESS', $2::timestamptz, $3::timestamptz, NULL, NULLIF($4::text, ''), $5::text, $8::timestamptz
    FROM (SELECT count(*) FROM old) AS locked
    ON CONFLICT (id) DO UPDATE SET
        status = excluded.status, expiration = excluded.expiration,
        in_progress_expiration = excluded.in_progress_expiration, data = NULL,
        validation = excluded.validation, lease_owner = excluded.lease_owner, quarantined = NULL,
        strict_lease_expiration = excluded.strict_lease_expiration
    WHERE r.expiration < $6 OR (NOT $7::boolean AND r.status = 'INPROGRESS' AND r.in_progress_expiration < $6)
    RETURNING 1
)
SELECT EXISTS (SELECT FROM claim), o.status, o.expiration, o.in_progress_expiration, o.data, o.validation, o.lease_owner, o.quarantined,
       o.strict_lease_expiration
FROM (SELECT) AS one LEFT JOIN old AS o ON true`

// readSQL reads the record $1 with a snapshot of its own: only after a
// claim refused by a record its statement could not see (one committed by
// a concurrent claim while the statement ran).
const readSQL = `
SELECT status, expiration, in_progress_expiration, data, validation, lease_owner, quarantined, strict_lease_expiration
FROM {{table}} WHERE id = $1`

// completeSQL completes $1 if it is INPROGRESS and owned by $2, and returns
// whether it did with the record's status, owner and result as it found
// them, to tell a lost lease from the owner's own earlier completion and to
// return the result that completion stored. The old CTE locks the row
// before the UPDATE runs, as claimSQL's does: a write that commits while
// the statement runs (the owner's own completion, sent before and still
// running on the server) is waited for, and old reads the row as it left
// it, not as of the statement's start, which still showed the record in
// progress with the caller's owner and called that completion a lost
// lease.
const completeSQL = `
WITH old AS MATERIALIZED (
    SELECT status, lease_owner, data FROM {{table}} WHERE id = $1
    FOR UPDATE
), done AS (
    UPDATE {{table}} AS r SET status = 'COMPLETED', expiration = $3, data = $4, quarantined = NULL
    FROM (SELECT count(*) FROM old) AS locked
    WHERE r.id = $1 AND r.status = 'INPROGRESS' AND r.lease_owner = $2
    RETURNING 1
)
SELECT EXISTS (SELECT FROM done), o.status, o.lease_owner, o.data
FROM (SELECT) AS one LEFT JOIN old AS o ON true`

// completeOrAbortSQL is completeSQL for a batch with attached statements:
// when the fence fails it divides by zero, which aborts the batch's
// implicit transaction, so that no attached statement commits.
const completeOrAbortSQL = `
WITH done AS (
    UPDATE {{table}} SET status = 'COMPLETED', expiration = $3, data = $4, quarantined = NULL
    WHERE id = $1 AND status = 'INPROGRESS' AND lease_owner = $2
    RETURNING 1
)
SELECT 1 / (SELECT count(*)::int FROM done)`

// stateSQL reads the status, owner and result of $1, after
// completeOrAbortSQL failed its fence.
const stateSQL = `SELECT status, lease_owner, data FROM {{table}} WHERE id = $1`

// releaseSQL deletes $1 if it is INPROGRESS and owned by $2, and returns
// whether it did with the record's status and owner as it found them: the
// old CTE locks the row first, as completeSQL's does.
const releaseSQL = `
WITH old AS MATERIALIZED (
    SELECT status, lease_owner FROM {{table}} WHERE id = $1
    FOR UPDATE
), gone AS (
    DELETE FROM {{table}} AS r
    USING (SELECT count(*) FROM old) AS locked
    WHERE r.id = $1 AND r.status = 'INPROGRESS' AND r.lease_owner = $2
    RETURNING 1
)
SELECT EXISTS (SELECT FROM gone), o.status, o.lease_owner
FROM (SELECT) AS one LEFT JOIN old AS o ON true`

// quarantineSQL marks $1 quarantined at $4, if it is INPROGRESS, owned by
// $2, expiring at $3, its lease before $4 and not quarantined yet: it sets
// quarantined and extends the lease to the expiration. The lease is
// Record.LeaseEnd's: a strict claim's strict_lease_expiration (on a record
// whose lease is at its expiration), else in_progress_expiration. It
// returns whether it did with the record as it found it, result included:
// the old CTE locks the row before the UPDATE runs (the UPDATE joins
// old's count), as claimSQL's does, so that a refusal returns the record
// a concurrent write left (another quarantine's, a completion's), not the
// row as of the statement's start.
const quarantineSQL = `
WITH old AS MATERIALIZED (
    SELECT status, expiration, in_progress_expiration, data, validation, lease_owner, quarantined, strict_lease_expiration
    FROM {{table}} WHERE id = $1
    FOR UPDATE
), q AS (
    UPDATE {{table}} AS r SET quarantined = $4, in_progress_expiration = r.expiration
    FROM (SELECT count(*) FROM old) AS locked
    WHERE r.id = $1 AND r.status = 'INPROGRESS' AND r.lease_owner = $2 AND r.expiration = $3
      AND CASE WHEN r.strict_lease_expiration IS NOT NULL AND r.in_progress_expiration >= r.expiration
               THEN r.strict_lease_expiration ELSE r.in_progress_expiration END < $4
      AND r.quarantined IS NULL
    RETURNING 1
)
SELECT EXISTS (SELECT FROM q), o.status, o.expiration, o.in_progress_expiration, o.data, o.validation, o.lease_owner, o.quarantined,
       o.strict_lease_expiration
FROM (SELECT) AS one LEFT JOIN old AS o ON true`

// extendSQL moves the lease of $1 to $3 (a strict claim's, $4,
// strict_lease_expiration; else in_progress_expiration) if it is
// INPROGRESS, owned by $2, not quarantined and not expired at $5, and
// returns whether it did with the record's status, owner and quarantine
// mark as it found them: the old CTE locks the row first, as
// completeSQL's does.
const extendSQL = `
WITH old AS MATERIALIZED (
    SELECT status, lease_owner, quarantined IS NOT NULL AS quarantined FROM {{table}} WHERE id = $1
    FOR UPDATE
), ext AS (
    UPDATE {{table}} AS r SET
        in_progress_expiration = CASE WHEN $4::boolean THEN r.in_progress_expiration ELSE $3 END,
        strict_lease_expiration = CASE WHEN $4::boolean THEN $3 ELSE r.strict_lease_expiration END
    FROM (SELECT count(*) FROM old) AS locked
    WHERE r.id = $1 AND r.status = 'INPROGRESS' AND r.lease_owner = $2 AND r.quarantined IS NULL AND r.expiration >= $5
    RETURNING 1
)
SELECT EXISTS (SELECT FROM ext), o.status, o.lease_owner, o.quarantined
FROM (SELECT) AS one LEFT JOIN old AS o ON true`

// deleteExpiredSQL deletes up to $1 records past their expiration, oldest
// first from $2 (NULL: the oldest), skipping rows a claim holds locked, and
// returns how many it deleted and the latest expiration among them. The
// next batch starts there, so that it does not walk again the index entries
// of the rows just deleted (dead until VACUUM). The rows are deleted by
// their physical address (a TID scan), locked by the same statement: a join
// on id would make the planner scan the whole table for each batch.
const deleteExpiredSQL = `
WITH gone AS (
    DELETE FROM {{table}} WHERE ctid = ANY (ARRAY (
        SELECT ctid FROM {{table}}
        WHERE expiration < now() AND expiration >= COALESCE($2, '-infinity'::timestamptz)
        ORDER BY expiration LIMIT $1
        FOR UPDATE SKIP LOCKED
    ))
    RETURNING expiration
)
SELECT count(*), max(expiration) FROM gone`

// schemaLock serialises concurrent CreateSchema calls (CREATE … IF NOT
// EXISTS races with itself): a transaction-level advisory lock, held until
// the schema's implicit transaction ends.
const schemaLock = `SELECT pg_advisory_xact_lock(hashtext('sqsonce.pgstore.schema'));
`

// schemaCompleteSQL reports whether the table $1 (a quoted name, as the
// statements name it) has the columns schemaSQL adds to an older table and
// the index $2 on it: reading the catalog, with no lock on the table.
const schemaCompleteSQL = `
SELECT coalesce((SELECT count(*) = 2 FROM pg_attribute
        WHERE attrelid = to_regclass($1) AND NOT attisdropped
          AND attname IN ('quarantined', 'strict_lease_expiration'))
    AND EXISTS (SELECT FROM pg_index WHERE indexrelid = to_regclass($2) AND indrelid = to_regclass($1)), false)`

// schemaSQL creates the record table and its index, if they do not exist.
// {{index}} stands for the index's quoted name.
const schemaSQL = `-- The idempotency records of sqsonce's pgstore. Safe to run more than once.
-- Column names are Powertools for AWS Lambda's attribute names.
CREATE TABLE IF NOT EXISTS {{table}} (
    id                     text        PRIMARY KEY,  -- "{namespace}#{digest}"
    status                 text        NOT NULL CHECK (status IN ('INPROGRESS', 'COMPLETED')),
    expiration             timestamptz NOT NULL,     -- the record counts until then
    in_progress_expiration timestamptz NOT NULL,     -- the lease's end
    data                   bytea,                    -- the result, JSON
    validation             text,                     -- payload digest, when validation is on
    lease_owner            text        NOT NULL,     -- the lease owner token (fencing)
    quarantined            timestamptz,              -- when strict mode quarantined the claim
    strict_lease_expiration timestamptz              -- a strict claim's lease end
);

-- Tables created before strict mode gain its columns.
ALTER TABLE {{table}} ADD COLUMN IF NOT EXISTS quarantined timestamptz;
ALTER TABLE {{table}} ADD COLUMN IF NOT EXISTS strict_lease_expiration timestamptz;

-- For DeleteExpired: PostgreSQL has no TTL.
CREATE INDEX IF NOT EXISTS {{index}} ON {{table}} (expiration);
`

// queries are the SQL texts of one table.
type queries struct {
	claim, read, complete, completeOrAbort, state, release, quarantine, extend, deleteExpired, schema string
	table                                                                                             string // the table's quoted name, for inspect.go
	index                                                                                             string // the expiration index's quoted name
}

// render returns the statements for the table named table, quoted as one
// SQL identifier.
func render(table string) queries {
	index := pgx.Identifier{table + "_expiration_idx"}.Sanitize()
	r := strings.NewReplacer("{{table}}", pgx.Identifier{table}.Sanitize(), "{{index}}", index)
	return queries{
		claim: r.Replace(claimSQL), read: r.Replace(readSQL), complete: r.Replace(completeSQL),
		completeOrAbort: r.Replace(completeOrAbortSQL), state: r.Replace(stateSQL), release: r.Replace(releaseSQL),
		quarantine: r.Replace(quarantineSQL), extend: r.Replace(extendSQL),
		deleteExpired: r.Replace(deleteExpiredSQL), schema: r.Replace(schemaSQL),
		table: pgx.Identifier{table}.Sanitize(), index: index,
	}
}
