package storetest

import (
	"bytes"
	"context"
	"crypto/rand"
	"errors"
	"fmt"
	"slices"
	"testing"
	"time"

	"github.com/sqsonce/sqsonce/middleware/idempotency"
)

// InspectorStore is a Store whose records can be inspected.
type InspectorStore interface {
	idempotency.Store
	idempotency.Inspector
}

// RunInspector tests s's [idempotency.Inspector] on records s writes: a
// completed one, a claim whose lease lapsed, a live claim, a strict claim
// whose StrictLease lapsed, a released claim (no record), and a
// quarantined claim written by quarantine as strict
// mode leaves one (INPROGRESS, its lease extended to its expiry, the
// [idempotency.AttrQuarantined] mark). With many > 0 it lists that many
// records more, to cross the store's pages.
func RunInspector(t *testing.T, s InspectorStore, quarantine func(t *testing.T, rec idempotency.Record), many int) {
	t.Helper()
	ctx := context.Background()
	ns := "inspect-" + rand.Text()[:10] + "#"
	now := time.Now().Truncate(time.Millisecond)
	claim := func(name string, lease time.Duration, strict bool) idempotency.Record {
		t.Helper()
		rec := idempotency.Record{ID: ns + name, Status: idempotency.StatusInProgress,
			ExpiresAt: now.Add(time.Hour), LeaseUntil: now.Add(lease), Owner: rand.Text()}
		if strict { // as a strict guard writes it
			rec.StrictLease, rec.LeaseUntil = rec.LeaseUntil, rec.ExpiresAt
		}
		if _, loaded, err := s.Acquire(ctx, rec, now); err != nil || loaded {
			t.Fatalf("acquire %s: loaded %v, %v", name, loaded, err)
		}
		return rec
	}
	done := claim("completed", time.Minute, false)
	done.Data, done.ExpiresAt = []byte(`{"summary":"ok","n":1}`), now.Add(2*time.Hour)
	if err := s.Complete(ctx, done); err != nil {
		t.Fatal(err)
	}
	done.Status = idempotency.StatusCompleted
	stuck := claim("stuck", -time.Minute, false)
	live := claim("live", time.Hour, false)
	strict := claim("strict", -time.Minute, true)
	released := claim("released", time.Minute, false)
	if err := s.Release(ctx, released.ID, released.Owner); err != nil {
		t.Fatal(err)
	}
	q := idempotency.Record{ID: ns + "quarantined", Status: idempotency.StatusInProgress,
		ExpiresAt: now.Add(time.Hour), Owner: rand.Text(), Quarantined: now.Add(-time.Second)}
	q.LeaseUntil = q.ExpiresAt
	quarantine(t, q)

	same := func(t *testing.T, got idempotency.StoredRecord, want idempotency.Record) {
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
	t.Run("Inspect", func(t *testing.T) {
		for _, want := range []idempotency.Record{done, stuck, live, strict, q} {
			got, err := s.Inspect(ctx, want.ID)
			if err != nil {
				t.Fatalf("inspect %s: %v", want.ID, err)
			}
			same(t, got, want)
		}
		for _, id := range []string{released.ID, ns + "never-written"} {
			if got, err := s.Inspect(ctx, id); !errors.Is(err, idempotency.ErrNotFound) {
				t.Errorf("inspect %s: %+v, %v; want ErrNotFound", id, got, err)
			}
		}
	})
	t.Run("List", func(t *testing.T) {
		list := func(opts idempotency.ListOptions) map[string]idempotency.StoredRecord {
			t.Helper()
			got := map[string]idempotency.StoredRecord{}
			for rec, err := range s.List(ctx, opts) {
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
		ids := func(m map[string]idempotency.StoredRecord) []string {
			var out []string
			for id := range m {
				out = append(out, id)
			}
			slices.Sort(out)
			return out
		}
		all := list(idempotency.ListOptions{Prefix: ns})
		if want := []string{done.ID, live.ID, q.ID, strict.ID, stuck.ID}; !slices.Equal(ids(all), want) {
			t.Fatalf("list %s: %v, want %v", ns, ids(all), want)
		}
		for _, want := range []idempotency.Record{done, stuck, live, strict, q} {
			same(t, all[want.ID], want)
		}
		inProgress := list(idempotency.ListOptions{Prefix: ns, Status: idempotency.StatusInProgress})
		if want := []string{live.ID, q.ID, strict.ID, stuck.ID}; !slices.Equal(ids(inProgress), want) {
			t.Errorf("list INPROGRESS: %v, want %v", ids(inProgress), want)
		}
		completed := list(idempotency.ListOptions{Prefix: ns, Status: idempotency.StatusCompleted})
		if want := []string{done.ID}; !slices.Equal(ids(completed), want) {
			t.Errorf("list COMPLETED: %v, want %v", ids(completed), want)
		}
		if got := list(idempotency.ListOptions{Prefix: ns + "%_*?[x]"}); len(got) != 0 {
			t.Errorf("list with a prefix of pattern characters: %v", ids(got))
		}
		n := 0
		for range s.List(ctx, idempotency.ListOptions{Prefix: ns}) {
			n++
			break
		}
		if n != 1 {
			t.Errorf("list after break: %d records", n)
		}
	})
	if many > 0 {
		t.Run("Pages", func(t *testing.T) {
			pns := ns + "pages-"
			for i := range many {
				rec := idempotency.Record{ID: fmt.Sprintf("%s%05d", pns, i), Status: idempotency.StatusInProgress,
					ExpiresAt: now.Add(time.Hour), LeaseUntil: now.Add(time.Hour), Owner: rand.Text()}
				if _, _, err := s.Acquire(ctx, rec, now); err != nil {
					t.Fatal(err)
				}
			}
			seen := map[string]bool{}
			for rec, err := range s.List(ctx, idempotency.ListOptions{Prefix: pns}) {
				if err != nil {
					t.Fatal(err)
				}
				seen[rec.ID] = true
			}
			if len(seen) != many {
				t.Errorf("listed %d of %d records", len(seen), many)
			}
		})
	}
}
