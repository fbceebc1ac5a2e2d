// Package format_test holds the tests that compare the native format's
// canonical form with gowebpki/jcs: here, in the test module, so that the
// root go.mod does not require jcs and a user's graph does not carry it.
// middleware/idempotency/format_test.go keeps the formats' other tests.
package format_test

import (
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"strings"
	"testing"

	"github.com/gowebpki/jcs"

	"github.com/sqsonce/sqsonce/internal/jsonkey"
	"github.com/sqsonce/sqsonce/internal/jsonkey/jsongen"
	"github.com/sqsonce/sqsonce/middleware/idempotency"
)

// jcsHash is the native format's digest of doc as earlier releases hashed
// it: SHA-256 of gowebpki/jcs's canonical form, in hex; and that form.
func jcsHash(doc []byte) (string, []byte, error) {
	canon, err := jcs.Transform(doc)
	if err != nil {
		return "", nil, err
	}
	sum := sha256.Sum256(canon)
	return hex.EncodeToString(sum[:]), canon, nil
}

// TestNativeMaterialIsRFC8785: the native material, built member by member,
// is what RFC 8785 makes of {"selector": …, "value": …}, for selectors that
// need escapes: its digest is the digest of jcs's canonical form.
func TestNativeMaterialIsRFC8785(t *testing.T) {
	for _, sel := range []string{`body ["idempotency_key"]`, "body fields", `a"b\c`, "<&>", "tab\tnl\n\x01", "é😀", "\u2028"} {
		for _, value := range []string{`"k"`, `{"b":[1,2.50,{"z":null,"a":true}],"a":"\u00e9"}`, `1e2`} {
			k := idempotency.Selection{Selector: sel, Value: []byte(value)}
			got, err := idempotency.FormatNative.Hash(k)
			if err != nil {
				t.Fatal(err)
			}
			doc, _ := json.Marshal(map[string]any{"selector": sel, "value": json.RawMessage(value)})
			want, canon, err := jcsHash(doc)
			if err != nil {
				t.Fatal(err)
			}
			if got != want {
				t.Errorf("selector %q, value %s: digest %s, want %s, of %s", sel, value, got, want, canon)
			}
		}
	}
}

// TestCanonicalFormIsJCS: the native format's canonical form, written by
// internal/jsonkey, is byte for byte what gowebpki/jcs (the RFC 8785
// implementation earlier releases hashed) makes of every value both
// accept (compared by digest), so no record id changed with the implementation: the edge cases
// of numbers, escapes and member order, then jsongen's values (some
// breaking I-JSON), compact and spelled every other way.
func TestCanonicalFormIsJCS(t *testing.T) {
	values := []string{
		`"k"`, `"\u006b"`, `10`, `10.0`, `1e1`, `100e-1`, `-0`, `-0.0`, `0.7`, `0.70`, `7e-1`, `1e-05`, `1E+300`,
		`5e-324`, `2e-324`, `1.7976931348623157e308`, `1e308`, `1e309`, `1e400`, `-1e400`, `0.30000000000000004`,
		`9007199254740992`, `9007199254740993`, `9007199254740993.0`, `12345678901234567890`, `0.10000000000000000001`,
		`1` + strings.Repeat("0", 100), `1` + strings.Repeat("0", 99),
		`"\ud800"`, `"\ufffd"`, `"\udbff"`, `"\ud83d\ude00"`, `"😀"`, `"\ud800\udc00\ud800x\udfff"`,
		`{"a":1,"a":2}`, `{"id":"x","ID":"y"}`, `{"b":1,"B":2,"a":1,"A":2,"_":3,"10":4,"9":5,"__proto__":6}`,
		`{"amount": 10.5, "name": "Zo\u00eb", "product_id": "p1", "user_id": "u1"}`, `{"ſ":1,"s":2,"S":3}`,
	}
	g := jsongen.New(8)
	g.Defects = 50
	for range 1500 {
		v := g.Value()
		values = append(values, jsongen.Compact(v), g.Spell(v, jsongen.Everything))
	}
	compared := 0
	for _, sel := range values {
		k := idempotency.Selection{Selector: "s", Value: []byte(sel)}
		got, err := idempotency.FormatNative.Hash(k)
		if err != nil {
			continue
		}
		doc, _ := json.Marshal(map[string]any{"selector": "s", "value": json.RawMessage(sel)})
		want, canon, err := jcsHash(doc)
		if err != nil {
			t.Errorf("%s: jcs refuses what the native format hashes: %v", sel, err)
			continue
		}
		if got != want {
			t.Errorf("%s: digest %s, want %s, of jcs's %s", sel, got, want, canon)
		}
		compared++
	}
	if compared < 2000 {
		t.Errorf("only %d values compared", compared)
	}
	t.Logf("%d canonical forms equal jcs's", compared)
}

// FuzzFormats checks that no format panics on any key value, and that the
// Powertools formats hash every JSON value whose numbers are in bounds.
func FuzzFormats(f *testing.F) {
	for _, s := range []string{`"k"`, `{"a":[1,2.5e-7,{"B":null}],"b":"\ud800"}`, `1e400`, `[`, `{"a":1,"a":2}`, "\"\xff\""} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, value string) {
		k := idempotency.Selection{Selector: "fuzz", Value: []byte(value)}
		if got, err := idempotency.FormatNative.Hash(k); err == nil {
			doc, _ := json.Marshal(map[string]any{"selector": "fuzz", "value": json.RawMessage(value)})
			if want, canon, err := jcsHash(doc); err != nil || got != want {
				t.Fatalf("digest %s; jcs gives %s, %v (%s)", got, want, err, canon)
			}
		}
		for _, format := range []idempotency.Format{idempotency.FormatNative, idempotency.FormatPowertoolsPython, idempotency.FormatPowertoolsTypeScript} {
			h, err := format.Hash(k)
			if err == nil && h == "" {
				t.Fatalf("%v: empty hash without an error", format)
			}
			// The Powertools formats refuse JSON only by the rules of key
			// material: I-JSON, and key case for TypeScript.
			if format != idempotency.FormatNative && json.Valid([]byte(value)) && len(value) <= 100 && err != nil &&
				!errors.Is(err, jsonkey.ErrLoneSurrogate) && !errors.Is(err, jsonkey.ErrInvalidUTF8) &&
				!errors.Is(err, jsonkey.ErrDuplicateName) && !errors.Is(err, jsonkey.ErrCaseVersioned) && !errors.Is(err, jsonkey.ErrSortChanged) {
				t.Fatalf("%v refused the JSON value %q: %v", format, value, err)
			}
		}
	})
}
