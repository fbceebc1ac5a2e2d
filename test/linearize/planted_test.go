package linearize

import (
	"context"
	"fmt"
	"sync"
	"testing"
	"testing/synctest"
	"time"

	"github.com/anishathalye/porcupine"

	"github.com/sqsonce/sqsonce/middleware/idempotency/driver"
	"github.com/sqsonce/sqsonce/middleware/idempotency/memstore"
)

// The defects TestPlanted plants in memstore, one at a time.
const (
	plantUnfencedComplete = "a completion without the owner fence"
	plantEarlyTakeover    = "a live lease taken over (50 ms early)"
	plantStrictTakeover   = "a strict claim that takes a lapsed lease over"
	plantResentComplete   = "a completion sent again refused (its first attempt applied)"
	plantUnfencedRelease  = "a release without the owner fence"
	plantLiveQuarantine   = "a quarantine of a live lease"
	plantResentClaim      = "a claim sent again refused by its own first attempt"
	plantNoExpiry         = "a completed record that never expires"
)

// planted is memstore with one defect planted. Its composite steps read
// and write the record under one lock, so that each stays atomic.
type planted struct {
	mu     sync.Mutex
	m      *memstore.Store
	defect string
}

var _ driver.Store = (*planted)(nil)

func (p *planted) Acquire(ctx context.Context, rec driver.Record, now time.Time, mode driver.ClaimMode) (driver.Record, bool, error) {
	p.mu.Lock()
	defer p.mu.Unlock()
	cur, ok := p.m.Get(rec.ID)
	inProgress := ok && cur.Status == driver.StatusInProgress
	switch {
	case p.defect == plantEarlyTakeover && mode == driver.Takeover && inProgress && cur.Owner != rec.Owner &&
		cur.ExpiresAt.After(now) && !cur.LeaseUntil.Before(now) && cur.LeaseUntil.Before(now.Add(50*time.Millisecond)):
		p.m.Put(rec)
		return cur, false, nil
	case p.defect == plantStrictTakeover:
		mode = driver.Takeover
	case p.defect == plantResentClaim && inProgress && cur.Owner == rec.Owner:
		return cur, true, nil
	case p.defect == plantNoExpiry && ok && cur.Status == driver.StatusCompleted:
		return cur, true, nil
	}
	return p.m.Acquire(ctx, rec, now, mode)
}

func (p *planted) Complete(ctx context.Context, rec driver.Record) ([]byte, error) {
	p.mu.Lock()
	defer p.mu.Unlock()
	cur, ok := p.m.Get(rec.ID)
	switch {
	case p.defect == plantUnfencedComplete && ok && cur.Status == driver.StatusInProgress && cur.Owner != rec.Owner:
		cur.Status, cur.Data, cur.ExpiresAt, cur.Quarantined = driver.StatusCompleted, rec.Data, rec.ExpiresAt, time.Time{}
		p.m.Put(cur)
		return rec.Data, nil
	case p.defect == plantResentComplete && ok && cur.Status == driver.StatusCompleted && cur.Owner == rec.Owner:
		return nil, fmt.Errorf("planted: complete %s: %w", rec.ID, driver.ErrLeaseLost)
	}
	return p.m.Complete(ctx, rec)
}

func (p *planted) Release(ctx context.Context, id, owner string) error {
	p.mu.Lock()
	defer p.mu.Unlock()
	if cur, ok := p.m.Get(id); p.defect == plantUnfencedRelease && ok && cur.Status == driver.StatusInProgress {
		owner = cur.Owner
	}
	return p.m.Release(ctx, id, owner)
}

func (p *planted) Quarantine(ctx context.Context, found driver.Record, now time.Time) (driver.Record, error) {
	p.mu.Lock()
	defer p.mu.Unlock()
	cur, ok := p.m.Get(found.ID)
	if p.defect == plantLiveQuarantine && ok && cur.Status == driver.StatusInProgress && cur.Owner == found.Owner &&
		cur.ExpiresAt.Equal(found.ExpiresAt) && cur.Quarantined.IsZero() && !cur.LeaseEnd().Before(now) {
		cur.Quarantined, cur.LeaseUntil = now, cur.ExpiresAt
		p.m.Put(cur)
		return cur, nil
	}
	return p.m.Quarantine(ctx, found, now)
}

func (p *planted) Inspect(ctx context.Context, id string) (driver.StoredRecord, error) {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.m.Inspect(ctx, id)
}

// plantedOps is the least operations of a planted run: enough that every
// defect shows whatever the seed (at 1,500 a completion sent again was
// missed in one run of many).
const plantedOps = 3000

// TestPlanted: the checker bites. Each defect planted in memstore, under
// the same workload and faults as TestMemstore, makes porcupine find the
// history not linearizable. Each run is in a testing/synctest bubble, one
// client at a time (see subject.bubble): its history, and so its verdict,
// is the same each time for a seed, and make test's fixed seed catches
// every defect each time.
func TestPlanted(t *testing.T) {
	for _, defect := range []string{
		plantUnfencedComplete, plantEarlyTakeover, plantStrictTakeover, plantResentComplete,
		plantUnfencedRelease, plantLiveQuarantine, plantResentClaim, plantNoExpiry,
	} {
		t.Run(defect, func(t *testing.T) {
			t.Parallel()
			cfg := defaults()
			cfg.ops = max(cfg.ops, plantedOps)
			if *flagOut == "" {
				cfg.out = t.TempDir()
			}
			synctest.Test(t, func(t *testing.T) {
				s := memSubject("planted", cfg, &planted{m: memstore.New(), defect: defect})
				s.bubble = true
				exercise(t, s, cfg, porcupine.Illegal)
			})
		})
	}
}
