package pgstore

import (
	"context"
	"errors"
	"iter"
	"strings"

	"github.com/jackc/pgx/v5"

	"github.com/sqsonce/sqsonce/middleware/idempotency/driver"
)

var _ driver.Inspector = (*Store)(nil)

// listPage is how many rows each statement of List reads, at most.
const listPage = 500

// listBytes bounds the results one statement of List reads: a page ends at
// the row whose result reaches it (it holds at least one row), so that a
// listing holds one page's results, not up to listPage of the largest
// results the table holds.
const listBytes = 8 << 20

// The columns an inspection reads: those of readSQL.
const inspectColumns = `status, expiration, in_progress_expiration, data, validation, lease_owner, quarantined, strict_lease_expiration`

// inspectSQL reads the record $1.
const inspectSQL = `SELECT ` + inspectColumns + ` FROM {{table}} AS r WHERE id = $1`

// listSQL reads up to $4 records after id $3 in id order, of status $1
// (any when empty) whose id is LIKE $2, up to the first whose result
// brings the page's results to $5 bytes or more. Each row has the bytes of
// the results up to its own (octet_length does not read a result stored
// out of line).
const listSQL = `SELECT id, ` + inspectColumns + `, upto FROM (
    SELECT id, ` + inspectColumns + `, coalesce(octet_length(data), 0) AS size,
        sum(coalesce(octet_length(data), 0)) OVER (ORDER BY id ROWS UNBOUNDED PRECEDING) AS upto
    FROM {{table}} AS r
    WHERE ($1 = '' OR status = $1) AND id LIKE $2 AND id > $3
    ORDER BY id LIMIT $4
) AS p
WHERE upto - size < $5
ORDER BY id`

func (s *Store) inspectSQL() string {
	return strings.ReplaceAll(inspectSQL, "{{table}}", s.sql.table)
}

func (s *Store) listSQL() string {
	return strings.ReplaceAll(listSQL, "{{table}}", s.sql.table)
}

// Inspect implements [driver.Inspector.Inspect] with one SELECT.
func (s *Store) Inspect(ctx context.Context, id string) (driver.StoredRecord, error) {
	if id == "" {
		return driver.StoredRecord{}, storeError("inspect", "", errors.New("pgstore: empty record id"))
	}
	var r row
	err := s.queryRow(ctx, s.inspectSQL(), []any{id},
		&r.status, &r.expiration, &r.lease, &r.data, &r.validation, &r.owner, &r.quarantined, &r.strictLease)
	if errors.Is(err, pgx.ErrNoRows) {
		return driver.StoredRecord{}, storeError("inspect", id, driver.ErrNotFound)
	}
	if err != nil {
		return driver.StoredRecord{}, storeError("inspect", id, err)
	}
	return inspected(id, r), nil
}

// List implements [driver.Inspector.List] in id order, one SELECT of
// up to 500 rows per page, each after the last id of the page before. A
// page ends early at the row whose result brings its results to 8 MiB:
// a listing holds one page's results.
func (s *Store) List(ctx context.Context, opts driver.ListOptions) iter.Seq2[driver.StoredRecord, error] {
	return func(yield func(driver.StoredRecord, error) bool) {
		like := likeEscape(opts.Prefix) + "%"
		after := ""
		for {
			var (
				page []listed
				full bool // the page ended at listBytes or listPage: more may follow
				err  error
			)
			for attempt := 1; ; attempt++ {
				page, full, err = s.listPage(ctx, string(opts.Status), like, after)
				if !again(ctx, err, attempt) {
					break
				}
			}
			if err != nil {
				yield(driver.StoredRecord{}, storeError("list", "", err))
				return
			}
			for _, p := range page {
				if !yield(inspected(p.id, p.row), nil) {
					return
				}
			}
			if !full || len(page) == 0 {
				return
			}
			after = page[len(page)-1].id
		}
	}
}

type listed struct {
	id  string
	row row
}

// listPage reads one page of List, and reports whether it is full: it
// holds listPage rows, or its results reach listBytes.
func (s *Store) listPage(ctx context.Context, status, like, after string) ([]listed, bool, error) {
	b := &pgx.Batch{}
	b.Queue(s.listSQL(), status, like, after, listPage, listBytes)
	br := s.db.SendBatch(ctx, b)
	defer br.Close()
	rows, err := br.Query()
	if err != nil {
		return nil, false, err
	}
	defer rows.Close()
	var (
		page []listed
		upto int64 // the bytes of the page's results
	)
	for rows.Next() {
		var p listed
		r := &p.row
		if err := rows.Scan(&p.id, &r.status, &r.expiration, &r.lease, &r.data, &r.validation, &r.owner, &r.quarantined, &r.strictLease, &upto); err != nil {
			return nil, false, err
		}
		page = append(page, p)
	}
	if err := rows.Err(); err != nil {
		return nil, false, err
	}
	return page, len(page) == listPage || upto >= listBytes, br.Close()
}

// inspected is the record of r, as the store's other reads decode it.
func inspected(id string, r row) driver.StoredRecord {
	return driver.StoredRecord{Record: r.record(id), Size: len(r.data)}
}

// likeEscape quotes the characters a LIKE pattern gives a meaning (its
// default escape character is the backslash).
func likeEscape(s string) string {
	return strings.NewReplacer(`\`, `\\`, `%`, `\%`, `_`, `\_`).Replace(s)
}
