package jmespath_test

import (
	"bytes"
	"compress/gzip"
	"context"
	"crypto/md5"
	"encoding/base64"
	"encoding/json"
	"errors"
	"log/slog"
	"strings"
	"testing"

	"github.com/aws/aws-lambda-go/events"

	"github.com/sqsonce/sqsonce/middleware/idempotency"
	"github.com/sqsonce/sqsonce/middleware/idempotency/jmespath"
	"github.com/sqsonce/sqsonce/middleware/idempotency/memstore"
)

func gz(t *testing.T, s string) string {
	var b bytes.Buffer
	w := gzip.NewWriter(&b)
	if _, err := w.Write([]byte(s)); err != nil {
		t.Fatal(err)
	}
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
	return base64.StdEncoding.EncodeToString(b.Bytes())
}

// TestKeyWorkedExamples: a Powertools expression gives Powertools' ids
// (python3's json.dumps + hashlib.md5; Powertools TypeScript's
// generateHash) for the worked examples.
func TestKeyWorkedExamples(t *testing.T) {
	body := `{"idempotency_key":"059f36b4-87a3-44ab-83d2-661975830a7d","user_id":"u1","product_id":"p1","name":"Zo\u00eb","amount":10.5}`
	m := events.SQSMessage{MessageId: "m-1", Body: body,
		MessageAttributes: map[string]events.SQSMessageAttribute{"payload": {DataType: "Binary", BinaryValue: []byte(body)}}}
	for _, tc := range []struct {
		expr   string
		format idempotency.Format
		want   string
	}{
		{`powertools_json(body).idempotency_key`, idempotency.FormatPowertoolsPython, "068044a7927cd88524adc22442efbed9"},
		{`powertools_json(body).idempotency_key`, idempotency.FormatPowertoolsTypeScript, "BoBEp5J82IUkrcIkQu++2Q=="},
		{`powertools_json(body).{user_id: user_id, product_id: product_id, name: name, amount: amount}`, idempotency.FormatPowertoolsPython, "69754659cfc2f585d1b60d2ddf8354d6"},
		{`powertools_json(body).[idempotency_key][0]`, idempotency.FormatPowertoolsPython, "068044a7927cd88524adc22442efbed9"},
		{`powertools_json(powertools_base64(messageAttributes.payload.binaryValue)).idempotency_key`, idempotency.FormatPowertoolsPython, "068044a7927cd88524adc22442efbed9"},
	} {
		key, err := jmespath.Compile(tc.expr)
		if err != nil {
			t.Fatal(err)
		}
		if key.String() != tc.expr {
			t.Errorf("String() = %q, want %q", key.String(), tc.expr)
		}
		k, err := key.Select(m)
		if err != nil {
			t.Fatalf("%s: %v", tc.expr, err)
		}
		if got, err := tc.format.Hash(k); err != nil || got != tc.want {
			t.Errorf("%s in %v = %s, %v; want %s", tc.expr, tc.format, got, err, tc.want)
		}
	}
}

