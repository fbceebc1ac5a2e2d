package dynamostore_test

import (
	"context"
	"crypto/rand"
	"encoding/base64"
	"log/slog"
	"strings"
	"testing"
	"time"

	"github.com/sqsonce/sqsonce/middleware/idempotency/driver"
	"github.com/sqsonce/sqsonce/middleware/idempotency/dynamostore"
)

// TestValidateSealed: sealed results are refused in the Powertools data
// formats, whose readers would replay the sealed text, and accepted in
// DataJSON.
func TestValidateSealed(t *testing.T) {
	for f, ok := range map[dynamostore.DataFormat]bool{
		dynamostore.DataJSON:                 true,
		dynamostore.DataPowertoolsPython:     false,
		dynamostore.DataPowertoolsTypeScript: false,
	} {
		s, err := dynamostore.New(&updates{}, "t", dynamostore.WithDataFormat(f))
		if err != nil {
			t.Fatal(err)
		}
		if err := s.ValidateSealed(); (err == nil) != ok {
			t.Errorf("%v: ValidateSealed() = %v, want accepted %v", f, err, ok)
		}
	}
}

// randomText is n bytes of JSON string of random base64: text gzip
// shrinks to about 3/4, as it shrinks a sealed result.
func randomText(n int) []byte {
	raw := make([]byte, n)
	rand.Read(raw)
	b := make([]byte, 0, n+2)
	b = append(b, '"')
	b = base64.StdEncoding.AppendEncode(b, raw)[:n+1]
	return append(b, '"')
}

// TestFitsData: FitsData says what Complete then does, whole result stored
// (plain or compressed) or left out, across the item's budget: results
// within it, results above it that compress into it (a sealed result of
// about 1/3 over), results that do not, with and without the attributes a
// completion keeps (validation, strict lease), and in a Powertools format
// that cannot hold the result.
func TestFitsData(t *testing.T) {
	now := time.Now()
	base := driver.Record{ID: "ns#0123456789abcdef", Status: driver.StatusCompleted, Owner: rand.Text(), ExpiresAt: now.Add(time.Hour)}
	full := base
	full.Validation, full.StrictLease = strings.Repeat("v", 64), now.Add(time.Minute)
	seen := map[bool]int{}
	for _, rec := range []driver.Record{base, full} {
		for _, c := range []struct {
			name string
			data []byte
			opts []dynamostore.Option
		}{
			{"no result", nil, nil},
			{"small", []byte(`"small"`), nil},
			{"compressible, 1 MiB", []byte(`"` + strings.Repeat("abcdefgh", 1<<17) + `"`), nil},
			{"random, 300 KB", randomText(300_000), nil},
			{"random, 395 KB", randomText(395_000), nil},
			{"random, 400 KB", randomText(400_000), nil},
			{"random, 450 KB", randomText(450_000), nil},
			{"random, 520 KB", randomText(520_000), nil},
			{"random, 560 KB", randomText(560_000), nil},
			{"random, 1 MB", randomText(1_000_000), nil},
			{"random, compression off", randomText(450_000), []dynamostore.Option{dynamostore.WithCompressAbove(1 << 30)}},
			{"not UTF-8, Powertools Python", []byte{'"', 0xff, '"'}, []dynamostore.Option{dynamostore.WithDataFormat(dynamostore.DataPowertoolsPython)}},
		} {
			api := &updates{}
			s, err := dynamostore.New(api, "t", append(c.opts, dynamostore.WithLogger(slog.New(slog.DiscardHandler)))...)
			if err != nil {
				t.Fatal(err)
			}
			r := rec
			r.Data = c.data
			fits := s.FitsData(r)
			if _, err := s.Complete(context.Background(), r); err != nil {
				t.Fatal(err)
			}
			stored := api.data[0] != nil
			if fits != (stored || c.data == nil) {
				t.Errorf("%s (validation %q): FitsData = %v, but Complete stored the result: %v", c.name, r.Validation, fits, stored)
			}
			seen[fits]++
		}
	}
	if seen[true] == 0 || seen[false] == 0 {
		t.Errorf("outcomes %v: want results that fit and results that do not", seen)
	}
}

// TestFitsDataAtTheBudget: at the byte where a result stops fitting
// plain (random bytes, which gzip does not shrink), FitsData turns false
// where Complete leaves the result out.
func TestFitsDataAtTheBudget(t *testing.T) {
	rec := driver.Record{ID: "ns#k", Status: driver.StatusCompleted, Owner: rand.Text(), ExpiresAt: time.Now().Add(time.Hour)}
	stores := func(n int) (fits, stored bool) {
		api := &updates{}
		s, err := dynamostore.New(api, "t", dynamostore.WithLogger(slog.New(slog.DiscardHandler)))
		if err != nil {
			t.Fatal(err)
		}
		r := rec
		r.Data = make([]byte, n)
		rand.Read(r.Data)
		fits = s.FitsData(r)
		if _, err := s.Complete(context.Background(), r); err != nil {
			t.Fatal(err)
		}
		return fits, api.data[0] != nil
	}
	lo, hi := 1, dynamostore.DefaultItemLimit // stored at lo, not at hi
	for hi-lo > 1 {
		mid := (lo + hi) / 2
		if _, stored := stores(mid); stored {
			lo = mid
		} else {
			hi = mid
		}
	}
	for _, n := range []int{lo, hi} {
		if fits, stored := stores(n); fits != stored || stored != (n == lo) {
			t.Errorf("%d bytes: FitsData %v, stored %v", n, fits, stored)
		}
	}
	t.Logf("the budget of %s: %d bytes", rec.ID, lo)
}
