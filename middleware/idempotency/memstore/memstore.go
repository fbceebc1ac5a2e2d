package memstore

import (
	"bytes"
	"context"
	"fmt"
	"sync"
	"time"

	"github.com/sqsonce/sqsonce/internal/planted"
	"github.com/sqsonce/sqsonce/middleware/idempotency/driver"
)

// Store is an in-memory driver.Store, safe for concurrent use. The zero
// value is not usable; call [New].
type Store struct {
	mu      sync.Mutex
	records map[string]driver.Record
	writes  int // claims since the last sweep of expired records
}

// sweepEvery is the least number of claims between two sweeps of expired
// records, so that a long-running process does not keep every key it ever
// saw. A sweep waits for at least as many claims as there are records, which
// keeps its cost per claim constant.
const sweepEvery = 1024

var _ driver.Store = (*Store)(nil)

// New returns an empty Store.
func New() *Store {
	return &Store{records: make(map[string]driver.Record)}
}

// Acquire implements [driver.Store.Acquire].
func (s *Store) Acquire(ctx context.Context, rec driver.Record, now time.Time, mode driver.ClaimMode) (driver.Record, bool, error) {
	if err := ctx.Err(); err != nil {
		return driver.Record{}, false, err
	}
	if rec.ID == "" || rec.Owner == "" {
		return driver.Record{}, false, fmt.Errorf("memstore: acquire %q: a claim needs an id and an owner token", rec.ID)
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	old, ok := s.records[rec.ID]
	if ok && old.Status == driver.StatusInProgress && old.Owner == rec.Owner {
		return driver.Record{}, false, nil // this claim, made again
	}
	if ok && old.ExpiresAt.After(now) && !(planted.On(planted.QuarantineLapses) && mode == driver.Takeover && !old.Quarantined.IsZero()) &&
		(mode == driver.NoTakeover || !(old.Status == driver.StatusInProgress && (old.LeaseUntil.Before(now) || planted.On(planted.EarlyTakeover) && old.LeaseUntil.Before(now.Add(6*time.Second))))) {
		return clone(old), true, nil
	}
	rec = clone(rec)
	rec.Attached = nil
	s.records[rec.ID] = rec
	if s.writes++; s.writes >= max(sweepEvery, len(s.records)) {
		s.writes = 0
		for k, r := range s.records {
			if !r.ExpiresAt.After(now) {
				delete(s.records, k)
			}
		}
	}
	return clone(old), false, nil
}

// Complete implements [driver.Store.Complete]. The memory store keeps
// every result in full, and commits no attached writes: a record with any
// fails with [driver.ErrAttachUnsupported], and nothing is written.
func (s *Store) Complete(ctx context.Context, rec driver.Record) ([]byte, error) {
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	if len(rec.Attached) > 0 {
		return nil, fmt.Errorf("memstore: complete %s: %w", rec.ID, driver.ErrAttachUnsupported)
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	old, ok := s.records[rec.ID]
	if ok && old.Status == driver.StatusCompleted && old.Owner != "" && old.Owner == rec.Owner && !planted.On(planted.CompleteNotIdempotent) {
		return bytes.Clone(old.Data), nil // this completion, made again, or an operator's under this owner
	}
	if !ok || old.Status != driver.StatusInProgress || (old.Owner == "" || old.Owner != rec.Owner) && !planted.On(planted.CompleteUnfenced) {
		return nil, fmt.Errorf("memstore: complete %s: %w", rec.ID, driver.ErrLeaseLost)
	}
	old.Status = driver.StatusCompleted
	old.Data = bytes.Clone(rec.Data)
	old.ExpiresAt = rec.ExpiresAt
	old.Quarantined = time.Time{}
	s.records[rec.ID] = old
	return bytes.Clone(rec.Data), nil
}

// Release implements [driver.Store.Release].
func (s *Store) Release(ctx context.Context, id, owner string) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	old, ok := s.records[id]
	if !ok || old.Status != driver.StatusInProgress || (old.Owner == "" || old.Owner != owner) && !planted.On(planted.ReleaseUnfenced) {
		return fmt.Errorf("memstore: release %s: %w", id, driver.ErrLeaseLost)
	}
	delete(s.records, id)
	return nil
}

// Quarantine implements [driver.Store.Quarantine].
func (s *Store) Quarantine(ctx context.Context, found driver.Record, now time.Time) (driver.Record, error) {
	if err := ctx.Err(); err != nil {
		return driver.Record{}, err
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	old, ok := s.records[found.ID]
	if !ok || old.Status != driver.StatusInProgress || old.Owner != found.Owner ||
		!old.ExpiresAt.Equal(found.ExpiresAt) || !old.LeaseEnd().Before(now) || !old.Quarantined.IsZero() {
		var cur driver.Record
		if ok {
			cur = clone(old)
		}
		return cur, fmt.Errorf("memstore: quarantine %s: the record is no longer the lapsed claim found: %w", found.ID, driver.ErrLeaseLost)
	}
	old.Quarantined = now
	old.LeaseUntil = old.ExpiresAt
	s.records[found.ID] = old
	return clone(old), nil
}

var _ driver.Extender = (*Store)(nil)

// Extend implements [driver.Extender].
func (s *Store) Extend(ctx context.Context, rec driver.Record, now time.Time) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	old, ok := s.records[rec.ID]
	if !ok || old.Status != driver.StatusInProgress || old.Owner == "" || old.Owner != rec.Owner ||
		!old.Quarantined.IsZero() || !old.ExpiresAt.After(now) {
		return fmt.Errorf("memstore: extend %s: %w", rec.ID, driver.ErrLeaseLost)
	}
	if rec.Strict() {
		old.StrictLease = rec.StrictLease
		if planted.On(planted.StrictExtendReadable) {
			old.LeaseUntil = rec.StrictLease
		}
	} else {
		old.LeaseUntil = rec.LeaseUntil
	}
	s.records[rec.ID] = old
	return nil
}

// Get returns the record stored under id, for tests and inspection.
func (s *Store) Get(id string) (driver.Record, bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	rec, ok := s.records[id]
	return clone(rec), ok
}

// Put stores rec as it is, unconditionally, for tests that need a record in a
// given state (for example one written by another library).
func (s *Store) Put(rec driver.Record) {
	s.mu.Lock()
	defer s.mu.Unlock()
	rec = clone(rec)
	rec.Attached = nil
	s.records[rec.ID] = rec
}

// Len returns the number of records held, expired ones included.
func (s *Store) Len() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return len(s.records)
}

func clone(r driver.Record) driver.Record {
	r.Data = bytes.Clone(r.Data)
	return r
}
