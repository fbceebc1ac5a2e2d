package idempotency

import (
	"strings"
	"testing"

	"github.com/sqsonce/sqsonce/middleware/idempotency/driver"
)

// TestCacheCountsEveryByte: a cached record counts 256 bytes plus every
// byte of its id, result, payload digest, owner and status, as
// Config.CacheBytes says, so that the limit bounds what the cache holds
// (each string grown by a byte costs one byte more; gremlins' cache.go
// mutants).
func TestCacheCountsEveryByte(t *testing.T) {
	rec := driver.Record{ID: "i", Data: []byte("dd"), Validation: "vvv", Owner: "oooo", Status: driver.StatusCompleted}
	want := cacheEntryOverhead + 1 + 2 + 3 + 4 + len(driver.StatusCompleted)
	grown := []func(driver.Record) driver.Record{
		func(r driver.Record) driver.Record { r.ID += "x"; return r },
		func(r driver.Record) driver.Record { r.Data = append(r.Data, 'x'); return r },
		func(r driver.Record) driver.Record { r.Validation += "x"; return r },
		func(r driver.Record) driver.Record { r.Owner += "x"; return r },
		func(r driver.Record) driver.Record { r.Status += "x"; return r },
	}
	c := newCache(1 << 20)
	c.add(rec)
	if n, b := c.size(); n != 1 || b != want {
		t.Fatalf("one record of %d bytes: the cache holds %d counting %d bytes", want, n, b)
	}
	for i, grow := range grown {
		c := newCache(1 << 20)
		r := grow(rec)
		c.add(r)
		if _, b := c.size(); b != want+1 {
			t.Errorf("field %d grown by a byte: %d bytes counted, want %d", i, b, want+1)
		}
		// A limit of exactly the record's cost keeps it; a byte less does not.
		exact, under := newCache(want+1), newCache(want)
		exact.add(r)
		under.add(r)
		if !has(exact, r.ID) || has(under, r.ID) {
			t.Errorf("field %d grown: a record of exactly the limit cached %v, a byte over it %v; want true, false", i, has(exact, r.ID), has(under, r.ID))
		}
	}
	// Records are evicted only while the total is over the limit.
	c = newCache(2*want + 1)
	a, b := rec, rec
	a.ID, b.ID = "a", "b"
	c.add(a)
	c.add(b)
	if !has(c, "a") || !has(c, "b") {
		t.Error("two records that fit the limit exactly were not both kept")
	}
	big := rec
	big.ID, big.Data = "c", []byte(strings.Repeat("d", 3))
	c.add(big)
	if has(c, "a") || !has(c, "b") || !has(c, "c") {
		t.Error("a record one byte larger did not evict just the least recently used")
	}
}

func has(c *cache, id string) bool { _, ok := c.get(id); return ok }
