package jsonkey_test

import (
	"bytes"
	"encoding/json"
	"errors"
	"strings"
	"testing"

	"github.com/sqsonce/sqsonce/internal/jsonkey"
)

// TestCheck: each rule refuses what it names, at the offset where the text
// breaks it, and text that keeps them all passes.
func TestCheck(t *testing.T) {
	for _, tc := range []struct {
		text   string
		kind   error // nil: accepted
		offset int
	}{
		{`{"a":[1,2.5,{"b":null}],"c":"\ud83d\ude00 \u00e9 é"}`, nil, 0},
		{` "x" `, nil, 0},
		{`{"a":1,"A":2,"\u0061b":3,"ab ":4}`, nil, 0}, // names differing in case or space are distinct
		{`{"a":1,"a":2}`, jsonkey.ErrDuplicateName, 7},
		{`{"a":1,"\u0061":2}`, jsonkey.ErrDuplicateName, 7}, // the same name, escaped
		{`{"x":{"a":1,"b":{"a":2},"a":3}}`, jsonkey.ErrDuplicateName, 24},
		{`"\ud800"`, jsonkey.ErrLoneSurrogate, 1},
		{`"\udc00\ud800"`, jsonkey.ErrLoneSurrogate, 1},
		{`"a\ud83d"`, jsonkey.ErrLoneSurrogate, 2},
		{`"\ud83d\u0041"`, jsonkey.ErrLoneSurrogate, 1},
		{`{"\ud800":1}`, jsonkey.ErrLoneSurrogate, 2},
		{"\"\xff\"", jsonkey.ErrInvalidUTF8, 1},
		{"\"\xed\xa0\x80\"", jsonkey.ErrInvalidUTF8, 1}, // a surrogate encoded in UTF-8
		{strings.Repeat("9", 100), nil, 0},
		{strings.Repeat("9", 101), jsonkey.ErrNumberTooLong, 0},
		{"[1," + strings.Repeat("9", 5000) + "]", jsonkey.ErrNumberTooLong, 3},
		{strings.Repeat("[", 10000) + strings.Repeat("]", 10000), nil, 0},
		{strings.Repeat("[", 10001) + strings.Repeat("]", 10001), jsonkey.ErrTooDeep, 10000},
		{`{"a":1,}`, jsonkey.ErrSyntax, 7},
		{`[1] [2]`, jsonkey.ErrSyntax, 4},
		{``, jsonkey.ErrSyntax, 0},
		{`01`, jsonkey.ErrSyntax, 1},
		{`"\x"`, jsonkey.ErrSyntax, 1},
	} {
		err := jsonkey.Check(tc.text)
		if tc.kind == nil {
			if err != nil {
				t.Errorf("Check(%.40q) = %v, want nil", tc.text, err)
			}
			continue
		}
		var e *jsonkey.Error
		if !errors.As(err, &e) || !errors.Is(err, tc.kind) || e.Offset != tc.offset {
			t.Errorf("Check(%.40q) = %v, want %v at byte %d", tc.text, err, tc.kind, tc.offset)
		}
		if err != nil && strings.Contains(err.Error(), "999") {
			t.Errorf("Check(%.40q) = %v: the error quotes the text", tc.text, err)
		}
	}
}

// TestDecode: text that keeps the rules decodes with numbers as spelled.
func TestDecode(t *testing.T) {
	v, err := jsonkey.Decode(`{"n":10.0,"s":"\ud83d\ude00","a":[null,true]}`)
	if err != nil {
		t.Fatal(err)
	}
	want := map[string]any{"n": json.Number("10.0"), "s": "😀", "a": []any{nil, true}}
	if got, _ := json.Marshal(v); !bytes.Equal(got, mustMarshal(want)) {
		t.Errorf("Decode = %s, want %s", got, mustMarshal(want))
	}
	if _, err := jsonkey.Decode(`{"a":"\ud800"}`); !errors.Is(err, jsonkey.ErrLoneSurrogate) {
		t.Errorf("Decode of a lone surrogate: %v, want ErrLoneSurrogate", err)
	}
}

func mustMarshal(v any) []byte {
	b, err := json.Marshal(v)
	if err != nil {
		panic(err)
	}
	return b
}

// TestSelect: a path reads the member it names, exactly, once.
func TestSelect(t *testing.T) {
	paths := [][]string{{"doc", "id"}, {"\ufffd"}, {"k"}}
	for _, tc := range []struct {
		text string
		want []string
		kind error
	}{
		{`{"doc":{"id":1},"k":"v"}`, []string{"1", "", `"v"`}, nil},
		{`{"doc":{"id":1},"doc":{}}`, nil, jsonkey.ErrDuplicateName},              // an earlier duplicate parent
		{`{"doc":{"id":1,"id":2}}`, nil, jsonkey.ErrDuplicateName},                // a duplicate on the path
		{`{"doc":{"id":1},"x":1,"x":2}`, []string{"1", "", ""}, nil},              // off the paths: no rule but syntax
		{`{"\ud800x":1,"x":"\udfff"}`, []string{"", "", ""}, nil},                 // a lone surrogate is not U+FFFD
		{`{"\ud800":1}`, nil, jsonkey.ErrLoneSurrogate},                           // nor read as it: refused
		{`{"\ufffd":2,"doc":{"id":[1,"\ud800"]}}`, nil, jsonkey.ErrLoneSurrogate}, // a selected value keeps the rules
		{`{"doc":1,"k":[` + strings.Repeat("1", 200) + `]}`, nil, jsonkey.ErrNumberTooLong},
		{`{"doc":"x","n":` + strings.Repeat("1", 200) + `}`, []string{"", "", ""}, nil},
		{`{"doc":{"id":1}`, nil, jsonkey.ErrSyntax},
	} {
		got, err := jsonkey.Select(tc.text, paths)
		if tc.kind != nil {
			if !errors.Is(err, tc.kind) {
				t.Errorf("Select(%.60s) = %q, %v; want %v", tc.text, got, err, tc.kind)
			}
			continue
		}
		if err != nil || strings.Join(got, "|") != strings.Join(tc.want, "|") {
			t.Errorf("Select(%.60s) = %q, %v; want %q", tc.text, got, err, tc.want)
		}
	}
}
