package storetest

import (
	"bytes"
	"context"
	"crypto/rand"
	"errors"
	"fmt"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/sqsonce/sqsonce/middleware/idempotency/driver"
)

// ListPages is the number of records the Inspector's listing case writes
// and lists, to cross the stores' pages (pgstore's 500 rows, redisstore's
// SCAN steps of 200).
const ListPages = 550

// inspected is a set of records written for the Inspector's cases, one of
// each kind, under a namespace of their own.
type inspected struct {
	ns                                     string
	done, stuck, live, strict, released, q driver.Record
}

// writeInspected writes, through s, a completed record, a claim whose
// lease lapsed, a live claim, a strict claim whose StrictLease lapsed, a
// released claim (no record), and a claim quarantined as strict mode
// leaves one.
func writeInspected(t *testing.T, s driver.Store) inspected {
	t.Helper()
	ctx := context.Background()
	now := base() // whole seconds: a quarantine sets the lease to the expiry, kept in seconds
	w := inspected{ns: "inspect-" + rand.Text()[:10] + "#"}
	claim := func(name string, lease time.Duration, strict bool) driver.Record {
		t.Helper()
		rec := driver.Record{ID: w.ns + name, Status: driver.StatusInProgress,
			ExpiresAt: now.Add(time.Hour), LeaseUntil: now.Add(lease), Owner: rand.Text()}
		if strict { // as a strict guard writes it
			rec.StrictLease, rec.LeaseUntil = rec.LeaseUntil, rec.ExpiresAt
		}
		if _, loaded, err := s.Acquire(ctx, rec, now, driver.Takeover); err != nil || loaded {
			t.Fatalf("acquire %s: loaded %v, %v", name, loaded, err)
		}
		return rec
	}
	w.done = claim("completed", time.Minute, false)
	w.done.Data, w.done.ExpiresAt = []byte(`{"summary":"ok","n":1}`), now.Add(2*time.Hour)
	if _, err := s.Complete(ctx, w.done); err != nil {
		t.Fatal(err)
	}
	w.done.Status = driver.StatusCompleted
	w.stuck = claim("stuck", -time.Minute, false)
	w.live = claim("live", time.Hour, false)
	w.strict = claim("strict", -time.Minute, true)
	w.released = claim("released", time.Minute, false)
	if err := s.Release(ctx, w.released.ID, w.released.Owner); err != nil {
		t.Fatal(err)
	}
	lapsed := claim("quarantined", -2*time.Second, false)
	q, err := s.Quarantine(ctx, lapsed, now.Add(-time.Second))
	if err != nil {
		t.Fatal(err)
	}
	w.q = lapsed
	w.q.Quarantined, w.q.LeaseUntil = now.Add(-time.Second), lapsed.ExpiresAt
	sameRecord(t, "quarantined claim", q, w.q)
	return w
}

// sameInspected compares what an Inspector read with what was written.
func sameInspected(t *testing.T, got driver.StoredRecord, want driver.Record) {
	t.Helper()
	if got.ID != want.ID || got.Status != want.Status || got.Owner != want.Owner ||
		got.ExpiresAt.Unix() != want.ExpiresAt.Unix() || got.LeaseUntil.UnixMilli() != want.LeaseUntil.UnixMilli() ||
		got.Quarantined.UnixMilli() != want.Quarantined.UnixMilli() || !bytes.Equal(got.Data, want.Data) ||
		got.StrictLease.IsZero() != want.StrictLease.IsZero() || got.StrictLease.UnixMilli() != want.StrictLease.UnixMilli() ||
		got.LeaseEnd().UnixMilli() != want.LeaseEnd().UnixMilli() {
		t.Errorf("record %s:\n got %+v\nwant %+v", want.ID, got.Record, want)
	}
	if want.Data != nil && got.Size == 0 {
		t.Errorf("record %s: Size 0 with a result", want.ID)
	}
	if want.Quarantined.IsZero() != got.Quarantined.IsZero() {
		t.Errorf("record %s: Quarantined %v, want %v", want.ID, got.Quarantined, want.Quarantined)
	}
}

