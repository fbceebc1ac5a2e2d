package idempotency_test

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"math/rand/v2"
	"strings"
	"testing"

	"github.com/aws/aws-lambda-go/events"

	"github.com/sqsonce/sqsonce/middleware/idempotency"
	"github.com/sqsonce/sqsonce/middleware/idempotency/memstore"
)

// selectors are the key functions the domain tests mix: fields, paths and
// subsets over the same few names, alone and in FirstOf combinations.
var selectors = func() map[string]idempotency.Selector {
	base := map[string]idempotency.Selector{
		`BodyField("x")`:       idempotency.BodyField("x"),
		`BodyField("y")`:       idempotency.BodyField("y"),
		`BodyPath("x", "x")`:   idempotency.BodyField("x", "x"),
		`BodyPath("x", "y")`:   idempotency.BodyField("x", "y"),
		`BodyFields("x")`:      idempotency.BodySubset("x"),
		`BodyFields("y")`:      idempotency.BodySubset("y"),
		`BodyFields("x", "y")`: idempotency.BodySubset("x", "y"),
	}
	all := map[string]idempotency.Selector{}
	for a, fa := range base {
		all[a] = fa
		for b, fb := range base {
			if a != b {
				all["FirstOf("+a+", "+b+")"] = idempotency.FirstOf(fa, fb)
			}
		}
	}
	return all
}()

// fieldsOf is what a key says about the body it came from: the fields it
// read, by path, with their values as canonical JSON.
func fieldsOf(t testing.TB, k idempotency.Selection) map[string]string {
	canon := func(raw []byte) string {
		c, err := idempotency.CanonicalJSON(json.RawMessage(raw))
		if err != nil {
			t.Fatalf("canonical %s: %v", raw, err)
		}
		return string(c)
	}
	if k.Selector == "body fields" {
		var m map[string]json.RawMessage
		if err := json.Unmarshal(k.Value, &m); err != nil {
			t.Fatal(err)
		}
		out := map[string]string{}
		for name, v := range m {
			path, _ := json.Marshal([]string{name})
			out[string(path)] = canon(v)
		}
		return out
	}
	return map[string]string{strings.TrimPrefix(k.Selector, "body "): canon(k.Value)}
}

// checkDomains asserts the domain separation of native keys: two keys of
// bodies a and b (any selectors, any FirstOf combination) get one record id
// only if they read the same fields and those hold equal values.
func checkDomains(t testing.TB, a, b string) {
	type taken struct {
		name string
		key  idempotency.Selection
		id   string
	}
	var keys []taken
	for _, body := range []string{a, b} {
		for name, fn := range selectors {
			k, err := idempotency.Select(fn, msg(body))
			if err != nil {
				continue
			}
			material, err := idempotency.Spell(idempotency.FormatNative, k)
			if err != nil {
				continue // a number the native format refuses
			}
			keys = append(keys, taken{name + " of " + body, k, string(material)})
		}
	}
	for i, x := range keys {
		for _, y := range keys[i+1:] {
			if x.id != y.id {
				continue
			}
			fx, fy := fieldsOf(t, x.key), fieldsOf(t, y.key)
			if fmt.Sprint(fx) != fmt.Sprint(fy) {
				t.Fatalf("%s and %s share a record, reading %v and %v", x.name, y.name, fx, fy)
			}
		}
	}
}

// TestKeyDomainSeparation: the collision, then random nested
// bodies over the same names.
func TestKeyDomainSeparation(t *testing.T) {
	x, err := idempotency.Select(idempotency.BodyField("x"), msg(`{"x":{"x":1}}`))
	if err != nil {
		t.Fatal(err)
	}
	y, err := idempotency.Select(idempotency.BodySubset("x"), msg(`{"x":1}`))
	if err != nil {
		t.Fatal(err)
	}
	mx, _ := idempotency.Spell(idempotency.FormatNative, x)
	my, _ := idempotency.Spell(idempotency.FormatNative, y)
	if bytes.Equal(mx, my) {
		t.Fatalf("BodyField(x) of {x:{x:1}} and BodyFields(x) of {x:1} share material %s", mx)
	}
	checkDomains(t, `{"x":{"x":1}}`, `{"x":1}`)
	checkDomains(t, `{"x":{"x":1,"y":2}}`, `{"x":1,"y":2}`)

	r := rand.New(rand.NewPCG(1, 2))
	for range 300 {
		checkDomains(t, randomBody(r), randomBody(r))
	}
}

