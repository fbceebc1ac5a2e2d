package storetest

import (
	"context"
	"errors"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/sqsonce/sqsonce/middleware/idempotency/driver"
)

// raceRounds is how many keys the racing cases below race on: a race a
// store loses now and then must show within them.
const raceRounds = 10

// raceClients is how many goroutines race on each key in those cases.
const raceClients = 16

// testQuarantineRefusedByCompletion: a strict claim finds a lapsed claim;
// before it quarantines it, the holder completes it. The quarantine is
// refused, and returns the completed record with its result (or none): a
// guard replays what it returns.
func testQuarantineRefusedByCompletion(t *testing.T, s driver.Store) {
	first, found, later := lapsedClaim(t, s)
	done := mustComplete(t, s, first, `{"result":"stored"}`)
	got, err := s.Quarantine(context.Background(), found, later)
	if !errors.Is(err, driver.ErrLeaseLost) {
		t.Fatalf("Quarantine of a claim completed since: err = %v, want ErrLeaseLost", err)
	}
	if got.ID == "" && got.Status == "" {
		return // the store cannot tell: the guard claims again and finds it
	}
	if got.Status != driver.StatusCompleted || !jsonEqual(got.Data, done.Data) {
		t.Errorf("Quarantine refused by the completed record returned status %q with result %q; want it COMPLETED with its result %q, or no record",
			got.Status, got.Data, done.Data)
	}
}

// testQuarantineRefusedByRelease: the same, the holder releasing its
// claim: the refusal returns no record (a claim finds the key free), not
// the release as a claim.
func testQuarantineRefusedByRelease(t *testing.T, s driver.Store) {
	first, found, later := lapsedClaim(t, s)
	if err := s.Release(context.Background(), first.ID, first.Owner); err != nil {
		t.Fatalf("Release by its owner: %v", err)
	}
	got, err := s.Quarantine(context.Background(), found, later)
	if !errors.Is(err, driver.ErrLeaseLost) {
		t.Fatalf("Quarantine of a claim released since: err = %v, want ErrLeaseLost", err)
	}
	if got.Status != "" {
		t.Errorf("Quarantine refused by the released claim returned a record (status %q, owner %q, lease until %v); want none",
			got.Status, got.Owner, got.LeaseUntil)
	}
}

// testRaceQuarantineAnswers: of raceClients quarantines of one lapsed
// claim at once, exactly one succeeds, and every other is refused with the
// record that refused it, quarantined (or none): never the record as it
// was before the winner's write, which the quarantine would have taken.
func testRaceQuarantineAnswers(t *testing.T, s driver.Store) {
	for range raceRounds {
		first, found, later := lapsedClaim(t, s)
		var (
			won   atomic.Int32
			start = make(chan struct{})
			wg    sync.WaitGroup
			mu    sync.Mutex
			stale []driver.Record
			errs  []error
		)
		for range raceClients {
			wg.Go(func() {
				<-start
				got, err := s.Quarantine(context.Background(), found, later)
				mu.Lock()
				defer mu.Unlock()
				switch {
				case err == nil:
					won.Add(1)
				case !errors.Is(err, driver.ErrLeaseLost):
					errs = append(errs, err)
				case got.Status != "" && (got.Status != driver.StatusInProgress || got.Owner != first.Owner || got.Quarantined.IsZero()):
					stale = append(stale, got)
				}
			})
		}
		close(start)
		wg.Wait()
		for _, err := range errs {
			t.Errorf("Quarantine: %v", err)
		}
		if won.Load() != 1 {
			t.Fatalf("%d racing quarantines of one lapsed claim: %d succeeded, want 1", raceClients, won.Load())
		}
		if len(stale) > 0 {
			got := stale[0]
			t.Fatalf("%d of %d racing quarantines were refused with a record not quarantined (status %q, owner %q, quarantined %v, lease until %v); want the winner's record, quarantined, or none",
				len(stale), raceClients-1, got.Status, got.Owner, got.Quarantined, got.LeaseUntil)
		}
	}
}

// testRaceClaimRelease: claims of a live claim's key, default and strict,
// race with its owner's release. The claim that wins claims a free key:
// it replaced nothing (no live claim is ever taken over), and says so.
func testRaceClaimRelease(t *testing.T, s driver.Store) {
	ctx := context.Background()
	for round := range raceRounds {
		k, holder, now := claimed(t, s, time.Hour)
		var (
			tries  atomic.Int64
			start  = make(chan struct{})
			stop   atomic.Bool
			wg     sync.WaitGroup
			mu     sync.Mutex
			wins   []driver.Record // what each winning claim replaced
			errs   []error
			owners = map[string]bool{}
		)
		for i := range raceClients {
			mode := driver.Takeover
			if i%2 == 1 {
				mode = driver.NoTakeover
			}
			wg.Go(func() {
				<-start
				for !stop.Load() {
					rec := claim(k, now, time.Hour)
					prev, loaded, err := s.Acquire(ctx, rec, now, mode)
					tries.Add(1)
					mu.Lock()
					switch {
					case err != nil:
						errs = append(errs, err)
					case !loaded:
						wins = append(wins, prev)
						owners[rec.Owner] = true
						stop.Store(true)
					case prev.Owner != holder.Owner:
						stop.Store(true) // another racer won
					}
					mu.Unlock()
				}
			})
		}
		close(start)
		// Release once the claims are under way, as a delivery's release
		// meets the duplicates in flight.
		for tries.Load() < int64(raceClients)*int64(1+round%3) && !stop.Load() {
			time.Sleep(100 * time.Microsecond)
		}
		if err := s.Release(ctx, k, holder.Owner); err != nil {
			stop.Store(true)
			wg.Wait()
			t.Fatalf("Release by its owner: %v", err)
		}
		wg.Wait()
		for _, err := range errs {
			t.Errorf("Acquire: %v", err)
		}
		if len(wins) != 1 {
			t.Fatalf("claims racing a release: %d claimed the key, want 1", len(wins))
		}
		if prev := wins[0]; prev.ID != "" || prev.Status != "" {
			t.Fatalf("the claim that raced the release of a live claim reported it replaced a record (status %q, owner is the released claim's: %v); want none: the key was free",
				prev.Status, prev.Owner == holder.Owner)
		}
	}
}
