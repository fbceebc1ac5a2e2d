package idempotency_test

import (
	"bytes"
	"encoding/json"
	"errors"
	"slices"
	"strings"
	"testing"

	"github.com/aws/aws-lambda-go/events"

	"github.com/sqsonce/sqsonce/middleware/idempotency"
)

func msg(body string) events.SQSMessage {
	return events.SQSMessage{MessageId: "m-1", Body: body}
}

func TestKeyCanonicalisation(t *testing.T) {
	g := newFixture(t, nil).guard
	subset := idempotency.BodySubset("document_id", "version", "model", "parameters")
	bodies := []string{
		`{"document_id":"4471","version":9,"model":"m","parameters":{"temperature":0.7,"max_tokens":256}}`,
		`{"version":9,"document_id":"4471","parameters":{"max_tokens":256,"temperature":0.70},"model":"m"}`,
		"{ \"model\" : \"m\",\n \"document_id\": \"4471\", \"version\": 9.0,\n \"parameters\": { \"temperature\": 7e-1, \"max_tokens\": 2.56e2 } }",
		`{"document_id":"4471","version":9,"model":"m","parameters":{"temperature":0.7,"max_tokens":256},"request_id":"r-2","sent_at":"2026-11-29T12:00:00Z"}`,
	}
	var first string
	for i, b := range bodies {
		k, err := idempotency.Select(subset, msg(b))
		if err != nil {
			t.Fatalf("body %d: %v", i, err)
		}
		id, err := g.ID(k)
		if err != nil {
			t.Fatalf("body %d: %v", i, err)
		}
		if i == 0 {
			first = id
			continue
		}
		if id != first {
			t.Errorf("body %d gives id %s, want %s (same work)\nbody: %s\nmaterial: %s", i, id, first, b, k)
		}
	}
	other, err := idempotency.Select(subset, msg(`{"document_id":"4471","version":10,"model":"m","parameters":{"temperature":0.7,"max_tokens":256}}`))
	if err != nil {
		t.Fatal(err)
	}
	if id, _ := g.ID(other); id == first {
		t.Error("another version gives the same id")
	}
}

func TestKeyErrors(t *testing.T) {
	field := idempotency.BodyField("idempotency_key")
	fields := idempotency.BodySubset("document_id", "version")
	tests := []struct {
		name    string
		fn      idempotency.Selector
		body    string
		noKey   bool // errors.Is(err, ErrNoKey)
		wantKey string
	}{
		{"field present", field, `{"idempotency_key":"abc"}`, false, `"abc"`},
		{"field numeric", field, `{"idempotency_key":42.0}`, false, `42`},
		{"field missing", field, `{"other":"abc"}`, true, ""},
		{"field empty", field, `{"idempotency_key":""}`, true, ""},
		{"field null", field, `{"idempotency_key":null}`, true, ""},
		{"body not JSON", field, `summarise 4471`, false, ""},
		{"body array", field, `["idempotency_key"]`, false, ""},
		{"body null", field, `null`, true, ""},
		{"body empty", field, ``, false, ""},
		{"subset complete", fields, `{"version":9,"document_id":"4471"}`, false, `{"document_id":"4471","version":9}`},
		{"subset field missing", fields, `{"document_id":"4471"}`, true, ""},
		{"subset field null", fields, `{"document_id":"4471","version":null}`, true, ""},
		{"first of: producer key wins", idempotency.FirstOf(field, fields), `{"idempotency_key":"k","document_id":"4471","version":9}`, false, `"k"`},
		{"first of: falls back to subset", idempotency.FirstOf(field, fields), `{"document_id":"4471","version":9}`, false, `{"document_id":"4471","version":9}`},
		{"first of: none", idempotency.FirstOf(field, fields), `{"document_id":"4471"}`, true, ""},
		{"first of: bad body stops", idempotency.FirstOf(field, fields), `{`, false, ""},
		{"integer beyond a double's precision", field, `{"idempotency_key":9007199254740993}`, false, ""},
		{"integer within a double's precision", field, `{"idempotency_key":9007199254740992}`, false, `9007199254740992`},
		{"negative integer at the limit", field, `{"idempotency_key":-9007199254740992}`, false, `-9007199254740992`},
		{"even integer beyond 2^53 (a double holds it, the rule is by size)", field, `{"idempotency_key":9007199254740994}`, false, ""},
		{"integer spelled with an exponent", field, `{"idempotency_key":1e20}`, false, `100000000000000000000`},
		{"long id in a subset", fields, `{"document_id":12345678901234567891,"version":9}`, false, ""},
		{"decimal beyond a double's precision", fields, `{"document_id":"4471","version":0.12345678901234567891}`, false, ""},
		{"number out of range", field, `{"idempotency_key":1e400}`, false, ""},
		{"long id as a string", fields, `{"document_id":"12345678901234567891","version":9}`, false, `{"document_id":"12345678901234567891","version":9}`},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			g := newFixture(t, nil).guard
			var got []byte
			k, err := idempotency.Select(tc.fn, msg(tc.body))
			if err == nil { // the native format refuses numbers when it hashes
				_, err = g.ID(k)
			}
			if err == nil {
				got, err = idempotency.CanonicalJSON(k.Value)
			}
			if tc.wantKey != "" {
				if err != nil || string(got) != tc.wantKey {
					t.Fatalf("key = %s, %v; want %s", got, err, tc.wantKey)
				}
				return
			}
			if err == nil {
				t.Fatalf("key = %s, want an error", k)
			}
			if errors.Is(err, idempotency.ErrNoKey) != tc.noKey {
				t.Errorf("errors.Is(%v, ErrNoKey) = %v, want %v", err, !tc.noKey, tc.noKey)
			}
			var ke *idempotency.KeyError
			if !errors.As(err, &ke) {
				ke = &idempotency.KeyError{InputID: "m-1"} // the guard wraps a hashing error (see TestWrapKeyErrors)
			}
			if ke.InputID != "m-1" {
				t.Errorf("err = %v, want a *KeyError naming message m-1", err)
			}
		})
	}
}

