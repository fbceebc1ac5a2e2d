package jmespath_test

import (
	"bytes"
	"compress/gzip"
	"context"
	"encoding/base64"
	"errors"
	"log/slog"
	"testing"

	"github.com/aws/aws-lambda-go/events"

	"github.com/sqsonce/sqsonce/internal/jsonkey"
	"github.com/sqsonce/sqsonce/middleware/idempotency"
	"github.com/sqsonce/sqsonce/middleware/idempotency/jmespath"
	"github.com/sqsonce/sqsonce/middleware/idempotency/memstore"
)

// TestLoneSurrogatesRefused: powertools_json no longer reads a lone
// surrogate escape as U+FFFD (issue 15, item 1): "\ud800" and "\udbff"
// are refused before anything is claimed, as a key and as a validated
// payload, and "\ufffd" keeps its own record. The old evaluator gave the
// three one record id in every format.
func TestLoneSurrogatesRefused(t *testing.T) {
	key := jmespath.MustCompile(`powertools_json(body).k`)
	for _, body := range []string{`{"k":"\ud800"}`, `{"k":"\udbff"}`, `{"k":"a\udc00"}`, `{"k":["\ud83d"]}`} {
		_, err := key.Select(events.SQSMessage{MessageId: "m-1", Body: body})
		var ke *idempotency.KeyError
		if !errors.As(err, &ke) || !errors.Is(err, jsonkey.ErrLoneSurrogate) {
			t.Errorf("%s: %v, want a *KeyError for the lone surrogate", body, err)
		}
	}
	for _, body := range []string{`{"k":"\ufffd"}`, `{"k":"\ud83d\ude00"}`} {
		if _, err := key.Select(events.SQSMessage{MessageId: "m-1", Body: body}); err != nil {
			t.Errorf("%s: %v", body, err)
		}
	}
	// As a validated payload: refused before the claim, nothing runs.
	store := memstore.New()
	g, err := idempotency.New(idempotency.Config{Store: store, Namespace: "ns", Format: idempotency.FormatPowertoolsPython,
		Logger: slog.New(slog.DiscardHandler)})
	if err != nil {
		t.Fatal(err)
	}
	ran := 0
	h := idempotency.Wrap(g, jmespath.MustCompile(`powertools_json(body).id`).Selector(), func(context.Context, events.SQSMessage) (int, error) { ran++; return 1, nil }, idempotency.WithPayload(jmespath.MustCompile(`powertools_json(body).payload`).Selector()))
	for _, body := range []string{`{"id":"k","payload":"\ud800"}`, `{"id":"k","payload":"\udbff"}`} {
		if _, err := h(t.Context(), events.SQSMessage{MessageId: "m-1", Body: body}); !errors.Is(err, jsonkey.ErrLoneSurrogate) {
			t.Errorf("payload %s: %v, want the lone surrogate refused", body, err)
		}
	}
	if ran != 0 || store.Len() != 0 {
		t.Errorf("after refused payloads: %d runs, %d records; want none", ran, store.Len())
	}
}

