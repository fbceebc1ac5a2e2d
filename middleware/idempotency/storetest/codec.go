package storetest

import (
	"bytes"
	"context"
	"crypto/rand"
	"encoding/base64"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/sqsonce/sqsonce/middleware/idempotency/driver"
)

// results are stored results that differ in their bytes only, or in ways
// a codec could normalise away (whitespace, escapes, number spellings, key
// order, surrogate escapes, bytes that are not UTF-8), and large ones on
// each side of the stores' compression thresholds. A store must read each
// back byte for byte: two different results never collapse into one.
func results() []struct{ name, data string } {
	// 1 MiB of JSON that compresses well, and 128 KiB that does not.
	var compressible strings.Builder
	compressible.WriteByte('[')
	for i := 0; compressible.Len() < 1<<20; i++ {
		if i > 0 {
			compressible.WriteByte(',')
		}
		fmt.Fprintf(&compressible, `{"i":%d,"summary":"paragraph %d of the document"}`, i, i%97)
	}
	compressible.WriteByte(']')
	noise := make([]byte, 96<<10)
	_, _ = rand.Read(noise)
	return []struct{ name, data string }{
		{"object", `{"summary":"ok","tokens":[1,2,3]}`},
		{"object with spaces", `{"summary": "ok", "tokens": [1, 2, 3]}`},
		{"object keys reordered", `{"tokens":[1,2,3],"summary":"ok"}`},
		{"object with a newline", "{\"summary\":\"ok\",\n\"tokens\":[1,2,3]}\n"},
		{"number 1", `1`},
		{"number 1.0", `1.0`},
		{"number 1e0", `1e0`},
		{"number 10000000000000001", `10000000000000001`},
		{"number 10000000000000000", `10000000000000000`},
		{"string é", `"é"`},
		{"string \\u00e9", `"\u00e9"`},
		{"string \\u00E9", `"\u00E9"`},
		{"string lone surrogate \\ud800", `"\ud800"`},
		{"string lone surrogate \\udbff", `"\udbff"`},
		{"string replacement character", `"\ufffd"`},
		{"string NUL escape", `"a\u0000b"`},
		{"string not UTF-8", "\"\xff\xfe\""},
		{"string 123", `"123"`},
		{"null", `null`},
		{"empty string", `""`},
		{"compressible 1 MiB", compressible.String()},
		{"incompressible 128 KiB", `"` + base64.StdEncoding.EncodeToString(noise) + `"`},
	}
}

// testResultsByteIdentical completes one record per result and reads each
// back: the stored result is the result, byte for byte.
func testResultsByteIdentical(t *testing.T, s driver.Store) {
	for _, r := range results() {
		t.Run(r.name, func(t *testing.T) {
			k, rec, now := claimed(t, s, time.Minute)
			done := rec
			done.Status, done.Data = driver.StatusCompleted, []byte(r.data)
			stored, err := s.Complete(context.Background(), done)
			if err != nil {
				t.Fatalf("Complete: %v", err)
			}
			if !bytes.Equal(stored, done.Data) {
				t.Fatalf("the store kept %d bytes of a %d-byte result (want all of it, byte for byte)", len(stored), len(done.Data))
			}
			got, loaded := mustAcquire(t, s, claim(k, now, time.Minute), now)
			if !loaded || got.Status != driver.StatusCompleted {
				t.Fatalf("Acquire of the completed key: loaded=%v status=%q", loaded, got.Status)
			}
			if !bytes.Equal(got.Data, done.Data) {
				t.Errorf("read back %d bytes (%s), want the %d bytes stored (%s)", len(got.Data), abbrev(got.Data), len(done.Data), abbrev(done.Data))
			}
		})
	}
}

// testStoredAsReported completes a record with a result too large for
// some stores (1 MiB that does not compress): whatever the store kept, as
// its Complete reported it, is what a later delivery reads.
func testStoredAsReported(t *testing.T, s driver.Store) {
	noise := make([]byte, 768<<10)
	_, _ = rand.Read(noise)
	data := []byte(`"` + base64.StdEncoding.EncodeToString(noise) + `"`) // 1 MiB
	k, rec, now := claimed(t, s, time.Minute)
	done := rec
	done.Status, done.Data = driver.StatusCompleted, data
	stored, err := s.Complete(context.Background(), done)
	if err != nil {
		t.Fatalf("Complete of a 1 MiB result: %v (a completed operation must be recorded, with or without its result)", err)
	}
	if stored != nil && !bytes.Equal(stored, data) {
		t.Fatalf("Complete reported %d bytes kept of %d: want all of it or none", len(stored), len(data))
	}
	got, loaded := mustAcquire(t, s, claim(k, now, time.Minute), now)
	if !loaded || got.Status != driver.StatusCompleted {
		t.Fatalf("Acquire of the completed key: loaded=%v status=%q", loaded, got.Status)
	}
	if !bytes.Equal(got.Data, stored) || (got.Data == nil) != (stored == nil) {
		t.Errorf("read back %d bytes, want what Complete reported kept (%d bytes)", len(got.Data), len(stored))
	}
}

func abbrev(b []byte) string {
	if len(b) > 40 {
		return fmt.Sprintf("%q…", b[:40])
	}
	return fmt.Sprintf("%q", b)
}
