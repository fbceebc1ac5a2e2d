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
// without its result.
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
