package driver_test

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"sync"
	"time"

	"github.com/sqsonce/sqsonce/middleware/idempotency"
	"github.com/sqsonce/sqsonce/middleware/idempotency/driver"
)

// mapStore is a store in a map: each method one step under one lock, as a
// database evaluates one conditional write. Its tests would call
// storetest.Run(t, func(*testing.T) driver.Store { return newMapStore() }).
type mapStore struct {
	mu      sync.Mutex
	records map[string]driver.Record
}

var _ driver.Store = (*mapStore)(nil)

func newMapStore() *mapStore { return &mapStore{records: map[string]driver.Record{}} }

func (s *mapStore) Acquire(_ context.Context, rec driver.Record, now time.Time, mode driver.ClaimMode) (driver.Record, bool, error) {
	if rec.Owner == "" {
		return driver.Record{}, false, errors.New("mapstore: a claim without an owner cannot be fenced")
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	old, ok := s.records[rec.ID]
	switch {
	case ok && old.Status == driver.StatusInProgress && old.Owner == rec.Owner:
		return driver.Record{}, false, nil // this claim, sent again
	case ok && old.ExpiresAt.After(now) &&
		(mode == driver.NoTakeover || old.Status != driver.StatusInProgress || !old.LeaseUntil.Before(now)):
		return old, true, nil
	}
	rec.Attached = nil
	s.records[rec.ID] = rec
	return old, false, nil
}

func (s *mapStore) Complete(_ context.Context, rec driver.Record) ([]byte, error) {
	if len(rec.Attached) > 0 {
		return nil, driver.ErrAttachUnsupported
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	old, ok := s.records[rec.ID]
	switch {
	case ok && old.Status == driver.StatusCompleted && old.Owner == rec.Owner:
		return old.Data, nil // this completion, sent again
	case !ok || old.Status != driver.StatusInProgress || old.Owner != rec.Owner:
		return nil, driver.ErrLeaseLost
	}
	old.Status, old.Data, old.ExpiresAt, old.Quarantined = driver.StatusCompleted, rec.Data, rec.ExpiresAt, time.Time{}
	s.records[rec.ID] = old
	return rec.Data, nil
}

func (s *mapStore) Release(_ context.Context, id, owner string) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if old, ok := s.records[id]; !ok || old.Status != driver.StatusInProgress || old.Owner != owner {
		return driver.ErrLeaseLost
	}
	delete(s.records, id)
	return nil
}

func (s *mapStore) Quarantine(_ context.Context, found driver.Record, now time.Time) (driver.Record, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	old, ok := s.records[found.ID]
	if !ok || old.Status != driver.StatusInProgress || old.Owner != found.Owner || !old.ExpiresAt.Equal(found.ExpiresAt) ||
		!old.LeaseEnd().Before(now) || !old.Quarantined.IsZero() {
		return old, driver.ErrLeaseLost
	}
	old.Quarantined, old.LeaseUntil = now, old.ExpiresAt
	s.records[found.ID] = old
	return old, nil
}

var _ driver.Extender = (*mapStore)(nil)

func (s *mapStore) Extend(_ context.Context, rec driver.Record, now time.Time) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	old, ok := s.records[rec.ID]
	if !ok || old.Status != driver.StatusInProgress || old.Owner != rec.Owner || !old.Quarantined.IsZero() || !old.ExpiresAt.After(now) {
		return driver.ErrLeaseLost
	}
	if rec.Strict() {
		old.StrictLease = rec.StrictLease
	} else {
		old.LeaseUntil = rec.LeaseUntil
	}
	s.records[rec.ID] = old
	return nil
}

// A store needs the four methods of Store (Extend, which keeps claims
// alive, is optional: driver.Extender); a guard then runs an operation
// once per key on it.
func Example() {
	g, err := idempotency.New(idempotency.Config{Store: newMapStore(), Namespace: "orders", Logger: slog.New(slog.DiscardHandler)})
	if err != nil {
		panic(err)
	}
	runs := 0
	for range 2 {
		n, err := idempotency.Do(context.Background(), g, idempotency.Raw([]byte(`"o-1"`)), func(context.Context) (int, error) {
			runs++
			return runs, nil
		})
		fmt.Println(n, err)
	}
	// Output:
	// 1 <nil>
	// 1 <nil>
}