// FuzzKeyDomains is TestKeyDomainSeparation on any two bodies.
func FuzzKeyDomains(f *testing.F) {
	f.Add(`{"x":{"x":1}}`, `{"x":1}`)
	f.Add(`{"x":{"y":"a"},"y":"a"}`, `{"x":{"x":{"y":"a"}}}`)
	f.Fuzz(func(t *testing.T, a, b string) { checkDomains(t, a, b) })
}

// randomBody is an object over the names x and y, nested up to three deep,
// with a small alphabet of leaves so that values often repeat.
func randomBody(r *rand.Rand) string {
	var value func(depth int) any
	value = func(depth int) any {
		switch n := r.IntN(6); {
		case n == 0 && depth < 3:
			o := map[string]any{}
			for _, k := range []string{"x", "y"} {
				if r.IntN(2) == 0 {
					o[k] = value(depth + 1)
				}
			}
			return o
		case n == 1 && depth < 3:
			return []any{value(depth + 1)}
		case n == 2:
			return 1
		case n == 3:
			return "a"
		}
		return map[string]any{"x": 1}
	}
	o := map[string]any{}
	for _, k := range []string{"x", "y"} {
		if r.IntN(4) > 0 {
			o[k] = value(1)
		}
	}
	b, _ := json.Marshal(o)
	return string(b)
}

// hugeNumberBody is a body of about size bytes whose key field is one
// number.
func hugeNumberBody(size int) string {
	return `{"idempotency_key":` + strings.Repeat("7", size) + `}`
}

// TestHugeNumberRefused: a number longer than the bound in a key is refused
// with a *KeyError naming the bound, in every format, without ErrNoKey.
func TestHugeNumberRefused(t *testing.T) {
	for _, body := range []string{
		hugeNumberBody(1 << 20),
		`{"idempotency_key":{"a":[1,` + strings.Repeat("1", 1<<20) + `.5]}}`,
		`{"idempotency_key":-` + strings.Repeat("0", 200) + `}`, // not JSON either: refused all the same
		`{"idempotency_key":1e` + strings.Repeat("9", 200) + `}`,
	} {
		_, err := idempotency.Select(idempotency.BodyField("idempotency_key"), msg(body))
		var ke *idempotency.KeyError
		if !errors.As(err, &ke) || errors.Is(err, idempotency.ErrNoKey) {
			t.Errorf("body %.40s…: %v; want a *KeyError", body, err)
		}
	}
	_, err := idempotency.Select(idempotency.BodyField("idempotency_key"), msg(hugeNumberBody(1<<20)))
	if !strings.Contains(err.Error(), "longer than 100 characters") {
		t.Errorf("error %q does not say why", err)
	}
	// A long number elsewhere in the body is not key material.
	if k, err := idempotency.Select(idempotency.BodyField("id"), msg(`{"id":"k","n":`+strings.Repeat("7", 1<<20)+`}`)); err != nil || string(k.Value) != `"k"` {
		t.Errorf("key beside a long number: %s, %v", k.Value, err)
	}
}

// TestDeepBody: nesting beyond encoding/json's limit is refused as it is,
// and just within it is read.
func TestDeepBody(t *testing.T) {
	deep := func(n int) string {
		return `{"id":"k","d":` + strings.Repeat("[", n) + strings.Repeat("]", n) + `}`
	}
	for _, tc := range []struct {
		depth int
		ok    bool
	}{{9999, true}, {10000, false}, {1 << 20, false}} {
		body := deep(tc.depth)
		_, err := idempotency.Select(idempotency.BodyField("id"), msg(body))
		var v any
		jsonOK := json.Unmarshal([]byte(body), &v) == nil
		if (err == nil) != tc.ok || jsonOK != tc.ok {
			t.Errorf("depth %d: key error %v, encoding/json accepts: %v; want ok=%v", tc.depth, err, jsonOK, tc.ok)
		}
	}
}