// testInspect: Inspect returns each record as written, and ErrNotFound for
// a released claim and an id never written.
func testInspect(t *testing.T, s driver.Store, in driver.Inspector) {
	w := writeInspected(t, s)
	ctx := context.Background()
	for _, want := range []driver.Record{w.done, w.stuck, w.live, w.strict, w.q} {
		got, err := in.Inspect(ctx, want.ID)
		if err != nil {
			t.Fatalf("inspect %s: %v", want.ID, err)
		}
		sameInspected(t, got, want)
	}
	for _, id := range []string{w.released.ID, w.ns + "never-written"} {
		if got, err := in.Inspect(ctx, id); !errors.Is(err, driver.ErrNotFound) {
			t.Errorf("inspect %s: %+v, %v; want ErrNotFound", id, got, err)
		}
	}
}

// list returns what in lists for opts, by id, failing on an error or an id
// listed twice.
func list(t *testing.T, in driver.Inspector, opts driver.ListOptions) map[string]driver.StoredRecord {
	t.Helper()
	got := map[string]driver.StoredRecord{}
	for rec, err := range in.List(context.Background(), opts) {
		if err != nil {
			t.Fatalf("list %+v: %v", opts, err)
		}
		if _, dup := got[rec.ID]; dup {
			t.Errorf("list %+v: %s twice", opts, rec.ID)
		}
		got[rec.ID] = rec
	}
	return got
}

func ids(m map[string]driver.StoredRecord) []string {
	var out []string
	for id := range m {
		out = append(out, id)
	}
	slices.Sort(out)
	return out
}

// testList: List selects by prefix and status, takes the prefix literally,
// and stops when the caller does.
func testList(t *testing.T, s driver.Store, in driver.Inspector) {
	w := writeInspected(t, s)
	all := list(t, in, driver.ListOptions{Prefix: w.ns})
	if want := []string{w.done.ID, w.live.ID, w.q.ID, w.strict.ID, w.stuck.ID}; !slices.Equal(ids(all), want) {
		t.Fatalf("list %s: %v, want %v", w.ns, ids(all), want)
	}
	for _, want := range []driver.Record{w.done, w.stuck, w.live, w.strict, w.q} {
		sameInspected(t, all[want.ID], want)
	}
	inProgress := list(t, in, driver.ListOptions{Prefix: w.ns, Status: driver.StatusInProgress})
	if want := []string{w.live.ID, w.q.ID, w.strict.ID, w.stuck.ID}; !slices.Equal(ids(inProgress), want) {
		t.Errorf("list INPROGRESS: %v, want %v", ids(inProgress), want)
	}
	completed := list(t, in, driver.ListOptions{Prefix: w.ns, Status: driver.StatusCompleted})
	if want := []string{w.done.ID}; !slices.Equal(ids(completed), want) {
		t.Errorf("list COMPLETED: %v, want %v", ids(completed), want)
	}
	if got := list(t, in, driver.ListOptions{Prefix: w.ns + "%_*?[x]"}); len(got) != 0 {
		t.Errorf("list with a prefix of pattern characters: %v", ids(got))
	}
	n := 0
	for range in.List(context.Background(), driver.ListOptions{Prefix: w.ns}) {
		n++
		break
	}
	if n != 1 {
		t.Errorf("list after break: %d records", n)
	}
}

// testListPages: List yields every one of ListPages records, each once.
func testListPages(t *testing.T, s driver.Store, in driver.Inspector) {
	ctx := context.Background()
	now := time.Now()
	ns := "pages-" + rand.Text()[:10] + "#"
	var (
		wg   sync.WaitGroup
		errs = make(chan error, ListPages)
		next = make(chan int)
	)
	for range 16 {
		wg.Go(func() {
			for i := range next {
				rec := driver.Record{ID: fmt.Sprintf("%s%05d", ns, i), Status: driver.StatusInProgress,
					ExpiresAt: now.Add(time.Hour), LeaseUntil: now.Add(time.Hour), Owner: rand.Text()}
				if _, _, err := s.Acquire(ctx, rec, now, driver.Takeover); err != nil {
					errs <- err
				}
			}
		})
	}
	for i := range ListPages {
		next <- i
	}
	close(next)
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Fatal(err)
	}
	if got := list(t, in, driver.ListOptions{Prefix: ns}); len(got) != ListPages {
		t.Errorf("listed %d of %d records", len(got), ListPages)
	}
}

