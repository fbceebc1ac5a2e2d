package idempotency_test

import (
	"context"
	"fmt"
	"strings"
	"testing"

	"github.com/sqsonce/sqsonce/middleware/idempotency"
)

// TestCacheBytesServesRecentResults checks Config.CacheBytes through the
// guard: replays of the results that fit are served from memory (no store
// round trip), older ones from the store, and a result larger than the
// whole cache always from the store.
func TestCacheBytesServesRecentResults(t *testing.T) {
	const result = 16 << 10 // each result's JSON is a little more
	f := newFixture(t, func(c *idempotency.Config) { c.CacheBytes = 64 << 10 })
	run := func(i, size int) {
		t.Helper()
		got, err := idempotency.Do(ctxWithDeadline(t), f.guard, idempotency.Raw(fmt.Appendf(nil, `"k%d"`, i)), func(context.Context) (string, error) {
			return strings.Repeat("r", size), nil
		})
		if err != nil || len(got) != size {
			t.Fatalf("key %d: %d bytes, %v", i, len(got), err)
		}
	}
	for i := range 8 {
		run(i, result)
	}
	acquires := f.store.acquires.Load()
	for _, i := range []int{7, 6, 5} { // the last three fit in 64 KiB
		run(i, result)
	}
	if n := f.store.acquires.Load() - acquires; n != 0 {
		t.Errorf("replays of the 3 most recent results cost %d store round trips, want 0", n)
	}
	run(0, result) // evicted long ago
	if n := f.store.acquires.Load() - acquires; n != 1 {
		t.Errorf("the replay of an evicted result cost %d round trips, want 1", n)
	}
	if ev := f.lastEvent(t); ev.Outcome != idempotency.OutcomeReplayed || ev.Source != "store" {
		t.Errorf("replay of an evicted result: %+v, want replayed from the store", ev)
	}
	run(100, 128<<10) // larger than the cache
	acquires = f.store.acquires.Load()
	run(100, 128<<10)
	if n := f.store.acquires.Load() - acquires; n != 1 {
		t.Errorf("the replay of a result larger than the cache cost %d round trips, want 1 (it is never cached)", n)
	}
}