// BenchmarkHugeNumber is the refusal of a 1 MB body whose key is one huge
// number, against the key of an ordinary body. The target is ≤ 1 ms per
// refusal.
func BenchmarkHugeNumber(b *testing.B) {
	for _, tc := range []struct{ name, body string }{
		{"1MB-number", hugeNumberBody(1 << 20)},
		{"1MB-number-beside-key", `{"idempotency_key":"k","n":` + strings.Repeat("7", 1<<20) + `}`},
		{"small", `{"idempotency_key":"k"}`},
	} {
		m := msg(tc.body)
		fn := idempotency.BodyField("idempotency_key")
		b.Run(tc.name, func(b *testing.B) {
			b.SetBytes(int64(len(tc.body)))
			for b.Loop() {
				idempotency.Select(fn, m) //nolint:errcheck // refused or not, the time is measured
			}
		})
	}
}

// BenchmarkKeyID is a key and its record id, per format: what the guard
// does for every record before it claims.
func BenchmarkKeyID(b *testing.B) {
	m := msg(`{"idempotency_key":"sum-4471-9-7f3c","document":{"id":"4471","version":"9"},"model":"m",` +
		`"prompt_version":"v1","parameters":{"temperature":0.7,"max_tokens":300},"request_id":"r-81","sent_at":"2026-11-29T10:00:00Z"}`)
	for _, format := range []idempotency.Format{idempotency.FormatNative, idempotency.FormatPowertoolsPython, idempotency.FormatPowertoolsTypeScript} {
		g, err := idempotency.New(idempotency.Config{Store: memstore.New(), Namespace: "ns", Format: format})
		if err != nil {
			b.Fatal(err)
		}
		for _, tc := range []struct {
			name string
			fn   idempotency.Selector
		}{
			{"field", idempotency.BodyField("idempotency_key")},
			{"subset", idempotency.BodySubset("document", "model", "prompt_version", "parameters")},
		} {
			b.Run(format.String()+"/"+tc.name, func(b *testing.B) {
				b.ReportAllocs()
				for b.Loop() {
					k, err := idempotency.Select(tc.fn, m)
					if err != nil {
						b.Fatal(err)
					}
					if _, err := g.ID(k); err != nil {
						b.Fatal(err)
					}
				}
			})
		}
	}
}

// TestRawMaterialDomain: raw material given to Do that spells the canonical
// form a selector's key is hashed as never gets that key's record: a
// producer whose key reaches Do as raw bytes cannot forge another request's
// selector key (nor the reverse), so the two requests each run once.
func TestRawMaterialDomain(t *testing.T) {
	g, err := idempotency.New(idempotency.Config{Store: memstore.New(), Namespace: "ns"})
	if err != nil {
		t.Fatal(err)
	}
	work := map[string]string{"document_id": "D1", "version": "9"}
	selected, err := idempotency.SelectionOf("work", work)
	if err != nil {
		t.Fatal(err)
	}
	forged := idempotency.Raw([]byte(`{"selector":"work","value":{"document_id":"D1","version":"9"}}`)) // RFC 8785 of the selector's key
	selectedID, err := g.ID(selected)
	if err != nil {
		t.Fatal(err)
	}
	if rawID := mustID(t, g, forged); rawID == selectedID {
		t.Fatalf("raw material %s has the record id %s of KeyOf(\"work\", …)", forged, rawID)
	}
	runs := 0
	op := func(context.Context) (int, error) { runs++; return runs, nil }
	first, err1 := idempotency.Do(t.Context(), g, forged, op)
	wrapped := idempotency.Wrap(g, idempotency.SelectorFunc(func(events.SQSMessage) (idempotency.Selection, error) { return selected, nil }),
		func(ctx context.Context, _ events.SQSMessage) (int, error) { return op(ctx) })
	second, err2 := wrapped(t.Context(), events.SQSMessage{MessageId: "m"})
	if err1 != nil || err2 != nil || runs != 2 || first == second {
		t.Errorf("raw material then its selector key: results %d, %d (%v, %v), %d runs; want two runs with their own results", first, second, err1, err2, runs)
	}
}
