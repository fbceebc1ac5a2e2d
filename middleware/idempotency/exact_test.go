package idempotency_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"reflect"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/aws/aws-lambda-go/events"

	"github.com/sqsonce/sqsonce/middleware/idempotency"
	"github.com/sqsonce/sqsonce/middleware/idempotency/memstore"
)

// refuses decodes itself and refuses a value that starts with "bad",
// quoting it, as a type's own decoder may.
type refuses struct{}

func (*refuses) UnmarshalJSON(b []byte) error {
	if strings.HasPrefix(string(b), `"bad`) {
		return fmt.Errorf("refused %s", b)
	}
	return nil
}

// refusesText is refuses as an encoding.TextUnmarshaler.
type refusesText struct{}

func (*refusesText) UnmarshalText(b []byte) error {
	if strings.HasPrefix(string(b), "bad") {
		return fmt.Errorf("refused %s", b)
	}
	return nil
}

var refusals atomic.Int64

// refusesAnew refuses every value, each time with another message.
type refusesAnew struct{}

func (*refusesAnew) UnmarshalJSON([]byte) error {
	return fmt.Errorf("refusal %d", refusals.Add(1))
}

type placeItem struct {
	Price refuses `json:"price"`
}

type placeReq struct {
	Key   string               `json:"key"`
	A     refuses              `json:"a"`
	Items []placeItem          `json:"items"`
	M     map[string]placeItem `json:"m"`
	T     refusesText          `json:"t"`
	P     *refuses             `json:"p"`
	Anew  *refusesAnew         `json:"anew"`
}

// placeRoot decodes itself: the body as a whole refuses.
type placeRoot struct{ refuses }

// TestBodyErrorNamesTheFieldThatRefused: when a value that decodes itself
// refuses, WrapJSON's *BodyError names that value's path in the request
// type (a field, "[]" for an element, "{}" for a map value), the first
// that refuses with the decoder's error and none that took its value, or
// "(the body)" when the request type itself refused, or "a value" when no
// value alone refuses with that error; never the value (gremlins' exact.go
// mutants in placeError, walker.at and walker.value).
func TestBodyErrorNamesTheFieldThatRefused(t *testing.T) {
	g, err := idempotency.New(idempotency.Config{Store: memstore.New(), Namespace: "n", Logger: slog.New(slog.DiscardHandler)})
	if err != nil {
		t.Fatal(err)
	}
	h := wrapJSON(g, jsonBody[placeReq]{Key: idempotency.BodyField("key")}, func(context.Context, placeReq, events.SQSMessage) (int, error) { return 1, nil })
	for _, tc := range []struct {
		body, want string
	}{
		{`{"key":"k","a":"bad-secret-1"}`, "field a does not decode"},
		{`{"key":"k","items":[{"price":"ok"},{"price":"bad-secret-2"}]}`, "field items[].price does not decode"},
		{`{"key":"k","m":{"x":{"price":"bad-secret-3"}}}`, "field m{}.price does not decode"},
		{`{"key":"k","a":"ok","items":[{"price":"bad-secret-4"}]}`, "field items[].price does not decode"},
		{`{"key":"k","t":"bad-secret-5"}`, "field t does not decode"},
		{`{"key":"k","p":"bad-secret-6"}`, "field p does not decode"},
		{`{"key":"k","anew":"secret-7"}`, ": a value does not decode"},
	} {
		_, err := h(t.Context(), events.SQSMessage{MessageId: "m-1", Body: tc.body})
		var be *idempotency.BodyError
		if !errors.As(err, &be) || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%s: %v; want a *BodyError with %q", tc.body, err, tc.want)
			continue
		}
		if strings.Contains(err.Error(), "secret") {
			t.Errorf("%s: %v quotes the value", tc.body, err)
		}
	}

	root := wrapJSON(g, jsonBody[placeRoot]{KeyFunc: func(placeRoot) (idempotency.Selection, error) {
		return idempotency.Raw([]byte(`"k"`)), nil
	}}, func(context.Context, placeRoot, events.SQSMessage) (int, error) { return 1, nil })
	_, err = root(t.Context(), events.SQSMessage{MessageId: "m-2", Body: `"bad-secret-8"`})
	if err == nil || !strings.Contains(err.Error(), "field (the body) does not decode") || strings.Contains(err.Error(), "secret") {
		t.Errorf("a request type that refuses: %v; want the body named, not quoted", err)
	}
	if _, err := root(t.Context(), events.SQSMessage{MessageId: "m-3", Body: `"fine"`}); err != nil {
		t.Errorf("a request type that takes its body: %v", err)
	}
}

