package idempotency_test

import (
	"context"
	"crypto/md5"
	"encoding/base64"
	"encoding/hex"
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

// emptyPayloads are payloads that are no key: as a payload each is hashed
// as Powertools hashes it (JSON.stringify, json.dumps), an absent member as
// null. text is the body's payload member ("" leaves it out).
var emptyPayloads = []struct{ name, text string }{
	{"absent", ""},
	{"null", "null"},
	{"empty string", `""`},
	{"empty array", "[]"},
	{"empty object", "{}"},
	{"array of nulls", "[null,null]"},
	{"object of nulls", `{"a":null}`},
}

// payloadBody is a message body with the key k, version 3 and the payload
// member text (none when text is ""); spaced spells it otherwise.
func payloadBody(k, text string, spaced bool) string {
	members := []string{`"idempotency_key":"` + k + `"`, `"version":3`}
	if text != "" {
		members = append(members, `"payload":`+text)
	}
	if spaced {
		for i, j := 0, len(members)-1; i < j; i, j = i+1, j-1 {
			members[i], members[j] = members[j], members[i]
		}
		return "{ " + strings.ReplaceAll(strings.Join(members, " ,\n "), ":", " : ") + " }"
	}
	return "{" + strings.Join(members, ",") + "}"
}

// powertoolsHash is the validation hash Powertools stores for the JSON
// value v (compact, object names lower case): TypeScript's md5 base64 of
// JSON.stringify(deepSort(v)), Python's md5 hex of json.dumps(v,
// sort_keys=True).
func powertoolsHash(t *testing.T, f idempotency.Format, v string) string {
	t.Helper()
	var x any
	if err := json.Unmarshal([]byte(v), &x); err != nil {
		t.Fatal(err)
	}
	sorted, err := json.Marshal(x) // sorted names, no space; the values here escape nothing
	if err != nil {
		t.Fatal(err)
	}
	if f == idempotency.FormatPowertoolsTypeScript {
		sum := md5.Sum(sorted)
		return base64.StdEncoding.EncodeToString(sum[:])
	}
	py := strings.NewReplacer(",", ", ", ":", ": ").Replace(string(sorted)) // json.dumps' separators
	sum := md5.Sum([]byte(py))
	return hex.EncodeToString(sum[:])
}

// TestEmptyPayload: a payload that is null, "", [] or {}, holds only
// nulls, or is absent is validated like any other, never refused as no
// key: the first delivery runs, the same payload again (spelled otherwise)
// replays, another payload is a mismatch, and the hash stored is
// Powertools' for the same selection (an absent field's is null's).
// Record ids and the key's missing rule are untouched.
func TestEmptyPayload(t *testing.T) {
	selectors := []struct {
		name    string
		payload idempotency.Selector
		// selection is what is validated for the payload member text
		// (null for an absent one), and the selector the native format
		// hashes.
		selection func(text string) (selector, value string)
		noKey     func(text string) bool // as a key, the payload member text is none
	}{
		{"jmespath", jmespath.MustCompile(`powertools_json(body).payload`).Selector(),
			func(text string) (string, string) { return "jmespath powertools_json(body).payload", text },
			func(string) bool { return true }},
		{"BodyField", idempotency.BodyField("payload"),
			func(text string) (string, string) { return `body ["payload"]`, text },
			func(text string) bool { return text == "" || text == "null" || text == `""` }},
		{"BodySubset", idempotency.BodySubset("version", "payload"),
			func(text string) (string, string) { return "body fields", `{"payload":` + text + `,"version":3}` },
			func(text string) bool { return text == "" || text == "null" }},
		{"FirstOf", idempotency.FirstOf(idempotency.BodyField("absent"), idempotency.BodyField("payload")),
			func(text string) (string, string) {
				if text == "null" || text == `""` { // no key for either part: the first part's payload
					return `body ["absent"]`, "null"
				}
				return `body ["payload"]`, text
			},
			func(text string) bool { return text == "" || text == "null" || text == `""` }},
	}
	for _, sel := range selectors {
		for _, f := range allFormats {
			for _, p := range emptyPayloads {
				t.Run(sel.name+"/"+f.String()+"/"+p.name, func(t *testing.T) {
					store := memstore.New()
					var lastID string
					g, err := idempotency.New(idempotency.Config{Store: store, Namespace: "ns", Format: f, Logger: slog.New(slog.DiscardHandler),
						OnOutcome: func(_ context.Context, r idempotency.Report) { lastID = r.ID }})
					if err != nil {
						t.Fatal(err)
					}
					runs := 0
					h := idempotency.Wrap(g, idempotency.BodyField("idempotency_key"), func(context.Context, events.SQSMessage) (int, error) {
						runs++
						return runs, nil
					}, idempotency.WithPayload(sel.payload))
					call := func(body string) (int, error) {
						return h(context.Background(), events.SQSMessage{MessageId: "m-1", Body: body})
					}
					if v, err := call(payloadBody("k", p.text, false)); err != nil || v != 1 {
						t.Fatalf("first delivery: %d, %v; want it run", v, err)
					}
					text := p.text
					if text == "" {
						text = "null"
					}
					selector, value := sel.selection(text)
					want, err := f.Hash(idempotency.Selection{Selector: selector, Value: json.RawMessage(value)})
					if err != nil {
						t.Fatal(err)
					}
					if f != idempotency.FormatNative {
						if pt := powertoolsHash(t, f, value); want != pt {
							t.Fatalf("Format.Hash of %s is %s, Powertools' %s", value, want, pt)
						}
					}
					if rec, ok := store.Get(lastID); !ok || rec.Validation != want {
						t.Errorf("validation hash %q (record %v), want %q, the hash of %s", rec.Validation, ok, want, value)
					}
					if id := mustID(t, g, idempotency.Selection{Selector: `body ["idempotency_key"]`, Value: json.RawMessage(`"k"`)}); id != lastID {
						t.Errorf("record id %s, want the key's %s", lastID, id)
					}
					if v, err := call(payloadBody("k", p.text, true)); err != nil || v != 1 || runs != 1 {
						t.Errorf("the same payload again: %d, %v, %d runs; want the stored result", v, err, runs)
					}
					if _, err := call(payloadBody("k", `"other"`, false)); !errors.Is(err, idempotency.ErrPayloadMismatch) {
						t.Errorf("another payload: %v, want ErrPayloadMismatch", err)
					}
					// As a key, the same selection is still none.
					key := idempotency.Wrap(g, sel.payload, func(context.Context, events.SQSMessage) (int, error) { return 0, nil })
					_, err = key(context.Background(), events.SQSMessage{MessageId: "m-2", Body: payloadBody("k", p.text, false)})
					var ke *idempotency.KeyError
					if noKey := sel.noKey(p.text); noKey && (!errors.As(err, &ke) || !errors.Is(err, idempotency.ErrNoKey)) || !noKey && err != nil {
						t.Errorf("as a key: %v; want a *KeyError wrapping ErrNoKey: %v", err, noKey)
					}
				})
			}
		}
	}
}

// TestEmptyPayloadNullBody: a body that is null has every body field
// absent: as a payload, null (as a key, none).
func TestEmptyPayloadNullBody(t *testing.T) {
	store := memstore.New()
	var lastID string
	g, err := idempotency.New(idempotency.Config{Store: store, Namespace: "ns", Format: idempotency.FormatPowertoolsTypeScript,
		Logger: slog.New(slog.DiscardHandler), OnOutcome: func(_ context.Context, r idempotency.Report) { lastID = r.ID }})
	if err != nil {
		t.Fatal(err)
	}
	key := idempotency.SelectorFunc(func(m events.SQSMessage) (idempotency.Selection, error) {
		return idempotency.SelectionOf("id", m.MessageId)
	})
	for _, c := range []struct {
		payload idempotency.Selector
		value   string
	}{
		{idempotency.BodyField("payload"), "null"},
		{idempotency.BodySubset("payload", "version"), `{"payload":null,"version":null}`},
	} {
		h := idempotency.Wrap(g, key, func(context.Context, events.SQSMessage) (int, error) { return 1, nil }, idempotency.WithPayload(c.payload))
		if _, err := h(context.Background(), events.SQSMessage{MessageId: "m-" + c.value, Body: " null "}); err != nil {
			t.Fatalf("%s: %v", c.value, err)
		}
		if rec, _ := store.Get(lastID); rec.Validation != powertoolsHash(t, idempotency.FormatPowertoolsTypeScript, c.value) {
			t.Errorf("validation hash %q, want the hash of %s", rec.Validation, c.value)
		}
		if _, err := idempotency.Select(c.payload, events.SQSMessage{Body: "null"}); !errors.Is(err, idempotency.ErrNoKey) {
			t.Errorf("as a key: %v, want ErrNoKey", err)
		}
	}
}

// TestEmptyPayloadWrapJSON: WrapJSON validates a null JMESPath payload as
// Powertools TypeScript does (md5 base64 of "null").
func TestEmptyPayloadWrapJSON(t *testing.T) {
	store := memstore.New()
	var lastID string
	g, err := idempotency.New(idempotency.Config{Store: store, Namespace: "ns", Format: idempotency.FormatPowertoolsTypeScript,
		Logger: slog.New(slog.DiscardHandler), OnOutcome: func(_ context.Context, r idempotency.Report) { lastID = r.ID }})
	if err != nil {
		t.Fatal(err)
	}
	type req struct {
		Key string `json:"idempotency_key"`
	}
	runs := 0
	h := idempotency.WrapJSON(g, idempotency.BodyField("idempotency_key"), func(context.Context, req, events.SQSMessage) (int, error) {
		runs++
		return runs, nil
	}, idempotency.WithPayload(jmespath.MustCompile(`powertools_json(body).payload`).Selector()))
	for _, body := range []string{`{"idempotency_key":"k"}`, `{"idempotency_key":"k","payload":null}`} {
		if v, err := h(context.Background(), events.SQSMessage{MessageId: "m-1", Body: body}); err != nil || v != 1 {
			t.Fatalf("%s: %d, %v; want the first run's result", body, v, err)
		}
	}
	if rec, _ := store.Get(lastID); rec.Validation != "N6YlnMDB2uKZp4Zkid/wvQ==" {
		t.Errorf("validation hash %q, want Powertools TypeScript's of null", rec.Validation)
	}
	if _, err := h(context.Background(), events.SQSMessage{MessageId: "m-2", Body: `{"idempotency_key":"k","payload":""}`}); !errors.Is(err, idempotency.ErrPayloadMismatch) {
		t.Errorf(`payload "": %v, want ErrPayloadMismatch`, err)
	}
}

// TestPayloadFuncNoKey: a payload function of the caller's own that
// returns ErrNoKey still fails the input with a *KeyError: only the
// selections the package's selectors take are payloads when no key.
func TestPayloadFuncNoKey(t *testing.T) {
	g, err := idempotency.New(idempotency.Config{Store: memstore.New(), Namespace: "ns", Logger: slog.New(slog.DiscardHandler)})
	if err != nil {
		t.Fatal(err)
	}
	none := idempotency.SelectorFunc(func(events.SQSMessage) (idempotency.Selection, error) {
		return idempotency.Selection{}, idempotency.ErrNoKey
	})
	h := idempotency.Wrap(g, idempotency.BodyField("idempotency_key"), func(context.Context, events.SQSMessage) (int, error) { return 1, nil }, idempotency.WithPayload(none))
	_, err = h(context.Background(), msg(`{"idempotency_key":"k"}`))
	var ke *idempotency.KeyError
	if !errors.As(err, &ke) || !errors.Is(err, idempotency.ErrNoKey) || !strings.Contains(err.Error(), "payload for validation") {
		t.Errorf("%v, want a *KeyError for the payload", err)
	}
}
