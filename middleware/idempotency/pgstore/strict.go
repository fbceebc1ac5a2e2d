package pgstore

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/sqsonce/sqsonce/middleware/idempotency/driver"
)

// Quarantine implements [driver.Store.Quarantine] with one
// UPDATE that sets the column quarantined to now and the lease to the
// expiration, fenced on found's owner and expiration, a lapsed lease (a
// strict claim's strict_lease_expiration) and no mark; the statement also
// returns the record as it found it, once any write that raced it
// committed (a COMPLETED one with its result). Times are kept in
// microseconds, as by Acquire.
func (s *Store) Quarantine(ctx context.Context, found driver.Record, now time.Time) (driver.Record, error) {
	if found.ID == "" {
		return driver.Record{}, storeError("quarantine", "", errors.New("pgstore: empty record id"))
	}
	now = micros(now)
	var (
		done bool
		old  row
	)
	err := s.queryRow(ctx, s.sql.quarantine, []any{found.ID, found.Owner, stamp(found.ExpiresAt), stamp(now)},
		&done, &old.status, &old.expiration, &old.lease, &old.data, &old.validation, &old.owner, &old.quarantined, &old.strictLease)
	if err != nil {
		return driver.Record{}, storeError("quarantine", found.ID, err)
	}
	rec := old.record(found.ID)
	if done {
		rec.Quarantined, rec.LeaseUntil = now, rec.ExpiresAt
		return rec, nil
	}
	why := "the record is gone"
	switch {
	case rec.ID == "":
	case !rec.Quarantined.IsZero():
		why = "the record is quarantined already"
	case rec.Status != driver.StatusInProgress:
		why = recordIs(string(rec.Status))
	case rec.Owner != found.Owner:
		why = "the lease was taken over by another owner"
	default:
		why = "the claim's lease or expiry changed"
	}
	return rec, storeError("quarantine", found.ID, fmt.Errorf("pgstore: %s: %w", why, driver.ErrLeaseLost))
}

var _ driver.Extender = (*Store)(nil)

// Extend implements [driver.Extender] with one UPDATE that sets the lease
// (in_progress_expiration, which Powertools reads), or a strict claim's
// strict_lease_expiration, to rec's, fenced on the owner, the record in
// progress, not quarantined and not expired at now. Sent again after it
// was applied, it sets the same value under the same condition, and
// succeeds. Times are kept in microseconds, as by Acquire.
func (s *Store) Extend(ctx context.Context, rec driver.Record, now time.Time) error {
	if rec.ID == "" {
		return storeError("extend", "", errors.New("pgstore: empty record id"))
	}
	until := rec.LeaseUntil
	if rec.Strict() {
		until = rec.StrictLease
	}
	var (
		done          bool
		status, owner *string
		quarantined   *bool
	)
	err := s.queryRow(ctx, s.sql.extend, []any{rec.ID, rec.Owner, stamp(until), rec.Strict(), stamp(now)},
		&done, &status, &owner, &quarantined)
	if err != nil {
		return storeError("extend", rec.ID, err)
	}
	if done {
		return nil
	}
	why := "the record is gone"
	switch {
	case status == nil:
	case *status != string(driver.StatusInProgress):
		why = recordIs(*status)
	case deref(owner) != rec.Owner:
		why = "the lease was taken over by another owner"
	case quarantined != nil && *quarantined:
		why = "the claim is quarantined"
	default:
		why = "the record expired"
	}
	return storeError("extend", rec.ID, fmt.Errorf("pgstore: %s: %w", why, driver.ErrLeaseLost))
}