func TestKeyKinds(t *testing.T) {
	body := `{"a":{"b":[1,10.0,1e-5]},"s":"x","nul":null,"empty":"","arr":[],"obj":{},"nulls":[null,null],"onull":{"x":null},"zero":0,"f":false}`
	m := events.SQSMessage{MessageId: "m-1", Body: body, Attributes: map[string]string{"MessageGroupId": "g-1"},
		MessageAttributes: map[string]events.SQSMessageAttribute{"z": {DataType: "String", StringValue: ptr(gzipped)}}}
	for _, tc := range []struct {
		expr   string
		python string // the Python spelling of the selection; "" for ErrNoKey
	}{
		{`powertools_json(body).a.b`, `[1, 10.0, 1e-05]`},
		{`powertools_json(body).a`, `{"b": [1, 10.0, 1e-05]}`},
		{`length(powertools_json(body).a.b)`, `3`},
		{`powertools_json(body).zero`, `0`},
		{`powertools_json(body).f`, `false`},
		{`attributes.MessageGroupId`, `"g-1"`},
		{`powertools_json(powertools_base64_gzip(messageAttributes.z.stringValue)).k`, `"v"`},
		{`messageId`, `"m-1"`},
		{`powertools_json(body).nul`, ""},
		{`powertools_json(body).absent`, ""},
		{`powertools_json(body).empty`, ""},
		{`powertools_json(body).arr`, ""},
		{`powertools_json(body).obj`, ""},
		{`powertools_json(body).nulls`, ""},
		{`powertools_json(body).onull`, ""},
		{`powertools_json(body).[absent, nul]`, ""},
	} {
		t.Run(tc.expr, func(t *testing.T) {
			k, err := jmespath.MustCompile(tc.expr).Select(m)
			if tc.python == "" {
				var ke *idempotency.KeyError
				if !errors.Is(err, idempotency.ErrNoKey) || !errors.As(err, &ke) || ke.InputID != "m-1" {
					t.Fatalf("key %s, %v; want a *KeyError wrapping ErrNoKey", k.Value, err)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if k.Selector != "jmespath "+tc.expr {
				t.Errorf("selector %q", k.Selector)
			}
			// The selection hashes as its Python spelling does.
			got, err := idempotency.FormatPowertoolsPython.Hash(k)
			want, werr := idempotency.FormatPowertoolsPython.Hash(idempotency.Raw([]byte(tc.python)))
			if err != nil || werr != nil || got != want {
				t.Errorf("selection %s: hash %s, %v; want the hash of %s, %s (%v)", k.Value, got, err, tc.python, want, werr)
			}
		})
	}
}

var gzipped = func() string {
	var b bytes.Buffer
	w := gzip.NewWriter(&b)
	w.Write([]byte(`{"k":"v"}`)) //nolint:errcheck // a bytes.Buffer does not fail
	w.Close()                    //nolint:errcheck
	return base64.StdEncoding.EncodeToString(b.Bytes())
}()

func ptr(s string) *string { return &s }

// TestFilterKeepsNumbers: a selection after a filter or comparison keeps
// each number as the message spelled it (issue 15, item 2): an integer
// beyond 2^53 is refused by the native format instead of landing on its
// neighbour's record, and Python's 10 and 10.0 stay apart. The old
// evaluator rebuilt such selections from doubles.
func TestFilterKeepsNumbers(t *testing.T) {
	key := jmespath.MustCompile("powertools_json(body).items[?qty > `0`].id")
	sel := func(body string) idempotency.Selection {
		t.Helper()
		k, err := key.Select(events.SQSMessage{MessageId: "m-1", Body: body})
		if err != nil {
			t.Fatal(err)
		}
		return k
	}
	big := sel(`{"items":[{"id":9007199254740993,"qty":1}]}`)
	if h, err := idempotency.FormatNative.Hash(big); err == nil {
		t.Errorf("2^53+1 after a filter: native digest %s, want a refusal (the selection is %s)", h, big.Value)
	}
	neighbour := sel(`{"items":[{"id":9007199254740992,"qty":1}]}`)
	if h, err := idempotency.FormatNative.Hash(neighbour); err != nil {
		t.Errorf("2^53 after a filter: %v, want a digest (%s)", err, h)
	}
	ten, tenPointZero := sel(`{"items":[{"id":10,"qty":1}]}`), sel(`{"items":[{"id":10.0,"qty":1}]}`)
	a, errA := idempotency.FormatPowertoolsPython.Hash(ten)
	b, errB := idempotency.FormatPowertoolsPython.Hash(tenPointZero)
	if errA != nil || errB != nil || a == b {
		t.Errorf("Python format: 10 and 10.0 after a filter give %s (%v) and %s (%v); want two ids (selections %s, %s)",
			a, errA, b, errB, ten.Value, tenPointZero.Value)
	}
	// As python3 spells json.loads of the message's selection.
	for _, tc := range []struct{ body, python string }{
		{`{"items":[{"id":10.0,"qty":1},{"id":7.50,"qty":2},{"id":1,"qty":0}]}`, `[10.0, 7.5]`},
		{`{"items":[{"id":1e2,"qty":1}]}`, `[100.0]`},
	} {
		got, err := idempotency.FormatPowertoolsPython.Hash(sel(tc.body))
		want, werr := idempotency.FormatPowertoolsPython.Hash(idempotency.Raw([]byte(tc.python)))
		if err != nil || werr != nil || got != want {
			t.Errorf("%s: Python hash %s (%v), want that of %s, %s (%v)", tc.body, got, err, tc.python, want, werr)
		}
	}
}

func TestKeyErrors(t *testing.T) {
	if _, err := jmespath.Compile(`powertools_json(body).[`); err == nil {
		t.Error("Compile of an invalid expression: no error")
	}
	func() {
		defer func() {
			if recover() == nil {
				t.Error("MustCompile of an invalid expression did not panic")
			}
		}()
		jmespath.MustCompile(`powertools_json(body).[`)
	}()
	for _, body := range []string{`not json`, `{"a":1} trailing`, `{"a":1,"n":` + strings.Repeat("1", 101) + `}`} {
		_, err := jmespath.MustCompile(`powertools_json(body).a`).Select(events.SQSMessage{MessageId: "m-1", Body: body})
		var ke *idempotency.KeyError
		if !errors.As(err, &ke) || errors.Is(err, idempotency.ErrNoKey) || !strings.Contains(err.Error(), "powertools_json") {
			t.Errorf("body %q: %v; want a *KeyError from powertools_json, not ErrNoKey", body, err)
		}
	}
	inflate := jmespath.MustCompile(`powertools_base64_gzip(body)`)
	if _, err := inflate.Select(events.SQSMessage{Body: gz(t, strings.Repeat("0", 1<<20))}); err != nil {
		t.Errorf("a gzip body inflating to SQS's largest message, 1 MiB: %v", err)
	}
	_, err := inflate.Select(events.SQSMessage{Body: gz(t, strings.Repeat("0", 1<<20+1))})
	if err == nil || !strings.Contains(err.Error(), "more than 1048576 bytes decoded") {
		t.Errorf("a gzip body inflating beyond 1 MiB: %v", err)
	}
}

// TestValidateSpelling: as a validation selector, an amount re-sent as 10.0
// instead of 10 is the same payload in the native format and a different
// one in Powertools Python's (json.dumps writes 10 and 10.0), as in Python.
func TestValidateSpelling(t *testing.T) {
	for _, tc := range []struct {
		format   idempotency.Format
		mismatch bool
	}{{idempotency.FormatNative, false}, {idempotency.FormatPowertoolsPython, true}, {idempotency.FormatPowertoolsTypeScript, false}} {
		g, err := idempotency.New(idempotency.Config{Store: memstore.New(), Namespace: "ns", Format: tc.format,
			Logger: slog.New(slog.DiscardHandler)})
		if err != nil {
			t.Fatal(err)
		}
		h := idempotency.Wrap(g, jmespath.MustCompile(`powertools_json(body).id`).Selector(), func(context.Context, events.SQSMessage) (int, error) { return 1, nil }, idempotency.WithPayload(jmespath.MustCompile(`powertools_json(body).amount`).Selector()))
		if _, err := h(t.Context(), events.SQSMessage{MessageId: "m-1", Body: `{"id":"k","amount":10}`}); err != nil {
			t.Fatal(err)
		}
		_, err = h(t.Context(), events.SQSMessage{MessageId: "m-2", Body: `{"id":"k","amount":10.0}`})
		if errors.Is(err, idempotency.ErrPayloadMismatch) != tc.mismatch {
			t.Errorf("%v: amount 10 then 10.0: %v; want mismatch %v", tc.format, err, tc.mismatch)
		}
	}
}

// BenchmarkKey is a JMESPath key of an ordinary body, and the refusal of a
// 1 MB body whose key is one huge number (decoded, then refused by length).
func BenchmarkKey(b *testing.B) {
	key := jmespath.MustCompile(`powertools_json(body).idempotency_key`).Select
	for _, tc := range []struct{ name, body string }{
		{"small", `{"idempotency_key":"sum-4471-9-7f3c","document":{"id":"4471","version":"9"},"parameters":{"temperature":0.7}}`},
		{"1MB-number", `{"idempotency_key":` + strings.Repeat("7", 1<<20) + `}`},
	} {
		m := events.SQSMessage{Body: tc.body}
		b.Run(tc.name, func(b *testing.B) {
			for b.Loop() {
				k, err := key(m)
				if err == nil {
					_, err = idempotency.FormatPowertoolsTypeScript.Hash(k)
				}
				if (err != nil) != (tc.name != "small") {
					b.Fatal(err)
				}
			}
		})
	}
}

// TestMissingPayload: a selection that is no key (null, "", an empty array
// or object, one of nulls only) is, as a payload, hashed as Powertools
// TypeScript hashes it (md5 base64 of JSON.stringify(deepSort(…))), on an
// SQS message and on a whole event; as a key it is still none.
func TestMissingPayload(t *testing.T) {
	for _, tc := range []struct {
		expr, body string
		attrs      map[string]events.SQSMessageAttribute
		want       string // JSON.stringify(deepSort(selection))
	}{
		{`powertools_json(body).payload`, `{"id":"k"}`, nil, `null`},
		{`powertools_json(body).payload`, `{"id":"k","payload":null}`, nil, `null`},
		{`powertools_json(body).payload`, `{"id":"k","payload":""}`, nil, `""`},
		{`powertools_json(body).payload`, `{"id":"k","payload":[ ]}`, nil, `[]`},
		{`powertools_json(body).payload`, `{"id":"k","payload":{ }}`, nil, `{}`},
		{`powertools_json(body).payload`, `{"id":"k","payload":[null, null]}`, nil, `[null,null]`},
		{`powertools_json(body).payload`, `{"id":"k","payload":{"a": null}}`, nil, `{"a":null}`},
		{`powertools_json(body).[a, b]`, `{"id":"k"}`, nil, `[null,null]`},
		{`powertools_json(body).{b: b, a: a}`, `{"id":"k"}`, nil, `{"a":null,"b":null}`},
		{"powertools_json(body).items[?qty > `5`]", `{"id":"k","items":[{"qty":1}]}`, nil, `[]`},
		{`messageAttributes.absent.stringValue`, `{"id":"k"}`, nil, `null`},
		{`messageAttributes.tag.stringValue`, `{"id":"k"}`, map[string]events.SQSMessageAttribute{"tag": {DataType: "String", StringValue: new("")}}, `""`},
	} {
		sum := md5.Sum([]byte(tc.want))
		want := base64.StdEncoding.EncodeToString(sum[:])
		store := memstore.New()
		var lastID string
		g, err := idempotency.New(idempotency.Config{Store: store, Namespace: "ns", Format: idempotency.FormatPowertoolsTypeScript,
			Logger: slog.New(slog.DiscardHandler), OnOutcome: func(_ context.Context, r idempotency.Report) { lastID = r.ID }})
		if err != nil {
			t.Fatal(err)
		}
		e := jmespath.MustCompile(tc.expr)
		m := events.SQSMessage{MessageId: "m-1", Body: tc.body, MessageAttributes: tc.attrs}
		key := jmespath.MustCompile(`powertools_json(body).id`).Selector()
		runs := 0
		op := func(context.Context, events.SQSMessage) (int, error) { runs++; return runs, nil }
		h := idempotency.Wrap(g, key, op, idempotency.WithPayload(e.Selector()))
		for range 2 {
			if v, err := h(t.Context(), m); err != nil || v != 1 {
				t.Errorf("%s on %s: %d, %v; want the first run's result", tc.expr, tc.body, v, err)
			}
		}
		if rec, _ := store.Get(lastID); rec.Validation != want {
			t.Errorf("%s on %s: validation hash %q, want %q, Powertools TypeScript's of %s", tc.expr, tc.body, rec.Validation, want, tc.want)
		}
		if _, err := e.Select(m); !errors.Is(err, idempotency.ErrNoKey) {
			t.Errorf("%s on %s as a key: %v, want ErrNoKey", tc.expr, tc.body, err)
		}
		if tc.attrs != nil {
			continue
		}
		// The body as a whole event (SelectJSON), in a store of its own.
		we := jmespath.MustCompile(strings.ReplaceAll(tc.expr, "powertools_json(body)", "@"))
		wk := jmespath.MustCompile(`id`).Selector()
		wh := idempotency.Wrap(g, wk, func(context.Context, json.RawMessage) (int, error) { return 1, nil }, idempotency.WithPayload(we.Selector()))
		if _, err := wh(t.Context(), json.RawMessage(tc.body)); err != nil {
			t.Errorf("%s on the event %s: %v", we, tc.body, err)
		} else if rec, _ := store.Get(lastID); rec.Validation != want {
			t.Errorf("%s on the event %s: validation hash %q, want %q", we, tc.body, rec.Validation, want)
		}
	}
}
