package idempotency_test

import (
	"context"
	"encoding/json"
	"errors"
	"log/slog"
	"strings"
	"testing"

	"github.com/aws/aws-lambda-go/events"

	"github.com/sqsonce/sqsonce/middleware/idempotency"
	"github.com/sqsonce/sqsonce/middleware/idempotency/memstore"
)

// The tests of this file each pin a finding of a review (issues 15 and 20):
// each failed before its fix.

// typedID runs one body through WrapJSON with body's settings in format f
// and returns the record id the guard reported, or the error.
func typedID[Req any](t *testing.T, f idempotency.Format, body jsonBody[Req], msg string) (string, error) {
	t.Helper()
	var id string
	g, err := idempotency.New(idempotency.Config{Store: memstore.New(), Namespace: "ns", Format: f,
		Logger:    slog.New(slog.DiscardHandler),
		OnOutcome: func(_ context.Context, ev idempotency.Report) { id = ev.ID }})
	if err != nil {
		t.Fatal(err)
	}
	ran := false
	_, err = wrapJSON(g, body, func(context.Context, Req, events.SQSMessage) (int, error) { ran = true; return 1, nil })(
		t.Context(), events.SQSMessage{MessageId: "m-1", Body: msg})
	if err != nil {
		if ran {
			t.Errorf("%s: the operation ran, then the call failed: %v", msg, err)
		}
		return "", err
	}
	return id, nil
}

// fieldID is the record id Wrap(BodyField(path...)) gives msg in format f.
func fieldID(t *testing.T, f idempotency.Format, msg string, path ...string) (string, error) {
	t.Helper()
	g, err := idempotency.New(idempotency.Config{Store: memstore.New(), Namespace: "ns", Format: f})
	if err != nil {
		t.Fatal(err)
	}
	k, err := idempotency.Select(idempotency.BodyField(path[0], path[1:]...), events.SQSMessage{MessageId: "m-1", Body: msg})
	if err != nil {
		return "", err
	}
	return g.ID(k)
}

var allFormats = []idempotency.Format{idempotency.FormatNative, idempotency.FormatPowertoolsPython, idempotency.FormatPowertoolsTypeScript}

// TestBodyFieldDuplicateParent (issue 20): BodyField("doc", "id") took the
// id from an earlier duplicate of its parent, where every parser keeps the
// last; a member on the path named twice is now refused.
func TestBodyFieldDuplicateParent(t *testing.T) {
	for _, body := range []string{
		`{"doc":{"id":1},"doc":{}}`,
		`{"doc":{"id":1},"doc":{"id":2}}`,
		`{"doc":{"id":1,"id":2}}`,
		`{"doc":{"id":1},"\u0064oc":{}}`, // the same name, escaped
	} {
		id, err := fieldID(t, idempotency.FormatNative, body, "doc", "id")
		var ke *idempotency.KeyError
		if err == nil || !errors.As(err, &ke) || !strings.Contains(err.Error(), "twice") {
			t.Errorf("%s: id %q, %v; want a *KeyError: a member named twice", body, id, err)
		}
	}
	// Off the path, duplicates are no part of the key.
	if _, err := fieldID(t, idempotency.FormatNative, `{"doc":{"id":1},"x":1,"x":2}`, "doc", "id"); err != nil {
		t.Errorf("a duplicate off the path: %v", err)
	}
}

// TestBodyFieldLoneSurrogateName (issue 20): member names were matched
// through encoding/json, which reads "\ud800" as U+FFFD. Such a name
// matches no field now, and one that would have matched is refused (not
// skipped, which would give FirstOf's next source, another key).
func TestBodyFieldLoneSurrogateName(t *testing.T) {
	for _, name := range []string{"\ufffd", "\ufffdx"} {
		body := `{"\ud800` + strings.TrimPrefix(name, "\ufffd") + `":"a"}`
		id, err := fieldID(t, idempotency.FormatNative, body, name)
		var ke *idempotency.KeyError
		if !errors.As(err, &ke) || errors.Is(err, idempotency.ErrNoKey) || !strings.Contains(err.Error(), "unpaired surrogate") {
			t.Errorf("field %q of %s: id %q, %v; want it refused", name, body, id, err)
		}
	}
	if _, err := fieldID(t, idempotency.FormatNative, `{"\ud800x":"a","k":1}`, "k"); err != nil {
		t.Errorf("a lone surrogate in a name off the path: %v", err)
	}
	if _, err := fieldID(t, idempotency.FormatNative, `{"\ufffd":"a"}`, "\ufffd"); err != nil {
		t.Errorf("U+FFFD itself: %v", err)
	}
}

