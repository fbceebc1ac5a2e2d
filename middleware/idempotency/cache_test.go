package idempotency

import (
	"bytes"
	"fmt"
	"testing"

	"github.com/sqsonce/sqsonce/middleware/idempotency/driver"
)

func cached(key string, data int) driver.Record {
	return driver.Record{ID: key, Status: driver.StatusCompleted, Data: bytes.Repeat([]byte("x"), data)}
}

// TestCacheBoundedInBytes checks that the cache holds at most its limit in
// bytes, whatever the size of each record, and evicts the least recently
// used first.
func TestCacheBoundedInBytes(t *testing.T) {
	const limit = 10 << 10
	c := newCache(limit)
	for i := range 20 {
		c.add(cached(fmt.Sprint("k", i), 1<<10))
		if n, b := c.size(); b > limit {
			t.Fatalf("after %d adds: %d records of %d bytes, above the %d-byte limit", i+1, n, b, limit)
		}
	}
	n, b := c.size()
	per := cacheCost(cached("k10", 1<<10))
	if want := limit / per; n != want || b != n*per {
		t.Errorf("%d records counting %d bytes, want %d counting %d", n, b, want, want*per)
	}
	if _, ok := c.get("k0"); ok {
		t.Error("the oldest record is still cached")
	}
	if _, ok := c.get("k19"); !ok {
		t.Error("the newest record was evicted")
	}

	// A record read recently outlives one read before it.
	oldest := fmt.Sprint("k", 20-n)
	if _, ok := c.get(oldest); !ok {
		t.Fatalf("%s not cached", oldest)
	}
	c.add(cached("new", 1<<10))
	if _, ok := c.get(oldest); !ok {
		t.Errorf("%s, just read, was evicted before older ones", oldest)
	}
	if _, ok := c.get(fmt.Sprint("k", 21-n)); ok {
		t.Errorf("k%d, the least recently used, is still cached", 21-n)
	}

	// Replacing a record gives its old bytes back.
	_, before := c.size()
	c.add(cached("new", 1<<10))
	if _, after := c.size(); after != before {
		t.Errorf("re-adding a record changed the bytes held from %d to %d", before, after)
	}

	// A record larger than the whole cache is not kept, and evicts nothing.
	n, _ = c.size()
	c.add(cached("huge", 64<<20))
	if _, ok := c.get("huge"); ok {
		t.Error("a record larger than the limit was cached")
	}
	if m, _ := c.size(); m != n {
		t.Errorf("a record too large to cache changed the count from %d to %d", n, m)
	}

	c.remove("new")
	if _, ok := c.get("new"); ok {
		t.Error("a removed record is still cached")
	}
	if _, b := c.size(); b != (n-1)*per {
		t.Errorf("after a removal %d bytes held, want %d", b, (n-1)*per)
	}
}