// TestRuntimeClasses pins, for each class of issue 20 that concerns
// JMESPath functions, an input the runtimes compute alike (accepted, with
// the selection both give: TestDifferential's corpus checks these against
// python3 and node) and one they compute differently (refused before any
// claim). The old evaluator followed Go for all of them.
func TestRuntimeClasses(t *testing.T) {
	b64 := func(b []byte) string { return base64.StdEncoding.EncodeToString(b) }
	gz := func(b []byte) string {
		var buf bytes.Buffer
		w := gzip.NewWriter(&buf)
		w.Write(b) //nolint:errcheck // a bytes.Buffer does not fail
		w.Close()  //nolint:errcheck
		return b64(buf.Bytes())
	}
	for _, tc := range []struct {
		class, expr, body string
		want              string // the selection, or "" for a refusal
	}{
		{"keys() in the order sent", "keys(powertools_json(body))", `{"b":1,"a":2,"c":3}`, `["b","a","c"]`},
		{"keys() of index-named members (JavaScript lists them first)", "keys(powertools_json(body))", `{"b":1,"1":2}`, ""},
		{"values() in the order sent", "values(powertools_json(body))", `{"b":1,"a":2}`, `[1,2]`},
		{"* in the order sent", "powertools_json(body).*", `{"b":1,"a":2}`, `[1,2]`},
		{"powertools_base64 of UTF-8", "powertools_base64(powertools_json(body).k)", `{"k":"` + b64([]byte("é")) + `"}`, `"é"`},
		{"powertools_base64 of 0xFE (Python raises, TypeScript writes U+FFFD)", "powertools_base64(powertools_json(body).k)", `{"k":"` + b64([]byte{0xfe}) + `"}`, ""},
		{"powertools_base64 of 0xFF", "powertools_base64(powertools_json(body).k)", `{"k":"` + b64([]byte{0xff}) + `"}`, ""},
		{"powertools_base64_gzip of 0xFF", "powertools_base64_gzip(powertools_json(body).k)", `{"k":"` + gz([]byte{0xff}) + `"}`, ""},
		{"powertools_base64 of a BOM (TypeScript's TextDecoder drops it)", "powertools_base64(powertools_json(body).k)", `{"k":"` + b64([]byte("\ufeffa")) + `"}`, ""},
		{"powertools_base64_gzip of a BOM (both keep it)", "powertools_base64_gzip(powertools_json(body).k)", `{"k":"` + gz([]byte("\ufeffa")) + `"}`, "\"\ufeffa\""},
		{"base64 with a newline (TypeScript refuses it)", "powertools_base64(powertools_json(body).k)", `{"k":"YWJj\n"}`, ""},
		{"base64 unpadded (TypeScript refuses it)", "powertools_base64(powertools_json(body).k)", `{"k":"YWI"}`, ""},
		{"length() of BMP text", "length(powertools_json(body).k)", `{"k":"é中"}`, `2`},
		{"length() beyond the BMP (code points against UTF-16 units)", "length(powertools_json(body).k)", `{"k":"😀"}`, ""},
		{"sort() of lower-case ASCII", "sort(powertools_json(body).k)", `{"k":["b","a10","a9"]}`, `["a10","a9","b"]`},
		{"sort() across cases (localeCompare against code points)", "sort(powertools_json(body).k)", `{"k":["b","a","B"]}`, ""},
		{"sort() of numbers", "sort(powertools_json(body).k)", `{"k":[3,1.5,2]}`, `[1.5,2,3]`},
		{"to_string() with <", "to_string(powertools_json(body).k)", `{"k":{"a":"<&>"}}`, `"{\"a\":\"<&>\"}"`},
		{"to_string() of an integer", "to_string(powertools_json(body).k)", `{"k":[1,-2]}`, `"[1,-2]"`},
		{"to_string() of 1.0 (Python 1.0, TypeScript 1)", "to_string(powertools_json(body).k)", `{"k":1.0}`, ""},
		{"to_string() of non-ASCII (Python escapes it)", "to_string(powertools_json(body).k)", `{"k":["é"]}`, ""},
		{"a JSON string where a number is expected", "abs(powertools_json(body).k)", `{"k":"1"}`, ""},
	} {
		k, err := jmespath.MustCompile(tc.expr).Select(events.SQSMessage{MessageId: "m-1", Body: tc.body})
		switch {
		case tc.want == "" && err == nil:
			t.Errorf("%s: selection %s, want a refusal", tc.class, k.Value)
		case tc.want == "":
			var ke *idempotency.KeyError
			if !errors.As(err, &ke) || errors.Is(err, idempotency.ErrNoKey) {
				t.Errorf("%s: %v, want a *KeyError refusing it", tc.class, err)
			}
		case err != nil || string(k.Value) != tc.want:
			t.Errorf("%s: %s, %v; want %s", tc.class, k.Value, err, tc.want)
		}
	}
}
