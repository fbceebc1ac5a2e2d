package redisstore

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/sqsonce/sqsonce/middleware/idempotency"
)

var _ idempotency.Quarantiner = (*Store)(nil)

// AcquireStrict implements [idempotency.Quarantiner.AcquireStrict]: the
// claim script of Acquire, told to take no lapsed lease over.
func (s *Store) AcquireStrict(ctx context.Context, rec idempotency.Record, now time.Time) (idempotency.Record, bool, error) {
	return s.acquire(ctx, rec, now, true)
}

// Quarantine implements [idempotency.Quarantiner.Quarantine] with one
// script that sets the field quarantined to now and the lease to the
// record's expiration, fenced on found's owner and expiration, a lapsed
// lease and no quarantined field. A refusal returns the record as found,
// without its result.
func (s *Store) Quarantine(ctx context.Context, found idempotency.Record, now time.Time) (idempotency.Record, error) {
	if found.ID == "" {
		return idempotency.Record{}, storeError("quarantine", "", errors.New("redisstore: empty record id"))
	}
	reply, err := s.run(ctx, quarantineScript, found.ID, found.Owner, found.ExpiresAt.Unix(), now.UnixMilli())
	if err != nil {
		return idempotency.Record{}, storeError("quarantine", found.ID, err)
	}
	code, fields, err := parseReply(reply)
	if err != nil {
		return idempotency.Record{}, storeError("quarantine", found.ID, err)
	}
	var rec idempotency.Record
	if len(fields) > 0 {
		if rec, err = decode(found.ID, fields); err != nil {
			return idempotency.Record{}, storeError("quarantine", found.ID, fmt.Errorf("redisstore: read record: %w", err))
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
		case rec.Status != idempotency.StatusInProgress:
			why = "the record is " + string(rec.Status)
		case rec.Owner != found.Owner:
			why = "the lease was taken over by another owner"
		default:
			why = "the claim's lease or expiry changed"
		}
		return rec, storeError("quarantine", found.ID, fmt.Errorf("redisstore: %s: %w", why, idempotency.ErrLeaseLost))
	}
	return idempotency.Record{}, storeError("quarantine", found.ID, unexpected(code, fields))
}
