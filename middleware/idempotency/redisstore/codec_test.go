package redisstore_test

import (
	"bytes"
	"context"
	"crypto/rand"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"runtime"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/sqsonce/sqsonce/middleware/idempotency"
	"github.com/sqsonce/sqsonce/middleware/idempotency/driver"
	"github.com/sqsonce/sqsonce/middleware/idempotency/redisstore"
)

// noise returns n random bytes: gzip makes them longer. (The store keeps
// bytes; only the guard needs JSON.)
func noise(n int) string {
	b := make([]byte, n)
	_, _ = rand.Read(b)
	return string(b)
}

// incompressible returns a JSON string of n bytes that gzip cannot shrink
// below 3/4 of its size.
func incompressible(n int) string {
	raw := make([]byte, (n-2)*3/4)
	_, _ = rand.Read(raw)
	return `"` + base64.StdEncoding.EncodeToString(raw) + `"`
}

// compressible returns a JSON array of about n bytes that gzip shrinks
// well.
func compressible(n int) string {
	var b strings.Builder
	b.WriteByte('[')
	for i := 0; b.Len() < n; i++ {
		if i > 0 {
			b.WriteByte(',')
		}
		fmt.Fprintf(&b, `{"i":%d,"summary":"paragraph %d"}`, i, i%89)
	}
	b.WriteByte(']')
	return b.String()
}

// fields returns the record's hash as stored.
func fields(t *testing.T, rdb *redis.Client, s *redisstore.Store, id string) map[string]string {
	t.Helper()
	m, err := rdb.HGetAll(context.Background(), s.RedisKey(id)).Result()
	if err != nil {
		t.Fatal(err)
	}
	return m
}

// TestLargeResult: on a server whose proto-max-bulk-len is the smallest a
// server accepts (1 MiB), a result of 1.5 MiB that does not compress
// completes the record without it: the operation runs once, and every
// delivery gets the zero value. One that compresses is stored gzipped and
// replayed byte for byte. Issue 15, item 10 (every completion failed and
// the operation ran again on every delivery).
func TestLargeResult(t *testing.T) {
	rdb := newClient(t)
	setConfig(t, rdb, "proto-max-bulk-len", "1mb")
	var logs bytes.Buffer
	s := newStore(t, rdb, redisstore.WithLogger(slog.New(slog.NewJSONHandler(&logs, nil))))
	g, err := idempotency.New(idempotency.Config{Store: s, Namespace: "large-" + rand.Text(), Logger: discard()})
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	for _, tc := range []struct {
		name, result string
		kept         bool
		fields       map[string]string // flags of the stored record
	}{
		{"incompressible 1.5 MiB", incompressible(3 << 19), false, map[string]string{"data_omitted": "true"}},
		{"compressible 2 MiB", compressible(2 << 20), true, map[string]string{"data_encoding": "gzip"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			logs.Reset()
			var runs atomic.Int32
			key := idempotency.Raw([]byte(tc.name))
			op := func(context.Context) (json.RawMessage, error) { runs.Add(1); return json.RawMessage(tc.result), nil }
			for i := range 2 {
				got, err := idempotency.Do(ctx, g, key, op)
				if err != nil {
					t.Fatalf("delivery %d: %v", i+1, err)
				}
				if want := tc.result; !tc.kept {
					if got != nil {
						t.Errorf("delivery %d: a %d-byte result, want none (the zero value: it was not kept)", i+1, len(got))
					}
				} else if string(got) != want {
					t.Errorf("delivery %d: %d bytes, want the %d-byte result byte for byte", i+1, len(got), len(want))
				}
			}
			if runs.Load() != 1 {
				t.Fatalf("the operation ran %d times for two deliveries, want 1", runs.Load())
			}
			id, err := g.ID(key)
			if err != nil {
				t.Fatal(err)
			}
			stored := fields(t, rdb, s, id)
			if stored["status"] != "COMPLETED" {
				t.Errorf("record status %q, want COMPLETED", stored["status"])
			}
			for k, v := range tc.fields {
				if stored[k] != v {
					t.Errorf("field %s = %q, want %q", k, stored[k], v)
				}
			}
			if tc.kept {
				if logs.Len() > 0 {
					t.Errorf("logged %s, want nothing for a result that was kept", logs.String())
				}
				return
			}
			if _, ok := stored["data"]; ok {
				t.Error("the record holds data, want none")
			}
			line := logs.String()
			if !strings.Contains(line, `"level":"ERROR"`) || !strings.Contains(line, "WITHOUT its result") || !strings.Contains(line, id) {
				t.Errorf("log %q: want one ERROR line naming the record", line)
			}
			if strings.Contains(line, tc.result[1:40]) {
				t.Error("the log line quotes the result")
			}
		})
	}
}

