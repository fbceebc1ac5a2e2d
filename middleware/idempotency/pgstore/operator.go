package pgstore

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"strings"

	"github.com/sqsonce/sqsonce/middleware/idempotency/driver"
)

// The writes of an operator's tool (cmd/sqsonce-ops): a release and a
// completion fenced on the record as the tool inspected it. The table
// keeps an owner on every claim; the fence is the other stores', so that
// the tool writes the same way on each.

// inspectedFenceSQL is the condition that record $1 is the INPROGRESS
// record found: owner $2, expiration $3, lease end $4, quarantine mark
// $5 and strict lease $6 (NULL for none): an extension since the read
// fails it.
const inspectedFenceSQL = `id = $1 AND status = 'INPROGRESS' AND lease_owner = $2 AND expiration = $3
      AND in_progress_expiration = $4 AND quarantined IS NOT DISTINCT FROM $5
      AND strict_lease_expiration IS NOT DISTINCT FROM $6`

// releaseInspectedSQL deletes the record found, and returns whether it did
// with the record's status and owner as it found them: the old CTE locks
// the row first, as completeSQL's does.
const releaseInspectedSQL = `
WITH old AS MATERIALIZED (
    SELECT status, lease_owner FROM {{table}} WHERE id = $1
    FOR UPDATE
), gone AS (
    DELETE FROM {{table}}
    USING (SELECT count(*) FROM old) AS locked
    WHERE ` + inspectedFenceSQL + `
    RETURNING 1
)
SELECT EXISTS (SELECT FROM gone), o.status, o.lease_owner
FROM (SELECT) AS one LEFT JOIN old AS o ON true`

// completeInspectedSQL completes the record found with expiration $7,
// result $8 and owner $9, and returns whether it did with the record's
// status, owner and result as it found them: the old CTE locks the row
// first, as completeSQL's does, so that the same completion sent again
// while the first runs finds the record as the first left it.
const completeInspectedSQL = `
WITH old AS MATERIALIZED (
    SELECT status, lease_owner, data FROM {{table}} WHERE id = $1
    FOR UPDATE
), done AS (
    UPDATE {{table}} SET status = 'COMPLETED', expiration = $7, data = $8, lease_owner = $9, quarantined = NULL
    FROM (SELECT count(*) FROM old) AS locked
    WHERE ` + inspectedFenceSQL + `
    RETURNING 1
)
SELECT EXISTS (SELECT FROM done), o.status, o.lease_owner, o.data
FROM (SELECT) AS one LEFT JOIN old AS o ON true`

func (s *Store) operatorSQL(sql string) string {
	return strings.ReplaceAll(sql, "{{table}}", s.sql.table)
}

// fenceArgs are the arguments $1 to $6 of inspectedFenceSQL for found.
func fenceArgs(found driver.Record) []any {
	return []any{found.ID, found.Owner, stamp(found.ExpiresAt), stamp(found.LeaseUntil), stampOrNull(found.Quarantined), stampOrNull(found.StrictLease)}
}

// ReleaseInspected releases the INPROGRESS record found, as [Store.Inspect]
// returned it, for an operator: one DELETE fenced on the record being
// unchanged since it was read (status, owner, expiration, lease end,
// quarantine mark, strict lease). A record that changed, or is gone, is left alone and
// the error wraps [driver.ErrLeaseLost].
func (s *Store) ReleaseInspected(ctx context.Context, found driver.Record) error {
	if found.ID == "" {
		return storeError("release", "", errors.New("pgstore: empty record id"))
	}
	var (
		done          bool
		status, owner *string
	)
	if err := s.queryRow(ctx, s.operatorSQL(releaseInspectedSQL), fenceArgs(found), &done, &status, &owner); err != nil {
		return storeError("release", found.ID, err)
	}
	if done {
		return nil
	}
	return changed("release", found, status, owner)
}

// CompleteInspected completes the INPROGRESS record found, as
// [Store.Inspect] returned it, for an operator: one UPDATE that sets it
// COMPLETED with done.Data, done.ExpiresAt and done.Owner as its owner,
// fenced as [Store.ReleaseInspected]. The table keeps every result in
// full. Finding the record COMPLETED with done's owner and result (the
// statement sent again after it was applied) is a success.
func (s *Store) CompleteInspected(ctx context.Context, found, done driver.Record) error {
	if found.ID == "" || done.ID != found.ID {
		return storeError("complete", found.ID, errors.New("pgstore: the completion names another id than the record found"))
	}
	if done.Owner == "" {
		return storeError("complete", found.ID, errors.New("pgstore: the completion has no owner"))
	}
	if len(done.Attached) > 0 {
		return storeError("complete", found.ID, fmt.Errorf("pgstore: an operator's completion takes no attached statements: %w", driver.ErrAttachUnsupported))
	}
	var (
		ok            bool
		status, owner *string
		data          []byte
	)
	args := append(fenceArgs(found), stamp(done.ExpiresAt), done.Data, done.Owner)
	if err := s.queryRow(ctx, s.operatorSQL(completeInspectedSQL), args, &ok, &status, &owner, &data); err != nil {
		return storeError("complete", found.ID, err)
	}
	if ok || deref(status) == string(driver.StatusCompleted) && deref(owner) == done.Owner && bytes.Equal(data, done.Data) {
		return nil
	}
	return changed("complete", found, status, owner)
}

// changed is the error of an operator's write refused by its fence, judged
// from the record's status and owner as the write found them, holding the
// row.
func changed(op string, found driver.Record, status, owner *string) error {
	why := "the record is gone"
	switch {
	case status == nil:
	case *status != string(driver.StatusInProgress):
		why = recordIs(*status)
	case deref(owner) != found.Owner:
		why = "the lease was taken over by another owner"
	default:
		why = "the record changed since it was inspected (its lease, strict lease, expiry or quarantine mark)"
	}
	return storeError(op, found.ID, fmt.Errorf("pgstore: %s: %w", why, driver.ErrLeaseLost))
}
