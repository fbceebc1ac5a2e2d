package jsonkey_test

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"reflect"
	"strings"
	"testing"

	"github.com/sqsonce/sqsonce/internal/jsonkey"
	"github.com/sqsonce/sqsonce/internal/jsonkey/jsongen"
)

// issue25 are the spellings of issue 25's finding 1, each with its compact
// spelling: white space before a colon, alone and in pretty printers'
// layouts, as key material and beside it.
var issue25 = []struct{ spelled, compact string }{
	{`{"order_id" : "o-2"}`, `{"order_id":"o-2"}`},
	{"{\n  \"order_id\" : \"o-3\"\n}", `{"order_id":"o-3"}`},
	{`{"doc" : {"id" : 1}}`, `{"doc":{"id":1}}`},
	{`{"id" : 1}`, `{"id":1}`},
	{`{"a" : {"x" : 1}, "b" : 2}`, `{"a":{"x":1},"b":2}`},
	{`{"x" : 1}`, `{"x":1}`},
	{`{"a" : 1, "b" : 2}`, `{"a":1,"b":2}`},
	{`{"a":[1 ,2], "b" :3 }`, `{"a":[1,2],"b":3}`},
	{"{\r\n\t\"a\"\t:\r\n[ ]\n,\"b\" :{ } }", `{"a":[],"b":{}}`},
	{`{"document" : {"id" : "4471", "version" : "9"}, "parameters" : {"temperature" : 0.70}}`, `{"document":{"id":"4471","version":"9"},"parameters":{"temperature":0.70}}`},
}

// spelling is a format's spelling of JSON, and the rules it adds to
// Check's.
type spelling struct {
	name  string
	write func(io.Writer, string) error
	own   []error
}

// writers are the spellings.
var writers = []spelling{
	{"canonical", jsonkey.WriteCanonical, []error{jsonkey.ErrInexactNumber}},
	{"python", jsonkey.WritePython, nil},
	{"typescript", jsonkey.WriteTypeScript, []error{jsonkey.ErrCaseVersioned, jsonkey.ErrSortChanged}},
}

func spell(write func(io.Writer, string) error, text string) (string, error) {
	var b bytes.Buffer
	err := write(&b, text)
	return b.String(), err
}

// TestIssue25Spellings (issue 25, finding 1): JSON with white space before
// a colon is indexed, decoded and spelled as its compact spelling is; on
// 2e43541, Index and every spelling panicked on it (index out of range)
// or read ":" as a number.
func TestIssue25Spellings(t *testing.T) {
	for _, tc := range issue25 {
		func() {
			defer func() {
				if p := recover(); p != nil {
					t.Errorf("%q: panic: %v", tc.spelled, p)
				}
			}()
			tree, err := jsonkey.Index(tc.spelled)
			if err != nil {
				t.Errorf("Index(%q): %v", tc.spelled, err)
				return
			}
			want, _ := refTokens(tc.compact)
			if got := treeTokens(tree.Root(), nil); !reflect.DeepEqual(got, want) {
				t.Errorf("Index(%q) reads %q, want %q", tc.spelled, got, want)
			}
			for _, w := range writers {
				got, err := spell(w.write, tc.spelled)
				want, werr := spell(w.write, tc.compact)
				if err != nil || werr != nil || got != want {
					t.Errorf("%s(%q) = %q, %v; the compact spelling gives %q, %v", w.name, tc.spelled, got, err, want, werr)
				}
			}
			if got, want := mustDecode(t, tc.spelled), mustDecode(t, tc.compact); !reflect.DeepEqual(got, want) {
				t.Errorf("Decode(%q) = %v, want %v", tc.spelled, got, want)
			}
		}()
	}
}

func mustDecode(t *testing.T, text string) any {
	t.Helper()
	v, err := jsonkey.Decode(text)
	if err != nil {
		t.Fatalf("Decode(%q): %v", text, err)
	}
	return v
}