// TestResultPlacement: the limits at their boundaries. A result is stored
// plain up to WithCompressAbove, compressed above it when that is
// smaller, and left out when neither fits in WithMaxData; the flags are
// dynamostore's.
func TestResultPlacement(t *testing.T) {
	rdb := newClient(t)
	s := newStore(t, rdb, redisstore.WithMaxData(1000), redisstore.WithCompressAbove(500), redisstore.WithLogger(discard()))
	ctx := context.Background()
	now := time.Now()
	for _, tc := range []struct {
		name   string
		data   string
		kept   bool
		fields map[string]string // "" for a field that must be absent
	}{
		{"500 bytes, incompressible: plain", noise(500), true, map[string]string{"data_encoding": "", "data_omitted": ""}},
		{"501 bytes, incompressible: plain", noise(501), true, map[string]string{"data_encoding": "", "data_omitted": ""}},
		{"501 bytes, compressible: gzip", compressible(501), true, map[string]string{"data_encoding": "gzip", "data_omitted": ""}},
		{"1000 bytes, incompressible: plain", noise(1000), true, map[string]string{"data_encoding": "", "data_omitted": ""}},
		{"1001 bytes, incompressible: omitted", noise(1001), false, map[string]string{"data_encoding": "", "data_omitted": "true", "data": ""}},
		{"100 KiB, compressible: gzip", `"` + strings.Repeat("a", 100<<10) + `"`, true, map[string]string{"data_encoding": "gzip", "data_omitted": ""}},
		{"null", "null", true, map[string]string{"data": "null", "data_encoding": "", "data_omitted": ""}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			rec := claim("place#"+rand.Text(), now, time.Minute)
			if _, _, err := s.Acquire(ctx, rec, now, driver.Takeover); err != nil {
				t.Fatal(err)
			}
			stored, err := s.Complete(ctx, completed(rec, tc.data))
			if err != nil {
				t.Fatal(err)
			}
			if tc.kept != (stored != nil) || (tc.kept && string(stored) != tc.data) {
				t.Errorf("Complete kept %d bytes of %d, want kept=%v", len(stored), len(tc.data), tc.kept)
			}
			got, loaded, err := s.Acquire(ctx, claim(rec.ID, now, time.Minute), now, driver.Takeover)
			if err != nil || !loaded {
				t.Fatalf("replay: loaded=%v, %v", loaded, err)
			}
			if !bytes.Equal(got.Data, stored) || (got.Data == nil) != (stored == nil) {
				t.Errorf("replay read %d bytes, want what Complete reported (%d)", len(got.Data), len(stored))
			}
			m := fields(t, rdb, s, rec.ID)
			for k, v := range tc.fields {
				if have, ok := m[k]; v == "" && ok || v != "" && have != v {
					t.Errorf("field %s = %q (present %v), want %q", k, have, ok, v)
				}
			}
		})
	}
}

// sentinel is a value a stored record holds where an error could quote it.
const sentinel = "PATIENT-JOHN-DOE-4111111111111111"