type quotedKinds struct {
	Key string             `json:"key"`
	B   bool               `json:"b,string"`
	N   int                `json:"n,string"`
	F   float64            `json:"f,string"`
	F32 float32            `json:"f32,string"`
	Raw []byte             `json:"raw"`
	Any any                `json:"any"`
	Fs  []float64          `json:"fs"`
	Arr [2]float64         `json:"arr"`
	FM  map[string]float64 `json:"fm"`
}

// TestWrapJSONQuotedKindsBase64AndAny: ",string" bool and number fields
// take what encoding/json takes (true, false, an integer with or without
// a minus, a float the field holds as spelled) and refuse the rest; a []byte
// takes the canonical base64 spelling (or encoding/json's array of
// numbers) and no other; numbers inside an any, however
// deep, and in a slice, an array or a map of float64s, must be float64s
// as spelled (gremlins' exact.go mutants in quotedValue,
// the []byte case, walker.any and walker.elements).
func TestWrapJSONQuotedKindsBase64AndAny(t *testing.T) {
	takesLikeEncodingJSON[quotedKinds](t, []bodyCase{
		{`{"key":"k","b":"true"}`, true},
		{`{"key":"k","b":"false"}`, true},
		{`{"key":"k","b":"null"}`, true},
		{`{"key":"k","b":"1"}`, false},
		{`{"key":"k","b":true}`, false},
		{`{"key":"k","n":"0"}`, true},
		{`{"key":"k","n":"9"}`, true},
		{`{"key":"k","n":"-5"}`, true},
		{`{"key":"k","n":"12"}`, true},
		{`{"key":"k","n":"9007199254740993"}`, true},
		{`{"key":"k","f32":"0.5"}`, true},
		{`{"key":"k","f32":"16777217"}`, false},
		{`{"key":"k","n":"+5"}`, false},
		{`{"key":"k","n":"\"5\""}`, false},
		{`{"key":"k","n":"true"}`, false},
		{`{"key":"k","f":"1.5"}`, true},
		{`{"key":"k","f":"-0.25"}`, true},
		{`{"key":"k","f":"0.1"}`, true},
		{`{"key":"k","f":"9007199254740993"}`, false},
		{`{"key":"k","raw":"AQID"}`, true},
		{`{"key":"k","raw":"AQI="}`, true},
		{`{"key":"k","raw":"AQJ="}`, false},
		{`{"key":"k","raw":"AQ\nID"}`, false},
		{`{"key":"k","raw":[1,2]}`, true},
		{`{"key":"k","any":{"a":[1,"x",true,null,{"b":2.5}]}}`, true},
		{`{"key":"k","any":{"a":[1,{"b":9007199254740993}]}}`, false},
		{`{"key":"k","any":[9007199254740993]}`, false},
		{`{"key":"k","any":{"b":9007199254740993}}`, false},
		{`{"key":"k","any":9007199254740993}`, false},
		{`{"key":"k","any":{"a":1,"b":9007199254740993}}`, false},
		{`{"key":"k","any":[1,9007199254740993]}`, false},
		{`{"key":"k","fs":[1,2.5]}`, true},
		{`{"key":"k","fs":[1,9007199254740993]}`, false},
		{`{"key":"k","arr":[0.5,-3]}`, true},
		{`{"key":"k","arr":[0.5,9007199254740993]}`, false},
		{`{"key":"k","fm":{"a":1,"b":2}}`, true},
		{`{"key":"k","fm":{"a":1,"b":9007199254740993}}`, false},
	})
}

type quotedNumber struct {
	Key string      `json:"key"`
	Num json.Number `json:"num,string"`
}