// refTokens is encoding/json's reading of text: its tokens, numbers as
// spelled, strings decoded.
func refTokens(text string) ([]string, error) {
	d := json.NewDecoder(strings.NewReader(text))
	d.UseNumber()
	var out []string
	for {
		tok, err := d.Token()
		if err == io.EOF {
			return out, nil
		}
		if err != nil {
			return nil, err
		}
		switch v := tok.(type) {
		case json.Delim:
			out = append(out, v.String())
		case string:
			out = append(out, "s"+v)
		case json.Number:
			out = append(out, "n"+string(v))
		default:
			out = append(out, fmt.Sprint(v)) // true, false, <nil>
		}
	}
}

// treeTokens is the index's reading of v, as refTokens writes it.
func treeTokens(v jsonkey.Node, out []string) []string {
	switch v.Kind() {
	case '{':
		out = append(out, "{")
		for name, m := range v.Members() {
			out = treeTokens(m, append(out, "s"+name))
		}
		return append(out, "}")
	case '[':
		out = append(out, "[")
		for e := range v.Elements() {
			out = treeTokens(e, out)
		}
		return append(out, "]")
	case '"':
		return append(out, "s"+v.Str())
	case 't':
		return append(out, "true")
	case 'f':
		return append(out, "false")
	case 'n':
		return append(out, "<nil>")
	}
	return append(out, "n"+v.Text())
}

// sameTokens reports whether two readings are the same, numbers compared
// by value.
func sameTokens(a, b []string) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		if a[i] != b[i] && !(a[i][0] == 'n' && b[i][0] == 'n' && sameJSON(a[i][1:], b[i][1:])) {
			return false
		}
	}
	return true
}

// checkNodes fails unless every value of the tree is the text at its
// offset, JSON without white space around it, kept by the rules.
func checkNodes(t *testing.T, text string, v jsonkey.Node) {
	t.Helper()
	s := v.Text()
	if !strings.HasPrefix(text[v.Offset():], s) || s != strings.TrimSpace(s) || jsonkey.Check(s) != nil {
		t.Fatalf("a node of %q is %q at %d", text, s, v.Offset())
	}
	switch v.Kind() {
	case '{':
		for _, m := range v.Members() {
			checkNodes(t, text, m)
		}
	case '[':
		for e := range v.Elements() {
			checkNodes(t, text, e)
		}
	}
}

// kindOf is the rule err names, nil for nil.
func kindOf(err error) error {
	var e *jsonkey.Error
	if errors.As(err, &e) {
		return e.Kind
	}
	for _, k := range []error{jsonkey.ErrInexactNumber, jsonkey.ErrCaseVersioned, jsonkey.ErrSortChanged} {
		if errors.Is(err, k) {
			return k
		}
	}
	return err
}

// spellingStyles are the styles of TestSpellingsKeepTheValue, each with
// the spellings that must not tell it from the compact one: member order
// changes the TypeScript spelling (names differing only in case stay in
// the order sent), a number's kind the Python one (1 is an int, 1.0 a
// float).
var spellingStyles = []struct {
	style                         jsongen.Style
	canonical, python, typescript bool
}{
	{jsongen.Style{Space: true}, true, true, true},
	{jsongen.Style{Escapes: true}, true, true, true},
	{jsongen.Style{Space: true, Escapes: true, Numbers: jsongen.SameClass}, true, true, true},
	{jsongen.Style{Space: true, Escapes: true, Numbers: jsongen.SameValue}, true, false, true},
	{jsongen.Everything, true, false, false},
	{jsongen.Style{Space: true, Escapes: true, Numbers: jsongen.SameClass, Reorder: true}, true, true, false},
}

