package idempotency_test

import (
	"context"
	"testing"

	"github.com/sqsonce/sqsonce/middleware/idempotency"
	"github.com/sqsonce/sqsonce/middleware/idempotency/memstore"
)

// TestResultNotUTF8ReplaysAsReturned: a result holding a string that is
// not valid UTF-8 is stored as json.Marshal writes it, each invalid byte
// replaced by U+FFFD; the call that ran the operation returns that stored
// value too, so that every delivery of the key gets the same result.
// Before, the first call returned "a\xffb" and every replay "a\uFFFDb",
// through every store (and the guard's cache).
func TestResultNotUTF8ReplaysAsReturned(t *testing.T) {
	type result struct {
		Name string            `json:"name"`
		Tags map[string]string `json:"tags"`
	}
	for _, cache := range []int{0, 1 << 20} {
		g, err := idempotency.New(idempotency.Config{Store: memstore.New(), Namespace: "utf8", CacheBytes: cache})
		if err != nil {
			t.Fatal(err)
		}
		key := idempotency.Raw([]byte("k"))
		op := func(context.Context) (result, error) {
			return result{Name: "a\xffb", Tags: map[string]string{"\xfe": "c\xc3"}}, nil
		}
		first, err := idempotency.Do(context.Background(), g, key, op)
		if err != nil {
			t.Fatal(err)
		}
		for i := range 2 {
			again, err := idempotency.Do(context.Background(), g, key, op)
			if err != nil {
				t.Fatal(err)
			}
			if again.Name != first.Name || len(again.Tags) != 1 || again.Tags["\uFFFD"] != first.Tags["\uFFFD"] || first.Tags["\uFFFD"] != "c\uFFFD" {
				t.Errorf("cache %d, replay %d: %+q; the first call returned %+q", cache, i, again, first)
			}
		}
		s, err := idempotency.Do(context.Background(), g, idempotency.Raw([]byte("s")), func(context.Context) (string, error) { return "\xff", nil })
		if err != nil || s != "\uFFFD" {
			t.Errorf("cache %d: a string result not UTF-8: the first call returned %+q, %v; want what replays return, %+q", cache, s, err, "\uFFFD")
		}
	}
}
