package redisstore

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/sqsonce/sqsonce/middleware/idempotency/driver"
)

// Quarantine implements [driver.Store.Quarantine] with one
// script that sets the field quarantined to now and the lease to the
// record's expiration, fenced on found's owner and expiration, a lapsed
// lease and no quarantined field. A refusal returns the record as found,
// a COMPLETED one with its result.
func (s *Store) Quarantine(ctx context.Context, found driver.Record, now time.Time) (driver.Record, error) {
	if found.ID == "" {
		return driver.Record{}, storeError("quarantine", "", errors.New("redisstore: empty record id"))
	}
	reply, err := s.run(ctx, quarantineScript, found.ID, found.Owner, found.ExpiresAt.Unix(), now.UnixMilli())
	if err != nil {
		return driver.Record{}, storeError("quarantine", found.ID, err)
	}
	code, fields, err := parseReply(reply)
	if err != nil {
		return driver.Record{}, storeError("quarantine", found.ID, err)
	}
	var rec driver.Record
	if len(fields) > 0 {
		if rec, err = decode(found.ID, fields); err != nil {
			return driver.Record{}, storeError("quarantine", found.ID, fmt.Errorf("redisstore: read record: %w", err))
		}
	}
	switch code {
	case 0:
		return rec, nil
	case 1:
		why := "the record is gone"
		switch {
		case rec.ID == "":
		case !rec.Quarantined.IsZero():
			why = "the record is quarantined already"
		case rec.Status != driver.StatusInProgress:
			why = "the record is " + string(rec.Status)
		case rec.Owner != found.Owner:
			why = "the lease was taken over by another owner"
		default:
			why = "the claim's lease or expiry changed"
		}
		return rec, storeError("quarantine", found.ID, fmt.Errorf("redisstore: %s: %w", why, driver.ErrLeaseLost))
	}
	return driver.Record{}, storeError("quarantine", found.ID, unexpected(code, fields))
}

var _ driver.Extender = (*Store)(nil)

// Extend implements [driver.Extender] with one script that sets the lease
// (in_progress_expiration, which Powertools reads), or a strict claim's
// strict_lease_expiration, to rec's, fenced on the owner, the record in
// progress, not quarantined and not expired at now. It leaves the key's
// own expiry (PEXPIREAT, the record's) alone. The script sent again by
// go-redis after its first run was applied succeeds.
func (s *Store) Extend(ctx context.Context, rec driver.Record, now time.Time) error {
	if rec.ID == "" {
		return storeError("extend", "", errors.New("redisstore: empty record id"))
	}
	if rec.Owner == "" {
		return storeError("extend", rec.ID, fmt.Errorf("redisstore: no owner to fence the extension with: %w", driver.ErrLeaseLost))
	}
	field, until := "in_progress_expiration", rec.LeaseUntil
	if rec.Strict() {
		field, until = "strict_lease_expiration", rec.StrictLease
	}
	reply, err := s.run(ctx, extendScript, rec.ID, rec.Owner, now.Unix(), field, until.UnixMilli())
	if err != nil {
		return storeError("extend", rec.ID, err)
	}
	code, fields, err := parseReply(reply)
	if err != nil {
		return storeError("extend", rec.ID, err)
	}
	switch code {
	case 0:
		return nil
	case 1:
		status, _ := fieldAt(fields, 0)
		own, _ := fieldAt(fields, 1)
		quarantined, _ := fieldAt(fields, 3)
		if status == string(driver.StatusInProgress) && own == rec.Owner {
			why := "the record expired"
			if quarantined != "" {
				why = "the claim is quarantined"
			}
			return storeError("extend", rec.ID, fmt.Errorf("redisstore: %s: %w", why, driver.ErrLeaseLost))
		}
		return s.lost("extend", rec.ID, rec.Owner, fields)
	}
	return storeError("extend", rec.ID, unexpected(code, fields))
}