// testInspectedWrites: ReleaseInspected and CompleteInspected act on the
// record as it was read, and on nothing else: a record that changed since
// (here: quarantined meanwhile, its lease and mark new) is left alone with
// ErrLeaseLost; the record read again is written; a completion sent again
// finds its own and succeeds, one with another result does not; a second
// release finds nothing to release.
func testInspectedWrites(t *testing.T, s driver.Store, in driver.Inspector) {
	ctx := context.Background()
	now := time.Now()
	ns := "written-" + rand.Text()[:10] + "#"
	lapsed := func(id string) driver.StoredRecord {
		t.Helper()
		rec := driver.Record{ID: ns + id, Status: driver.StatusInProgress, ExpiresAt: now.Add(time.Hour),
			LeaseUntil: now.Add(-time.Minute), Owner: rand.Text()}
		if _, loaded, err := s.Acquire(ctx, rec, now.Add(-time.Hour), driver.Takeover); err != nil || loaded {
			t.Fatalf("claim: %v (loaded %v)", err, loaded)
		}
		found, err := in.Inspect(ctx, rec.ID)
		if err != nil {
			t.Fatal(err)
		}
		return found
	}

	found := lapsed("complete")
	if _, err := s.Quarantine(ctx, found.Record, now); err != nil {
		t.Fatal(err)
	}
	done := driver.Record{ID: found.ID, Status: driver.StatusCompleted, Owner: found.Owner,
		ExpiresAt: found.ExpiresAt, Data: []byte(`{"summary":"by hand"}`)}
	if err := in.CompleteInspected(ctx, found.Record, done); !errors.Is(err, driver.ErrLeaseLost) {
		t.Errorf("complete a record quarantined since it was read: %v, want ErrLeaseLost", err)
	}
	if err := in.ReleaseInspected(ctx, found.Record); !errors.Is(err, driver.ErrLeaseLost) {
		t.Errorf("release a record quarantined since it was read: %v, want ErrLeaseLost", err)
	}
	again, err := in.Inspect(ctx, found.ID)
	if err != nil || again.Status != driver.StatusInProgress || again.Quarantined.IsZero() {
		t.Fatalf("after the refused writes: %+v, %v", again, err)
	}
	if err := in.CompleteInspected(ctx, again.Record, done); err != nil {
		t.Fatalf("complete the record as read again: %v", err)
	}
	if err := in.CompleteInspected(ctx, again.Record, done); err != nil {
		t.Errorf("the same completion sent again: %v, want its own found", err)
	}
	other := done
	other.Data = []byte(`{"summary":"another"}`)
	if err := in.CompleteInspected(ctx, again.Record, other); !errors.Is(err, driver.ErrLeaseLost) {
		t.Errorf("another result on the completed record: %v, want ErrLeaseLost", err)
	}
	if err := in.ReleaseInspected(ctx, again.Record); !errors.Is(err, driver.ErrLeaseLost) {
		t.Errorf("release the completed record: %v, want ErrLeaseLost", err)
	}
	if rec, err := in.Inspect(ctx, found.ID); err != nil || rec.Status != driver.StatusCompleted || string(rec.Data) != string(done.Data) || !rec.Quarantined.IsZero() {
		t.Errorf("the completed record: %+v, %v", rec, err)
	}

	found = lapsed("release")
	if err := in.ReleaseInspected(ctx, found.Record); err != nil {
		t.Fatalf("release: %v", err)
	}
	if _, err := in.Inspect(ctx, found.ID); !errors.Is(err, driver.ErrNotFound) {
		t.Errorf("after release: %v, want ErrNotFound", err)
	}
	if err := in.ReleaseInspected(ctx, found.Record); !errors.Is(err, driver.ErrLeaseLost) {
		t.Errorf("a second release: %v, want ErrLeaseLost", err)
	}
}