// TestSpellingsKeepTheValue: every spelling of a generated value (white
// space everywhere RFC 8259 allows it, every escape, every number spelling
// of its value, any member order) is read by Check, Index, Decode and
// Select as its compact spelling is, and spelled alike in each format
// that does not tell the two apart; with defects (names twice, lone
// surrogates, long numbers), each is refused for the same rule.
func TestSpellingsKeepTheValue(t *testing.T) {
	g := jsongen.New(25)
	g.Defects = 20
	const n = 3000
	refused := 0
	for range n {
		v := g.Value()
		compact := jsongen.Compact(v)
		cerr := jsonkey.Check(compact)
		if cerr != nil {
			refused++
		}
		var ctree *jsonkey.Tree
		if cerr == nil {
			ctree, _ = jsonkey.Index(compact)
		}
		cvalues, cserr := jsonkey.Select(compact, selectPaths)
		for _, st := range spellingStyles {
			s := g.Spell(v, st.style)
			// The first rule broken is the same, unless the members moved.
			alike := func(err, cerr error) bool {
				return kindOf(err) == kindOf(cerr) || st.style.Reorder && err != nil && cerr != nil
			}
			err := jsonkey.Check(s)
			if !alike(err, cerr) {
				t.Fatalf("Check(%q) = %v; the compact %q gives %v", s, err, compact, cerr)
			}
			tree, ierr := jsonkey.Index(s)
			if !alike(ierr, cerr) {
				t.Fatalf("Index(%q) = %v; Check of the compact %q gives %v", s, ierr, compact, cerr)
			}
			if _, derr := jsonkey.Decode(s); !alike(derr, cerr) {
				t.Fatalf("Decode(%q) = %v; Check of the compact %q gives %v", s, derr, compact, cerr)
			}
			values, serr := jsonkey.Select(s, selectPaths)
			if !alike(serr, cserr) {
				t.Fatalf("Select(%q) = %v; the compact %q gives %v", s, serr, compact, cserr)
			}
			for i := range values {
				if !sameJSON(values[i], cvalues[i]) {
					t.Fatalf("Select(%q) %v = %q; the compact %q gives %q", s, selectPaths[i], values[i], compact, cvalues[i])
				}
			}
			if cerr != nil {
				continue
			}
			if !st.style.Reorder && !sameTokens(treeTokens(tree.Root(), nil), treeTokens(ctree.Root(), nil)) {
				t.Fatalf("Index(%q) reads %q; the compact %q reads %q", s, treeTokens(tree.Root(), nil), compact, treeTokens(ctree.Root(), nil))
			}
			checkNodes(t, s, tree.Root())
			if st.style.Numbers == jsongen.KeepNumbers && !st.style.Reorder && !jsonkey.Equal(s, compact) {
				t.Fatalf("Equal(%q, %q) is false", s, compact)
			}
			for _, w := range writers {
				if w.name == "canonical" && !st.canonical || w.name == "python" && !st.python || w.name == "typescript" && !st.typescript {
					continue
				}
				got, err := spell(w.write, s)
				want, werr := spell(w.write, compact)
				if st.style.Numbers == jsongen.SameValue && (errors.Is(err, jsonkey.ErrInexactNumber) || errors.Is(werr, jsonkey.ErrInexactNumber)) {
					continue // the native rule refuses an integer beyond 2^53 by its spelling: 1e21, not 1000000000000000000000
				}
				if kindOf(err) != kindOf(werr) || got != want {
					t.Fatalf("%s(%q) = %q, %v; the compact %q gives %q, %v", w.name, s, got, err, compact, want, werr)
				}
			}
		}
	}
	t.Logf("%d values (seed 25), %d spellings each; %d refused by the rules (defects), alike in every spelling", n, len(spellingStyles), refused)
}

var selectPaths = [][]string{{"a"}, {"a", "b"}, {"id"}, {""}, {"😀", "a"}}

// sameJSON reports whether JSON texts a and b ("" for none) are one
// value as encoding/json reads them, numbers compared by value.
func sameJSON(a, b string) bool {
	if a == "" || b == "" {
		return a == b
	}
	return sameValue(decodeAny(a), decodeAny(b))
}

func decodeAny(s string) any {
	d := json.NewDecoder(strings.NewReader(s))
	d.UseNumber()
	var v any
	if d.Decode(&v) != nil {
		return s // not JSON: compared as text
	}
	return v
}