// TestWrapJSONQuotedNumber: a ",string" json.Number takes a quoted number
// literal, as encoding/json does and as json.Marshal writes it, and refuses
// a quoted JSON string ("\"12\""), which encoding/json reads as the
// number inside: two bodies would decode alike. Before, the quoted literal
// ("12") was refused as "not a quoted string" and "\"12\"" taken.
func TestWrapJSONQuotedNumber(t *testing.T) {
	takesLikeEncodingJSON[quotedNumber](t, []bodyCase{
		{`{"key":"k","num":"12"}`, true},
		{`{"key":"k","num":"-1.5e3"}`, true},
		{`{"key":"k","num":"9007199254740993"}`, true},
		{`{"key":"k","num":"1E+400"}`, true},
		{`{"key":"k","num":"null"}`, true},
		{`{"key":"k","num":"\"12\""}`, false},
		{`{"key":"k","num":""}`, false},
		{`{"key":"k","num":" 12"}`, false},
		{`{"key":"k","num":"true"}`, false},
		{`{"key":"k","num":12}`, false},
	})
}

// Amount is embedded below as a named non-struct: encoding/json reads it as
// a field named "Amount".
type Amount float64

type promotedInner struct {
	F float64 `json:"f"`
}

type PromotedPtr struct {
	G float64 `json:"g"`
}

type promotedReq struct {
	Key string `json:"key"`
	promotedInner
	*PromotedPtr
	Amount
	AZ    string `json:"az"`
	Kanji string `json:"名前"`
}

// TestWrapJSONPromotedFields: the fields encoding/json fills are checked
// wherever they come from: an unexported embedded struct's and an embedded
// pointer's promoted fields, an embedded non-struct type read under its
// type's name; a member that names a field only by the letter case of an
// "a" or a "z" is refused; a name whose letters have no case (名前) still
// matches only itself (gremlins' exact.go mutants in addFields and
// foldName).
func TestWrapJSONPromotedFields(t *testing.T) {
	takesLikeEncodingJSON[promotedReq](t, []bodyCase{
		{`{"key":"k","f":1.5,"g":2.5,"Amount":3.5,"az":"x","名前":"y"}`, true},
		{`{"key":"k","f":9007199254740993}`, false},
		{`{"key":"k","g":9007199254740993}`, false},
		{`{"key":"k","Amount":9007199254740993}`, false},
		{`{"key":"k","F":1}`, false},
		{`{"key":"k","G":1}`, false},
		{`{"key":"k","amount":1}`, false},
		{`{"key":"k","Az":"x"}`, false},
		{`{"key":"k","aZ":"x"}`, false},
		{`{"key":"k","名前x":"y"}`, true},
	})
}

// bodyCase is a body and whether WrapJSON must take it.
type bodyCase struct {
	body string
	ok   bool
}

// takesLikeEncodingJSON runs each body through WrapJSON (key "key", a fresh
// memstore each): one it must take must be taken and decode as
// encoding/json decodes it; one it must refuse must fail with a
// *BodyError.
func takesLikeEncodingJSON[Req any](t *testing.T, cases []bodyCase) {
	t.Helper()
	for i, tc := range cases {
		g, err := idempotency.New(idempotency.Config{Store: memstore.New(), Namespace: "n", Logger: slog.New(slog.DiscardHandler)})
		if err != nil {
			t.Fatal(err)
		}
		var got Req
		_, err = wrapJSON(g, jsonBody[Req]{Key: idempotency.BodyField("key")}, func(_ context.Context, q Req, _ events.SQSMessage) (int, error) {
			got = q
			return 1, nil
		})(t.Context(), events.SQSMessage{MessageId: fmt.Sprintf("m-%d", i), Body: tc.body})
		var want Req
		jsonErr := json.Unmarshal([]byte(tc.body), &want)
		var be *idempotency.BodyError
		switch {
		case tc.ok && jsonErr != nil:
			t.Errorf("%s: encoding/json refuses it (%v); the case is wrong", tc.body, jsonErr)
		case tc.ok && err != nil:
			t.Errorf("%s: %v, want it taken", tc.body, err)
		case tc.ok && !reflect.DeepEqual(got, want):
			t.Errorf("%s: decoded %+v, encoding/json %+v", tc.body, got, want)
		case !tc.ok && !errors.As(err, &be):
			t.Errorf("%s: %v, want a *BodyError", tc.body, err)
		}
	}
}
