package idempotency

import (
	"crypto/md5"
	"crypto/sha256"
	"encoding/base64"
	"encoding/hex"
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

// TestLargeSpellingStreamed: a key whose spelling passes maxHeldSpelling is
// streamed into the format's own hash (SHA-256 native, MD5 Powertools')
// and gets the digest of its whole spelling, as a small key does: at the
// threshold, one byte past it, and far past it (gremlins' format.go
// mutants).
func TestLargeSpellingStreamed(t *testing.T) {
	for _, n := range []int{maxHeldSpelling - 64, maxHeldSpelling + 1, 3*maxHeldSpelling + 7} {
		k := Raw([]byte(`"` + strings.Repeat("a", n) + `"`))
		for _, f := range []Format{FormatNative, FormatPowertoolsPython, FormatPowertoolsTypeScript} {
			spelled, err := f.spell(k)
			if err != nil {
				t.Fatal(err)
			}
			var want string
			switch f {
			case FormatNative:
				d := sha256.Sum256(spelled)
				want = hex.EncodeToString(d[:])
			case FormatPowertoolsPython:
				d := md5.Sum(spelled)
				want = hex.EncodeToString(d[:])
			default:
				d := md5.Sum(spelled)
				want = base64.StdEncoding.EncodeToString(d[:])
			}
			if got, err := f.Hash(k); err != nil || got != want {
				t.Errorf("%v, a spelling of %d bytes: %s, %v; want %s", f, len(spelled), got, err, want)
			}
		}
	}
}

// TestSpellingHoldsUpToItsBound: a spelling holds up to maxHeldSpelling
// bytes, however written, and streams into its hash from the byte past
// it, holding nothing more (gremlins' format.go mutants in Write and
// WriteString); with keep it holds all.
func TestSpellingHoldsUpToItsBound(t *testing.T) {
	full := strings.Repeat("a", maxHeldSpelling)
	for name, write := range map[string]func(s *spelling, p string){
		"Write":       func(s *spelling, p string) { s.Write([]byte(p)) },
		"WriteString": func(s *spelling, p string) { s.WriteString(p) },
	} {
		s := &spelling{f: FormatNative}
		write(s, full[:maxHeldSpelling-1])
		write(s, "a")
		if s.h != nil || s.buf.Len() != maxHeldSpelling {
			t.Errorf("%s: %d bytes written: hashing %t, holding %d; want all held", name, maxHeldSpelling, s.h != nil, s.buf.Len())
		}
		write(s, "b")
		if s.h == nil || s.buf.Len() != 0 {
			t.Errorf("%s: %d bytes written: hashing %t, holding %d; want all streamed", name, maxHeldSpelling+1, s.h != nil, s.buf.Len())
		}
		want := sha256.Sum256([]byte(full + "b"))
		if got := s.appendSum(nil); string(got) != hex.EncodeToString(want[:]) {
			t.Errorf("%s: digest %s, want %x", name, got, want)
		}
		k := &spelling{f: FormatNative, keep: true}
		write(k, full)
		write(k, "b")
		if k.h != nil || k.buf.Len() != maxHeldSpelling+1 {
			t.Errorf("%s with keep: hashing %t, holding %d; want all held", name, k.h != nil, k.buf.Len())
		}
	}
}

// TestJSSpaceBounds: String.prototype.trim's white space between U+2000
// and U+200A, both included, and not the code points beside them
// (gremlins' powertools.go mutants).
func TestJSSpaceBounds(t *testing.T) {
	for r, want := range map[rune]bool{'\u1fff': false, '\u2000': true, '\u2005': true, '\u200a': true, '\u200b': false, 'a': false, '\u3000': true} {
		if got := jsSpace(r); got != want {
			t.Errorf("jsSpace(%U) = %t, want %t", r, got, want)
		}
	}
}