// TestErrorsQuoteNoStoredValue: for every field of a record that can be
// unreadable, and for a key that holds a Powertools record, the errors of
// Acquire, Complete and Release name the field, never its value.
func TestErrorsQuoteNoStoredValue(t *testing.T) {
	rdb := newClient(t)
	s := newStore(t, rdb)
	ctx := context.Background()
	now := time.Now()
	good := func() map[string]any {
		return map[string]any{
			"status": "COMPLETED", "expiration": now.Add(time.Hour).Unix(),
			"in_progress_expiration": now.Add(time.Minute).UnixMilli(), "lease_owner": "someone",
			"data": `{"summary":"` + sentinel + `"}`,
		}
	}
	badGzip := append([]byte{0x1f, 0x8b, 8, 0, 0, 0, 0, 0, 0, 0xff}, sentinel...)
	corrupt := map[string]map[string]any{
		"status":                 {"status": sentinel},
		"expiration":             {"expiration": sentinel},
		"in_progress_expiration": {"in_progress_expiration": sentinel},
		"data_encoding":          {"data_encoding": sentinel},
		"data_omitted":           {"data_omitted": sentinel},
		"data (not gzip)":        {"data_encoding": "gzip", "data": sentinel},
		"data (corrupt gzip)":    {"data_encoding": "gzip", "data": badGzip},
	}
	check := func(t *testing.T, what string, err error) {
		t.Helper()
		if err == nil {
			t.Errorf("%s of an unreadable record succeeded", what)
			return
		}
		if strings.Contains(err.Error(), sentinel) || strings.Contains(err.Error(), sentinel[:12]) {
			t.Errorf("%s: error quotes the stored value: %v", what, err)
		}
	}
	for name, fields := range corrupt {
		t.Run(name, func(t *testing.T) {
			id := "corrupt#" + rand.Text()
			rec := good()
			for k, v := range fields {
				rec[k] = v
			}
			if err := rdb.HSet(ctx, s.RedisKey(id), rec).Err(); err != nil {
				t.Fatal(err)
			}
			_, _, err := s.Acquire(ctx, claim(id, now, time.Minute), now, driver.Takeover)
			check(t, "Acquire", err)
			check(t, "Complete", errOf(s.Complete(ctx, completed(claim(id, now, time.Minute), `1`))))
			check(t, "Release", s.Release(ctx, id, "someone"))
		})
	}
	t.Run("a Powertools record (a JSON string)", func(t *testing.T) {
		id := "powertools#" + rand.Text()
		powertools, _ := json.Marshal(map[string]any{"status": "COMPLETED", "expiration": now.Add(time.Hour).Unix(), "data": sentinel})
		if err := rdb.SetArgs(ctx, s.RedisKey(id), powertools, redis.SetArgs{Mode: "NX", TTL: time.Hour}).Err(); err != nil {
			t.Fatal(err)
		}
		_, _, err := s.Acquire(ctx, claim(id, now, time.Minute), now, driver.Takeover)
		check(t, "Acquire", err)
		if err == nil || !strings.Contains(err.Error(), "not a hash") || !strings.Contains(err.Error(), "Powertools") {
			t.Errorf("Acquire of a Powertools record: %v, want it to say the key is not a hash, as Powertools writes", err)
		}
	})
}

// TestPowertoolsRecordNotRun: a key that Powertools' Redis persistence
// layer (CachePersistenceLayer) wrote holds a JSON string under SET NX,
// not a hash: the guard fails the delivery without running the
// operation, whatever the record says.
func TestPowertoolsRecordNotRun(t *testing.T) {
	rdb := newClient(t)
	s := newStore(t, rdb)
	g, err := idempotency.New(idempotency.Config{Store: s, Namespace: "pt-" + rand.Text(), Logger: discard()})
	if err != nil {
		t.Fatal(err)
	}
	key := idempotency.Raw([]byte("order-1"))
	id, err := g.ID(key)
	if err != nil {
		t.Fatal(err)
	}
	now := time.Now()
	for _, rec := range []map[string]any{
		{"status": "INPROGRESS", "expiration": now.Add(time.Hour).Unix(), "in_progress_expiration": now.Add(-time.Minute).UnixMilli()},
		{"status": "COMPLETED", "expiration": now.Add(-time.Hour).Unix(), "data": `"old"`},
	} {
		value, _ := json.Marshal(rec)
		if err := rdb.Set(context.Background(), id, value, time.Hour).Err(); err != nil {
			t.Fatal(err)
		}
		var runs atomic.Int32
		_, err := idempotency.Do(context.Background(), g, key, func(context.Context) (string, error) { runs.Add(1); return "x", nil })
		if err == nil || runs.Load() != 0 {
			t.Fatalf("a key holding a Powertools %s record: err = %v, %d runs; want an error and no run", rec["status"], err, runs.Load())
		}
	}
}