func sameValue(a, b any) bool {
	switch a := a.(type) {
	case json.Number:
		b, ok := b.(json.Number)
		na, nb := jsongen.ParseNum(string(a)), jsongen.ParseNum(string(b))
		return ok && jsongen.Value{Kind: jsongen.Number, Num: na}.Equal(jsongen.Value{Kind: jsongen.Number, Num: nb})
	case []any:
		b, ok := b.([]any)
		if !ok || len(a) != len(b) {
			return false
		}
		for i := range a {
			if !sameValue(a[i], b[i]) {
				return false
			}
		}
		return true
	case map[string]any:
		b, ok := b.(map[string]any)
		if !ok || len(a) != len(b) {
			return false
		}
		for k, x := range a {
			if y, ok := b[k]; !ok || !sameValue(x, y) {
				return false
			}
		}
		return true
	}
	return a == b
}

// noPanicCorpus is text to read: the issue's spellings, generated values
// (with defects) in every style, the same damaged in every way, and every
// prefix of some.
func noPanicCorpus(n int) []string {
	g := jsongen.New(26)
	g.Defects = 30
	var out []string
	for _, tc := range issue25 {
		out = append(out, tc.spelled, tc.compact)
	}
	for range n {
		v := g.Value()
		s := g.Spell(v, jsongen.Everything)
		broken, _ := g.Break(s)
		out = append(out, s, broken, jsongen.Compact(v), g.Respace(jsongen.Compact(v)))
	}
	for _, s := range out[:40] {
		for i := range len(s) {
			out = append(out, s[:i], s[i:])
		}
	}
	return out
}

// entryPoints are the package's readers, each called with any text.
var entryPoints = []struct {
	name string
	run  func(text string)
}{
	{"Check", func(s string) { jsonkey.Check(s) }}, //nolint:errcheck
	{"Index", func(s string) {
		if t, err := jsonkey.Index(s); err == nil {
			walk(t.Root())
		}
	}},
	{"Decode", func(s string) { jsonkey.Decode(s) }}, //nolint:errcheck
	{"Select", func(s string) { jsonkey.Select(s, selectPaths) }},
	{"WriteCanonical", func(s string) { jsonkey.WriteCanonical(io.Discard, s) }},   //nolint:errcheck
	{"WritePython", func(s string) { jsonkey.WritePython(io.Discard, s) }},         //nolint:errcheck
	{"WriteTypeScript", func(s string) { jsonkey.WriteTypeScript(io.Discard, s) }}, //nolint:errcheck
	{"Unquote", func(s string) { jsonkey.Unquote(s) }},
	{"ExactNumber", func(s string) { jsonkey.ExactNumber(s); jsonkey.ExactNumber32(s) }}, //nolint:errcheck
	{"AppendPythonNumber", func(s string) { jsonkey.AppendPythonNumber(nil, s) }},
	{"AppendJSNumber", func(s string) { jsonkey.AppendJSNumber(nil, s) }},
	{"AppendString", func(s string) { jsonkey.AppendString(nil, s) }},
	{"CaseStable", func(s string) { jsonkey.CaseStable(s) }},
	{"Space", func(s string) { _ = jsonkey.Space(s, len(s)/2) }},
	{"Equal", func(s string) { jsonkey.Equal(s, s); jsonkey.Equal(s, s[:len(s)/2]); jsonkey.Equal(`"\u00e9"`, s) }},
}

// walk reads every part of every node of a tree.
func walk(v jsonkey.Node) {
	_, _, _ = v.Kind(), v.Text(), v.Offset()
	switch v.Kind() {
	case '"':
		_ = v.Str()
	case '{':
		for _, m := range v.Members() {
			walk(m)
		}
		v.Get("a", "b")
	case '[':
		for e := range v.Elements() {
			walk(e)
		}
	}
}

// TestNoPanic: no text makes any reader of the package panic: generated
// JSON in every spelling, damaged in every way, and the prefixes and
// suffixes of some.
func TestNoPanic(t *testing.T) {
	corpus := noPanicCorpus(1500)
	for _, e := range entryPoints {
		for _, s := range corpus {
			func() {
				defer func() {
					if p := recover(); p != nil {
						t.Errorf("%s(%q): panic: %v", e.name, s, p)
					}
				}()
				e.run(s)
			}()
		}
	}
	t.Logf("%d texts × %d readers", len(corpus), len(entryPoints))
}