// TestLoneSurrogateRefusedInEveryFormat (issue 15 #7 and #15): the
// TypeScript format sorted keys holding lone surrogates as U+FFFD (ids
// other than Powertools'), and the native format refused a lone surrogate
// with jcs's "Unexpected EOF reached". Every format refuses it now, saying
// so.
func TestLoneSurrogateRefusedInEveryFormat(t *testing.T) {
	for _, value := range []string{`"\ud800"`, `"a\udfff"`, `{"\ud800":1,"\ufffd":2}`, `{"\udbff":1,"a":2}`, `["\ud83d"]`} {
		for _, f := range allFormats {
			h, err := f.Hash(idempotency.Selection{Selector: "s", Value: []byte(value)})
			if err == nil || !strings.Contains(err.Error(), "unpaired surrogate") {
				t.Errorf("%v of %s = %q, %v; want a refusal naming the unpaired surrogate", f, value, h, err)
			}
		}
	}
}

type caseReq struct {
	ID    string `json:"id"`
	S     string `json:"s"`
	K     string `json:"k"`
	Other int    `json:"other"`
}

// TestWrapJSONCaseOnlyMembers (issue 20): encoding/json fills a field from
// a member whose name differs only in case (ID, Id, ſ for s, K for k), the
// last one winning, where Wrap(BodyField) and both runtimes see no such
// field. Such a body is refused now.
func TestWrapJSONCaseOnlyMembers(t *testing.T) {
	key := idempotency.BodyField
	for _, tc := range []struct{ field, body string }{
		{"id", `{"Id":"x"}`},
		{"id", `{"ID":"x"}`},
		{"id", `{"id":"a","ID":"b"}`},
		{"s", `{"ſ":"x"}`},
		{"k", `{"\u212a":"x"}`},
		{"id", `{"id":"x","OTHER":1}`}, // a case-only match of a field that is not the key
	} {
		id, err := typedID(t, idempotency.FormatNative, jsonBody[caseReq]{Key: key(tc.field)}, tc.body)
		var be *idempotency.BodyError
		if !errors.As(err, &be) || !strings.Contains(err.Error(), "letter case") {
			t.Errorf("%s: id %q, %v; want a *BodyError naming the case-only match", tc.body, id, err)
		}
	}
	if _, err := typedID(t, idempotency.FormatNative, jsonBody[caseReq]{Key: key("id")}, `{"id":"x","other":1}`); err != nil {
		t.Errorf("exact names: %v", err)
	}
}

type numberReq struct {
	Key json.Number `json:"key"`
}

// TestWrapJSONNumberField (issue 20): an absent json.Number field encoded
// as 0, so every message without the key shared one record (fail-open),
// and a JSON string "1" decoded as the number 1.
func TestWrapJSONNumberField(t *testing.T) {
	body := jsonBody[numberReq]{Key: idempotency.BodyField("key")}
	own := jsonBody[numberReq]{KeyFunc: func(q numberReq) (idempotency.Selection, error) { return idempotency.SelectionOf("mine", q) }}
	for _, b := range []jsonBody[numberReq]{body, own} {
		if id, err := typedID(t, idempotency.FormatNative, b, `{"other":1}`); !errors.Is(err, idempotency.ErrNoKey) {
			t.Errorf("no key field: id %q, %v; want ErrNoKey", id, err)
		}
		var be *idempotency.BodyError
		if id, err := typedID(t, idempotency.FormatNative, b, `{"key":"1"}`); !errors.As(err, &be) {
			t.Errorf(`"1" for a json.Number: id %q, %v; want a *BodyError`, id, err)
		}
	}
	a, errA := typedID(t, idempotency.FormatNative, body, `{"key":10}`)
	b, errB := fieldID(t, idempotency.FormatNative, `{"key":10}`, "key")
	if errA != nil || errB != nil || a != b {
		t.Errorf("a number: WrapJSON %q, %v; BodyField %q, %v; want one id", a, errA, b, errB)
	}
}

type anyReq struct {
	Key  any            `json:"key"`
	Meta map[string]any `json:"meta"`
	F    float64        `json:"f"`
	F32  float32        `json:"f32"`
	S    float64        `json:"s,string"`
}