func TestJSONKey(t *testing.T) {
	a, err := idempotency.CanonicalJSON(map[string]any{"version": 9.0, "document_id": "4471", "temperature": 0.70})
	if err != nil {
		t.Fatal(err)
	}
	if want := `{"document_id":"4471","temperature":0.7,"version":9}`; string(a) != want {
		t.Errorf("JSONKey = %s, want %s", a, want)
	}
	if k, err := idempotency.CanonicalJSON(map[string]any{"id": uint64(1<<53 + 1)}); err == nil {
		t.Errorf("JSONKey of an integer a double cannot hold = %s, want an error", k)
	}
}

// FuzzBodyKeys checks that key extraction never panics, and that a key it
// finds does not depend on the body's formatting.
func FuzzBodyKeys(f *testing.F) {
	for _, s := range []string{
		`{"document_id":"4471","version":9,"temperature":0.7}`,
		`{"document_id":"4471","version":9.0,"temperature":7e-1}`,
		`{"idempotency_key":"k"}`, `[]`, `null`, `{`, `"x"`, `{"document_id":{"a":[1,2,{"b":null}]},"version":-0}`,
		`{"document_id":"\u00e9\ud83d\ude00","version":1e308,"temperature":5e-324}`,
		// Large and deep: numbers beyond the bound in and out of key fields,
		// nesting at and beyond encoding/json's limit, a long string.
		`{"idempotency_key":` + strings.Repeat("9", 5000) + `}`,
		`{"document_id":"1","version":[` + strings.Repeat("1", 101) + `],"n":` + strings.Repeat("8", 5000) + `}`,
		`{"document_id":` + strings.Repeat(`{"a":`, 9998) + `1` + strings.Repeat("}", 9998) + `,"version":1}`,
		`{"document_id":` + strings.Repeat("[", 10001) + strings.Repeat("]", 10001) + `,"version":1}`,
		`{"idempotency_key":"` + strings.Repeat(`\u00e9x`, 20000) + `"}`,
		`{"idempotency_key":1,"idempotency_key":2}`, `{"version":1,"document_id":"a","version":1}`, `{"x":1,"x":2,"idempotency_key":"k"}`,
		`{"idempotency_key":"\ud800"}`, `{"idempotency_\u006bey":"k","idempotency_key":"k"}`,
	} {
		f.Add(s)
	}
	keyFn := idempotency.FirstOf(idempotency.BodyField("idempotency_key"), idempotency.BodySubset("document_id", "version", "temperature"))
	field, fields := idempotency.BodyField("idempotency_key"), idempotency.BodySubset("document_id", "version")
	f.Fuzz(func(t *testing.T, body string) {
		// The top-level scanner agrees with decoding the body into a map.
		for _, tc := range []struct {
			fn    idempotency.Selector
			names []string
		}{{field, []string{"idempotency_key"}}, {fields, []string{"document_id", "version"}}} {
			got, gotErr := canonicalKey(tc.fn, body)
			want, wantErr := referenceKey(body, tc.names)
			if (gotErr == nil) != (wantErr == nil) || !bytes.Equal(got, want) ||
				errors.Is(gotErr, idempotency.ErrNoKey) != errors.Is(wantErr, idempotency.ErrNoKey) {
				t.Fatalf("fields %v of %q: got %s, %v; the map decoding gives %s, %v", tc.names, body, got, gotErr, want, wantErr)
			}
		}
		k, err := canonicalKey(keyFn, body)
		if err != nil {
			return
		}
		if len(k) == 0 {
			t.Fatal("empty key without an error")
		}
		var v any
		if err := json.Unmarshal([]byte(body), &v); err != nil {
			t.Fatalf("key %s from a body that is not JSON", k)
		}
		indented, err := json.MarshalIndent(v, "", "   ")
		if err != nil {
			return
		}
		k2, err := canonicalKey(keyFn, string(indented))
		if err != nil {
			t.Fatalf("reformatted body lost its key: %v", err)
		}
		if !bytes.Equal(k, k2) {
			t.Fatalf("formatting changed the key: %s vs %s", k, k2)
		}
	})
}

