package memstore

import (
	"bytes"
	"context"
	"fmt"
	"iter"
	"slices"
	"strings"
	"time"

	"github.com/sqsonce/sqsonce/middleware/idempotency/driver"
)

var _ driver.Inspector = (*Store)(nil)

// Inspect implements [driver.Inspector.Inspect].
func (s *Store) Inspect(ctx context.Context, id string) (driver.StoredRecord, error) {
	if err := ctx.Err(); err != nil {
		return driver.StoredRecord{}, err
	}
	rec, ok := s.Get(id)
	if !ok {
		return driver.StoredRecord{}, fmt.Errorf("memstore: inspect %s: %w", id, driver.ErrNotFound)
	}
	return driver.StoredRecord{Record: rec, Size: len(rec.Data)}, nil
}

// List implements [driver.Inspector.List], in the order of the ids.
func (s *Store) List(ctx context.Context, opts driver.ListOptions) iter.Seq2[driver.StoredRecord, error] {
	return func(yield func(driver.StoredRecord, error) bool) {
		s.mu.Lock()
		var recs []driver.Record
		for _, r := range s.records {
			if opts.Match(r) {
				recs = append(recs, clone(r))
			}
		}
		s.mu.Unlock()
		slices.SortFunc(recs, func(a, b driver.Record) int { return strings.Compare(a.ID, b.ID) })
		for _, r := range recs {
			if err := ctx.Err(); err != nil {
				yield(driver.StoredRecord{}, err)
				return
			}
			if !yield(driver.StoredRecord{Record: r, Size: len(r.Data)}, nil) {
				return
			}
		}
	}
}

// ReleaseInspected implements [driver.Inspector.ReleaseInspected].
func (s *Store) ReleaseInspected(ctx context.Context, found driver.Record) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if err := s.asInspected("release", found); err != nil {
		return err
	}
	delete(s.records, found.ID)
	return nil
}

// CompleteInspected implements [driver.Inspector.CompleteInspected]. The
// memory store keeps every result in full.
func (s *Store) CompleteInspected(ctx context.Context, found, done driver.Record) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	if found.ID == "" || done.ID != found.ID || done.Owner == "" {
		return fmt.Errorf("memstore: complete %s: the completion names another id than the record found, or no owner", found.ID)
	}
	if len(done.Attached) > 0 {
		return fmt.Errorf("memstore: complete %s: %w", found.ID, driver.ErrAttachUnsupported)
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if cur, ok := s.records[found.ID]; ok && cur.Status == driver.StatusCompleted && cur.Owner == done.Owner && bytes.Equal(cur.Data, done.Data) {
		return nil // this completion, made again
	}
	if err := s.asInspected("complete", found); err != nil {
		return err
	}
	rec := s.records[found.ID]
	rec.Status, rec.Data, rec.ExpiresAt, rec.Owner, rec.Quarantined = driver.StatusCompleted, bytes.Clone(done.Data), done.ExpiresAt, done.Owner, time.Time{}
	s.records[found.ID] = rec
	return nil
}

// asInspected fails, wrapping [driver.ErrLeaseLost], unless the record is
// found as it was inspected: INPROGRESS, with its owner (or none), expiry,
// lease end, strict lease and quarantine mark. s.mu is held.
func (s *Store) asInspected(op string, found driver.Record) error {
	cur, ok := s.records[found.ID]
	if !ok || cur.Status != driver.StatusInProgress || cur.Owner != found.Owner || !cur.ExpiresAt.Equal(found.ExpiresAt) ||
		!cur.LeaseUntil.Equal(found.LeaseUntil) || !cur.StrictLease.Equal(found.StrictLease) || !cur.Quarantined.Equal(found.Quarantined) {
		return fmt.Errorf("memstore: %s %s: the record is not as inspected: %w", op, found.ID, driver.ErrLeaseLost)
	}
	return nil
}