// TestWrapJSONLossyNumbers (issue 15 #6, issue 20): numbers decoded into
// float64, float32 or any rounded silently (0.10000000000000000001 got
// 0.1's record, 2^53+1 merged with 2^53, numbers over 100 characters were
// accepted), and 10.0 in a float got 10's record in the Python format.
func TestWrapJSONLossyNumbers(t *testing.T) {
	bodyKey := jsonBody[anyReq]{Key: idempotency.BodyField("key")}
	whole := jsonBody[anyReq]{KeyFunc: func(q anyReq) (idempotency.Selection, error) { return idempotency.SelectionOf("mine", q) }}
	for _, body := range []string{
		`{"key":9007199254740993}`,
		`{"key":1,"meta":{"n":[9007199254740993]}}`,
		`{"key":1,"f":0.10000000000000000001}`,
		`{"key":1,"f32":16777217}`,
		`{"key":1,"s":"0.10000000000000000001"}`,
		`{"key":1,"f":1e400}`,
		`{"key":1,"meta":{"n":` + strings.Repeat("1", 101) + `}}`,
	} {
		for _, b := range []jsonBody[anyReq]{bodyKey, whole} {
			var be *idempotency.BodyError
			if id, err := typedID(t, idempotency.FormatPowertoolsPython, b, body); !errors.As(err, &be) {
				t.Errorf("%s: id %q, %v; want a *BodyError", body, id, err)
			}
		}
	}
	for _, f := range allFormats {
		for _, body := range []string{`{"key":10}`, `{"key":10.0}`, `{"key":0.5}`, `{"key":1e-7}`, `{"key":{"a":[1.50,-0.0]}}`} {
			// WrapJSON's id is BodyField's, or the message is refused: never
			// another request's id.
			id, err := typedID(t, f, bodyKey, body)
			want, werr := fieldID(t, f, body, "key")
			if werr != nil {
				t.Fatal(werr)
			}
			if err == nil && id != want {
				t.Errorf("%v, %s: WrapJSON gives %s, BodyField %s", f, body, id, want)
			}
			if err != nil && f != idempotency.FormatPowertoolsPython {
				t.Errorf("%v, %s: %v (only the Python format tells 10.0 from 10)", f, body, err)
			}
		}
	}
}

// TestSelectionOfEmptyNumber (issue 20): SelectionOf (KeyOf then) of an empty
// json.Number, an absent field, gave the key 0.
func TestSelectionOfEmptyNumber(t *testing.T) {
	for _, v := range []any{json.Number(""), struct{ N json.Number }{}, []any{json.Number("")}, map[string]*json.Number{"n": new(json.Number)}} {
		if k, err := idempotency.SelectionOf("s", v); !errors.Is(err, idempotency.ErrNoKey) {
			t.Errorf("SelectionOf(%#v) = %s, %v; want ErrNoKey", v, k.Value, err)
		}
	}
	omitted := struct {
		N json.Number `json:"n,omitempty"`
		M json.Number `json:"m"`
	}{M: "0"}
	if k, err := idempotency.SelectionOf("s", omitted); err != nil || string(k.Value) != `{"m":0}` {
		t.Errorf("SelectionOf of an omitted empty json.Number = %s, %v", k.Value, err)
	}
}

// TestTypeScriptKeySortMatchesRuntime (issue 20): the TypeScript format
// lower-cased keys for its sort with an incomplete final-sigma rule (ª and
// Ⓐ are cased, ‘ and · are skipped), so objects with such keys got other
// ids than Powertools TypeScript gives them. An object whose order that
// rule got wrong is now refused (its id is not changed), as is one whose
// keys hold characters whose case differs between Unicode versions
// (U+0295; U+16EA0, new in 17.0); every other object's id is the
// runtime's.
func TestTypeScriptKeySortMatchesRuntime(t *testing.T) {
	node, dir := powertoolsNode(t)
	matching := []string{
		`{"aΣ·":1,"aς·":2}`, `{"ʰΣ":1,"ʰς":2}`, `{"ªΣ":1}`, `{"ªΣ":1,"b":2}`, `{"Σ":1,"σ":2,"ς":3}`, `{"ΑΣ":1,"ας":2,"ασ":3}`, `{"İ":1,"i̇":2,"i":3}`, `{"\u212a":1,"k":2,"K":3}`, `{"\u017f":1,"s":2,"S":3}`,
	}
	refused := []string{`{"ʕ":1,"a":2}`, `{"` + "\U00016EA0" + `":1,"a":2}`,
		`{"ªΣ":1,"ªς":2}`, `{"ⒶΣ":1,"Ⓐς":2}`, `{"aΣ‘b":1,"aς‘b":2}`}
	answers := runPeer(t, dir, matching, node, "--input-type=module", "-e", nodePeer)
	for i, v := range matching {
		want, _, _ := strings.Cut(answers[i], " ")
		got, err := idempotency.FormatPowertoolsTypeScript.Hash(idempotency.Selection{Selector: "s", Value: []byte(v)})
		if err != nil || "fn#"+got != want {
			t.Errorf("%s: %s, %v; Powertools TypeScript says %s", v, got, err, want)
		}
	}
	for _, v := range refused {
		if got, err := idempotency.FormatPowertoolsTypeScript.Hash(idempotency.Selection{Selector: "s", Value: []byte(v)}); err == nil {
			t.Errorf("%s: %s; want it refused (its keys sort otherwise in other Unicode versions)", v, got)
		}
	}
}