// canonicalKey is the canonical JSON of the value fn takes from body.
func canonicalKey(fn idempotency.Selector, body string) ([]byte, error) {
	k, err := idempotency.Select(fn, msg(body))
	if err != nil {
		return nil, err
	}
	return idempotency.CanonicalJSON(k.Value)
}

// referenceKey is BodyField (one name) or BodySubset done the plain way,
// decoding the whole body into a map, for the fuzzer to compare with: a
// name it reads that the body has twice is refused.
func referenceKey(body string, names []string) ([]byte, error) {
	var m map[string]json.RawMessage
	if err := json.Unmarshal([]byte(body), &m); err != nil {
		return nil, err
	}
	if err := twiceAtTop(body, names); err != nil {
		return nil, err
	}
	if m == nil {
		return nil, idempotency.ErrNoKey
	}
	null := func(r json.RawMessage) bool { return r == nil || bytes.Equal(bytes.TrimSpace(r), []byte("null")) }
	if len(names) == 1 {
		r := m[names[0]]
		if null(r) || bytes.Equal(bytes.TrimSpace(r), []byte(`""`)) {
			return nil, idempotency.ErrNoKey
		}
		return idempotency.CanonicalJSON(r)
	}
	sub := map[string]json.RawMessage{}
	for _, n := range names {
		if null(m[n]) {
			return nil, idempotency.ErrNoKey
		}
		sub[n] = m[n]
	}
	return idempotency.CanonicalJSON(sub)
}

// twiceAtTop reports an error when the JSON object body has one of names
// twice at its top level.
func twiceAtTop(body string, names []string) error {
	d := json.NewDecoder(strings.NewReader(body))
	if _, err := d.Token(); err != nil {
		return err
	}
	seen := map[string]bool{}
	for d.More() {
		tok, err := d.Token()
		if err != nil {
			return err
		}
		name, _ := tok.(string)
		if seen[name] && slices.Contains(names, name) {
			return errors.New("a name read twice")
		}
		seen[name] = true
		var skip json.RawMessage
		if err := d.Decode(&skip); err != nil {
			return err
		}
	}
	return nil
}

// BenchmarkBodyField is key extraction from a summarise-shaped body, which
// runs for every record.
func BenchmarkBodyField(b *testing.B) {
	m := msg(`{"idempotency_key":"sum-4471-9-7f3c","document":{"id":"4471","version":"9"},"model":"m",` +
		`"prompt_version":"v1","parameters":{"temperature":0.7,"max_tokens":300},"request_id":"r-81","sent_at":"2026-11-29T10:00:00Z"}`)
	for _, tc := range []struct {
		name string
		fn   idempotency.Selector
	}{
		{"field", idempotency.BodyField("idempotency_key")},
		{"subset", idempotency.BodySubset("document", "model", "prompt_version", "parameters")},
	} {
		b.Run(tc.name, func(b *testing.B) {
			b.ReportAllocs()
			for b.Loop() {
				if _, err := idempotency.Select(tc.fn, m); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}
