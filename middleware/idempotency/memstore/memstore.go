package memstore

import (
	"bytes"
	"context"
	"fmt"
	"sync"
	"time"

	"github.com/sqsonce/sqsonce/middleware/idempotency"
)

// Store is an in-memory idempotency.Store, safe for concurrent use. The zero
// value is not usable; call [New].
type Store struct {
	mu      sync.Mutex
	records map[string]idempotency.Record
	writes  int // claims since the last sweep of expired records
}

// sweepEvery is the least number of claims between two sweeps of expired
// records, so that a long-running process does not keep every key it ever
// saw. A sweep waits for at least as many claims as there are records, which
// keeps its cost per claim constant.
const sweepEvery = 1024

var (
	_ idempotency.Store           = (*Store)(nil)
	_ idempotency.DataCompleter   = (*Store)(nil)
	_ idempotency.AttachValidator = (*Store)(nil)
	_ idempotency.Quarantiner     = (*Store)(nil)
)

// New returns an empty Store.
func New() *Store {
	return &Store{records: make(map[string]idempotency.Record)}
}

// Acquire implements [idempotency.Store.Acquire].
func (s *Store) Acquire(ctx context.Context, rec idempotency.Record, now time.Time) (idempotency.Record, bool, error) {
	return s.acquire(ctx, rec, now, false)
}

// AcquireStrict implements [idempotency.Quarantiner.AcquireStrict].
func (s *Store) AcquireStrict(ctx context.Context, rec idempotency.Record, now time.Time) (idempotency.Record, bool, error) {
	return s.acquire(ctx, rec, now, true)
}

func (s *Store) acquire(ctx context.Context, rec idempotency.Record, now time.Time, strict bool) (idempotency.Record, bool, error) {
	if err := ctx.Err(); err != nil {
		return idempotency.Record{}, false, err
	}
	if rec.ID == "" || rec.Owner == "" {
		return idempotency.Record{}, false, fmt.Errorf("memstore: acquire %q: a claim needs an id and an owner token", rec.ID)
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	old, ok := s.records[rec.ID]
	if ok && old.Status == idempotency.StatusInProgress && old.Owner == rec.Owner {
		return idempotency.Record{}, false, nil // this claim, made again
	}
	if ok && old.ExpiresAt.After(now) &&
		(strict || !(old.Status == idempotency.StatusInProgress && old.LeaseUntil.Before(now))) {
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

// Complete implements [idempotency.Store.Complete]: [Store.CompleteData]
// without the result it returns.
func (s *Store) Complete(ctx context.Context, rec idempotency.Record) error {
	_, err := s.CompleteData(ctx, rec)
	return err
}

// CompleteData implements [idempotency.DataCompleter]. The memory store
// keeps every result in full, and cannot commit attached writes: a record
// with any fails with [idempotency.ErrAttachUnsupported], and nothing is
// written. Finding the record completed by rec's owner already is a
// success, which returns the result stored then.
func (s *Store) CompleteData(ctx context.Context, rec idempotency.Record) ([]byte, error) {
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	if len(rec.Attached) > 0 {
		return nil, fmt.Errorf("memstore: complete %s: %w", rec.ID, idempotency.ErrAttachUnsupported)
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	old, ok := s.records[rec.ID]
	if ok && old.Status == idempotency.StatusCompleted && old.Owner != "" && old.Owner == rec.Owner {
		return bytes.Clone(old.Data), nil // this completion, made again, or an operator's under this owner
	}
	if !ok || old.Status != idempotency.StatusInProgress || old.Owner == "" || old.Owner != rec.Owner {
		return nil, fmt.Errorf("memstore: complete %s: %w", rec.ID, idempotency.ErrLeaseLost)
	}
	old.Status = idempotency.StatusCompleted
	old.Data = bytes.Clone(rec.Data)
	old.ExpiresAt = rec.ExpiresAt
	old.Quarantined = time.Time{}
	s.records[rec.ID] = old
	return bytes.Clone(rec.Data), nil
}

// ValidateAttached implements [idempotency.AttachValidator]: the memory
// store takes no attached writes.
func (s *Store) ValidateAttached(_ string, writes []any) error {
	if len(writes) > 0 {
		return fmt.Errorf("memstore: %w", idempotency.ErrAttachUnsupported)
	}
	return nil
}

// Release implements [idempotency.Store.Release].
func (s *Store) Release(ctx context.Context, id, owner string) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	old, ok := s.records[id]
	if !ok || old.Status != idempotency.StatusInProgress || old.Owner == "" || old.Owner != owner {
		return fmt.Errorf("memstore: release %s: %w", id, idempotency.ErrLeaseLost)
	}
	delete(s.records, id)
	return nil
}

// Quarantine implements [idempotency.Quarantiner.Quarantine].
func (s *Store) Quarantine(ctx context.Context, found idempotency.Record, now time.Time) (idempotency.Record, error) {
	if err := ctx.Err(); err != nil {
		return idempotency.Record{}, err
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	old, ok := s.records[found.ID]
	if !ok || old.Status != idempotency.StatusInProgress || old.Owner != found.Owner ||
		!old.ExpiresAt.Equal(found.ExpiresAt) || !old.LeaseEnd().Before(now) || !old.Quarantined.IsZero() {
		var cur idempotency.Record
		if ok {
			cur = clone(old)
		}
		return cur, fmt.Errorf("memstore: quarantine %s: the record is no longer the lapsed claim found: %w", found.ID, idempotency.ErrLeaseLost)
	}
	old.Quarantined = now
	old.LeaseUntil = old.ExpiresAt
	s.records[found.ID] = old
	return clone(old), nil
}

// Get returns the record stored under id, for tests and inspection.
func (s *Store) Get(id string) (idempotency.Record, bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	rec, ok := s.records[id]
	return clone(rec), ok
}

// Put stores rec as it is, unconditionally, for tests that need a record in a
// given state (for example one written by another library).
func (s *Store) Put(rec idempotency.Record) {
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

func clone(r idempotency.Record) idempotency.Record {
	r.Data = bytes.Clone(r.Data)
	return r
}