// allocated returns the bytes fn allocates.
func allocated(fn func()) uint64 {
	var before, after runtime.MemStats
	runtime.GC()
	runtime.ReadMemStats(&before)
	fn()
	runtime.ReadMemStats(&after)
	return after.TotalAlloc - before.TotalAlloc
}

// memoryCeiling is the most a step may allocate for a result of n bytes:
// 8 times the result, plus 1 MiB. docs/stores.md states it.
func memoryCeiling(n int) uint64 { return 8*uint64(n) + 1<<20 }

// TestMemoryPerRecord: completing a 1 MiB result and replaying it each
// allocate at most memoryCeiling: the result is copied a bounded number of
// times, compressed or not.
func TestMemoryPerRecord(t *testing.T) {
	s := newStore(t, newClient(t), redisstore.WithMaxData(2<<20))
	ctx := context.Background()
	now := time.Now()
	for _, tc := range []struct{ name, data string }{
		{"incompressible, stored plain", noise(1 << 20)},
		{"compressible, stored gzipped", compressible(1 << 20)},
	} {
		t.Run(tc.name, func(t *testing.T) {
			warm := claim("mem#"+rand.Text(), now, time.Minute) // loads the scripts
			if _, _, err := s.Acquire(ctx, warm, now, driver.Takeover); err != nil {
				t.Fatal(err)
			}
			if _, err := s.Complete(ctx, completed(warm, `1`)); err != nil {
				t.Fatal(err)
			}
			rec := claim("mem#"+rand.Text(), now, time.Minute)
			if _, _, err := s.Acquire(ctx, rec, now, driver.Takeover); err != nil {
				t.Fatal(err)
			}
			done := completed(rec, tc.data)
			var err error
			complete := allocated(func() { _, err = s.Complete(ctx, done) })
			if err != nil {
				t.Fatal(err)
			}
			var got driver.Record
			replay := allocated(func() { got, _, err = s.Acquire(ctx, claim(rec.ID, now, time.Minute), now, driver.Takeover) })
			if err != nil || string(got.Data) != tc.data {
				t.Fatalf("replay: %d bytes, %v", len(got.Data), err)
			}
			limit := memoryCeiling(len(tc.data))
			t.Logf("%d-byte result: complete allocated %d bytes (%.1f×), replay %d (%.1f×); ceiling %d",
				len(tc.data), complete, float64(complete)/float64(len(tc.data)), replay, float64(replay)/float64(len(tc.data)), limit)
			if complete > limit || replay > limit {
				t.Errorf("allocated %d (complete) and %d (replay) bytes, ceiling %d", complete, replay, limit)
			}
		})
	}
}

func TestOptionsReportedAtOnce(t *testing.T) {
	_, err := redisstore.New(context.Background(), newClient(t), redisstore.WithCompressAbove(-5), redisstore.WithMaxData(-1))
	if err == nil || !strings.Contains(err.Error(), "WithCompressAbove(-5)") || !strings.Contains(err.Error(), "WithMaxData(-1)") {
		t.Fatalf("New with two bad options: %v, want both reported", err)
	}
	if errors.Unwrap(err) != nil {
		return // errors.Join
	}
}

// errOf is the error of a call that returns a value and an error.
func errOf[T any](_ T, err error) error { return err }
