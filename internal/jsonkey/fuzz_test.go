package jsonkey_test

import (
	"bytes"
	"encoding/json"
	"errors"
	"reflect"
	"slices"
	"strings"
	"testing"
	"unicode/utf8"

	"github.com/sqsonce/sqsonce/internal/jsonkey"
	"github.com/sqsonce/sqsonce/internal/jsonkey/jsongen"
)

// FuzzRules checks the package's readers against each other and against
// encoding/json: nothing panics; text that keeps the rules is JSON,
// decodes, and indexes; the index finds the duplicate names the scanner
// finds; a spelling refuses only what Check refuses or its own rule; Select
// reads what the index reads; every spelling is the same twice.
func FuzzRules(f *testing.F) {
	for _, s := range []string{`{"a":1}`, `{"a":1,"a":2}`, `"\ud800"`, "\"\xff\"", `[1,2.5e-7,{"B":null,"b":"\u00e9"}]`,
		`{"a":{"b":[` + strings.Repeat("9", 101) + `]}}`, `{"ªΣ":1,"ªς":2}`, `{"` + strings.Repeat(`x":0,"`, 40) + `a":{"a":[]}}`,
		`{"__proto__":1,"__proto__":2}`, `{"a":1,"A":2,"a":3}`} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, text string) {
		err := jsonkey.Check(text)
		_, ierr := jsonkey.Index(text)
		if (err == nil) != (ierr == nil) {
			t.Fatalf("Check: %v; Index: %v", err, ierr)
		}
		if err == nil {
			if !json.Valid([]byte(text)) {
				t.Fatalf("Check accepts text that is not JSON")
			}
			if _, derr := jsonkey.Decode(text); derr != nil {
				t.Fatalf("Check accepts, Decode refuses: %v", derr)
			}
		}
		for _, w := range []struct {
			name  string
			write func(*bytes.Buffer, string) error
			own   []error // the rules the spelling adds
		}{
			{"python", func(b *bytes.Buffer, s string) error { return jsonkey.WritePython(b, s) }, nil},
			{"typescript", func(b *bytes.Buffer, s string) error { return jsonkey.WriteTypeScript(b, s) }, []error{jsonkey.ErrCaseVersioned, jsonkey.ErrSortChanged}},
			{"canonical", func(b *bytes.Buffer, s string) error { return jsonkey.WriteCanonical(b, s) }, []error{jsonkey.ErrInexactNumber}},
		} {
			var a, b bytes.Buffer
			werr := w.write(&a, text)
			if werr == nil && err != nil {
				t.Fatalf("%s spells text Check refuses (%v)", w.name, err)
			}
			if werr != nil && err == nil && !slices.ContainsFunc(w.own, func(e error) bool { return errors.Is(werr, e) }) {
				t.Fatalf("%s refuses text Check accepts: %v", w.name, werr)
			}
			if werr == nil {
				if err := w.write(&b, text); err != nil || !bytes.Equal(a.Bytes(), b.Bytes()) {
					t.Fatalf("%s spells one text two ways", w.name)
				}
			}
		}
		if err != nil {
			return
		}
		tree, _ := jsonkey.Index(text)
		values, serr := jsonkey.Select(text, [][]string{{"a"}, {"a", "b"}})
		if serr != nil {
			t.Fatalf("Select refuses text Check accepts: %v", serr)
		}
		for i, path := range [][]string{{"a"}, {"a", "b"}} {
			want := ""
			if v, ok := tree.Root().Get(path...); ok {
				want = v.Text()
			}
			if values[i] != want {
				t.Fatalf("Select %v = %q, the index has %q", path, values[i], want)
			}
		}
	})
}

// fuzzSeeds seed each reader's fuzzer: the issue's spellings, and
// generated values, with defects, in every style (white space at every
// place RFC 8259 allows it, in pretty printers' layouts and random runs;
// every escape; every number spelling), whole and damaged.
func fuzzSeeds(f *testing.F) {
	for _, tc := range issue25 {
		f.Add(tc.spelled)
	}
	g := jsongen.New(27)
	g.Defects = 30
	for range 60 {
		v := g.Value()
		s := g.Spell(v, jsongen.Everything)
		broken, _ := g.Break(s)
		f.Add(s)
		f.Add(broken)
		f.Add(g.Spell(jsongen.Obj("a", v, "b", jsongen.Obj("b", v)), jsongen.Style{Space: true, Escapes: true}))
	}
}

// isIJSONKind reports whether err names a rule that JSON text may break.
func isIJSONKind(err error) bool {
	for _, k := range []error{jsonkey.ErrTooDeep, jsonkey.ErrNumberTooLong, jsonkey.ErrInvalidUTF8, jsonkey.ErrLoneSurrogate, jsonkey.ErrDuplicateName} {
		if errors.Is(err, k) {
			return true
		}
	}
	return false
}

// FuzzCheck holds Check against encoding/json: what Check accepts is JSON;
// JSON it refuses breaks a rule of I-JSON (never "not valid JSON"); and
// the same text laid out with other white space gets the same verdict.
func FuzzCheck(f *testing.F) {
	fuzzSeeds(f)
	g := jsongen.New(28)
	f.Fuzz(func(t *testing.T, text string) {
		err := jsonkey.Check(text)
		valid := json.Valid([]byte(text))
		switch {
		case err == nil && !valid:
			t.Fatalf("Check accepts text encoding/json refuses")
		case err != nil && valid && !isIJSONKind(err):
			t.Fatalf("Check refuses JSON: %v", err)
		}
		if valid {
			if rerr := jsonkey.Check(g.Respace(text)); kindOf(rerr) != kindOf(err) {
				t.Fatalf("Check: %v; respaced: %v", err, rerr)
			}
		}
	})
}

// FuzzIndex holds Index against Check and encoding/json: it accepts what
// Check accepts, and its tree reads as encoding/json reads the text (names,
// strings, numbers as spelled, in order), each node the JSON at its offset,
// however the text is laid out.
func FuzzIndex(f *testing.F) {
	fuzzSeeds(f)
	g := jsongen.New(29)
	f.Fuzz(func(t *testing.T, text string) {
		tree, err := jsonkey.Index(text)
		if cerr := jsonkey.Check(text); (err == nil) != (cerr == nil) {
			t.Fatalf("Index: %v; Check: %v", err, cerr)
		}
		if err != nil {
			return
		}
		want, rerr := refTokens(text)
		if got := treeTokens(tree.Root(), nil); rerr != nil || !reflect.DeepEqual(got, want) {
			t.Fatalf("the index reads %q; encoding/json %q (%v)", got, want, rerr)
		}
		if len(text) < 1<<12 {
			checkNodes(t, text, tree.Root())
		}
		walk(tree.Root())
		respaced := g.Respace(text)
		rtree, err := jsonkey.Index(respaced)
		if err != nil {
			t.Fatalf("Index refuses the text respaced: %v", err)
		}
		if got := treeTokens(rtree.Root(), nil); !reflect.DeepEqual(got, want) {
			t.Fatalf("the index of the text respaced reads %q; want %q", got, want)
		}
	})
}

// FuzzDecode holds Decode against Check and encoding/json: it accepts what
// Check accepts and decodes as encoding/json does, however the text is
// laid out.
func FuzzDecode(f *testing.F) {
	fuzzSeeds(f)
	g := jsongen.New(30)
	f.Fuzz(func(t *testing.T, text string) {
		v, err := jsonkey.Decode(text)
		if cerr := jsonkey.Check(text); (err == nil) != (cerr == nil) {
			t.Fatalf("Decode: %v; Check: %v", err, cerr)
		}
		if err != nil {
			return
		}
		d := json.NewDecoder(strings.NewReader(text))
		d.UseNumber()
		var want any
		if derr := d.Decode(&want); derr != nil || !reflect.DeepEqual(v, want) {
			t.Fatalf("Decode = %v; encoding/json %v (%v)", v, want, derr)
		}
		if rv, err := jsonkey.Decode(g.Respace(text)); err != nil || !reflect.DeepEqual(rv, v) {
			t.Fatalf("Decode of the text respaced = %v, %v; want %v", rv, err, v)
		}
	})
}

// FuzzSelect holds Select against the index: on text Check accepts, each
// path reads the value the index has there; white space changes no
// verdict and no value.
func FuzzSelect(f *testing.F) {
	fuzzSeeds(f)
	g := jsongen.New(31)
	f.Fuzz(func(t *testing.T, text string) {
		values, err := jsonkey.Select(text, selectPaths)
		if jsonkey.Check(text) == nil {
			if err != nil {
				t.Fatalf("Select refuses text Check accepts: %v", err)
			}
			tree, _ := jsonkey.Index(text)
			for i, path := range selectPaths {
				want := ""
				if v, ok := tree.Root().Get(path...); ok {
					want = v.Text()
				}
				if values[i] != want {
					t.Fatalf("Select %q = %q; the index has %q", path, values[i], want)
				}
			}
		}
		if err == nil && !json.Valid([]byte(text)) {
			t.Fatalf("Select reads text encoding/json refuses")
		}
		if !json.Valid([]byte(text)) {
			return
		}
		rvalues, rerr := jsonkey.Select(g.Respace(text), selectPaths)
		if kindOf(rerr) != kindOf(err) {
			t.Fatalf("Select: %v; of the text respaced: %v", err, rerr)
		}
		for i := range rvalues {
			if !sameJSON(rvalues[i], values[i]) {
				t.Fatalf("Select %q = %q; of the text respaced %q", selectPaths[i], values[i], rvalues[i])
			}
		}
	})
}

// fuzzWriter holds a spelling against Check: it refuses what Check refuses
// and, besides, only what its own rules name; it spells one text one way,
// however the text is laid out.
func fuzzWriter(f *testing.F, name string) {
	fuzzSeeds(f)
	g := jsongen.New(32)
	w := writers[slices.IndexFunc(writers, func(w spelling) bool { return w.name == name })]
	f.Fuzz(func(t *testing.T, text string) {
		got, err := spell(w.write, text)
		cerr := jsonkey.Check(text)
		switch {
		case err == nil && cerr != nil:
			t.Fatalf("%s spells text Check refuses (%v)", name, cerr)
		case err != nil && cerr == nil && !slices.ContainsFunc(w.own, func(e error) bool { return errors.Is(err, e) }):
			t.Fatalf("%s refuses text Check accepts: %v", name, err)
		case err != nil:
			return
		}
		if again, err := spell(w.write, text); err != nil || again != got {
			t.Fatalf("%s spells one text two ways", name)
		}
		if respaced, err := spell(w.write, g.Respace(text)); err != nil || respaced != got {
			t.Fatalf("%s spells the text respaced %q, %v; the text %q", name, respaced, err, got)
		}
		if name == "canonical" {
			// Refused, it may be (9010e12 is 9010000000000000, an integer
			// spelled beyond 2^53); read, it is itself.
			if again, err := spell(w.write, got); err == nil && again != got {
				t.Fatalf("the canonical spelling %q is not canonical: %q", got, again)
			}
		}
	})
}

func FuzzWriteCanonical(f *testing.F)  { fuzzWriter(f, "canonical") }
func FuzzWritePython(f *testing.F)     { fuzzWriter(f, "python") }
func FuzzWriteTypeScript(f *testing.F) { fuzzWriter(f, "typescript") }

// FuzzStrings holds Unquote and AppendString against encoding/json: no
// text makes Unquote panic; a JSON string Check accepts unquotes as
// encoding/json reads it; a Go string written by AppendString reads back.
func FuzzStrings(f *testing.F) {
	fuzzSeeds(f)
	for _, r := range jsongen.Pieces {
		for _, s := range jsongen.Spellings([]rune(r)[0]) {
			f.Add(`"` + s + `"`)
		}
	}
	f.Fuzz(func(t *testing.T, text string) {
		got, ok := jsonkey.Unquote(text)
		if jsonkey.Check(text) == nil && strings.HasPrefix(text, `"`) && strings.HasSuffix(text, `"`) {
			var want string
			if err := json.Unmarshal([]byte(text), &want); err != nil || !ok || got != want {
				t.Fatalf("Unquote = %q, %v; encoding/json %q, %v", got, ok, want, err)
			}
		}
		jsonkey.CaseStable(text)
		if !utf8.ValidString(text) {
			return
		}
		q := string(jsonkey.AppendString(nil, text))
		if back, ok := jsonkey.Unquote(q); !ok || back != text || jsonkey.Check(q) != nil {
			t.Fatalf("AppendString = %q, which reads back as %q, %v", q, back, ok)
		}
	})
}

// FuzzNumbers holds the number readers against strconv and each other: no
// text makes them panic; every spelling of a JSON number's value gets one
// JavaScript spelling, and every spelling of its kind one Python spelling.
func FuzzNumbers(f *testing.F) {
	for _, s := range []string{"0", "-0", "1", "1.0", "1e0", "10E-1", "0.70", "7e-1", "9007199254740993", "1e400", "-0.0", "5e-324", "1E+300", "x", "", "-", "1e", "00"} {
		f.Add(s)
	}
	g := jsongen.New(33)
	f.Fuzz(func(t *testing.T, text string) {
		err, err32 := jsonkey.ExactNumber(text), jsonkey.ExactNumber32(text)
		py, js := jsonkey.AppendPythonNumber(nil, text), jsonkey.AppendJSNumber(nil, text)
		if jsonkey.Check(text) != nil || !(text[0] == '-' || text[0] >= '0' && text[0] <= '9') || strings.ContainsAny(text, " \t\n\r") {
			return
		}
		if err32 == nil && err != nil && !jsonkey.IsInteger(text) { // the integer rule (to 2^53) is the double's alone
			t.Fatalf("a float32 holds %s exactly, a double not: %v", text, err)
		}
		if _, e, ok := strings.Cut(strings.ToLower(text), "e"); ok && len(strings.TrimLeft(strings.TrimLeft(e, "+-"), "0")) > 9 {
			return // an exponent jsongen does not respell
		}
		n := jsongen.ParseNum(text)
		for _, how := range []jsongen.Numbers{jsongen.SameClass, jsongen.SameValue} {
			other := g.Respell(n, how)
			if got := jsonkey.AppendJSNumber(nil, other); string(got) != string(js) {
				t.Fatalf("JavaScript spells %s %s, and %s %s", text, js, other, got)
			}
			if got := jsonkey.AppendPythonNumber(nil, other); how == jsongen.SameClass && string(got) != string(py) {
				t.Fatalf("Python spells %s %s, and %s %s", text, py, other, got)
			}
			if oerr := jsonkey.ExactNumber(other); (oerr == nil) != (err == nil) && !jsonkey.IsInteger(text) && !jsonkey.IsInteger(other) {
				t.Fatalf("ExactNumber(%s) = %v, ExactNumber(%s) = %v", text, err, other, oerr)
			}
		}
	})
}

// FuzzEqual holds Equal against the spellings: texts it finds equal are
// spelled alike in every format, or refused alike; a text is equal to
// itself laid out anew, and to itself as json.Marshal writes a
// json.RawMessage of it (compact, with <, > and & escaped).
func FuzzEqual(f *testing.F) {
	for _, tc := range issue25 {
		f.Add(tc.spelled, tc.compact)
	}
	f.Add(`"<a\u0026b>"`, `"\u003ca&b\u003e"`)
	f.Add(`[1,2]`, `[12]`)
	f.Add(`"\ud800"`, `"\ud800"`)
	g := jsongen.New(34)
	for range 30 {
		v := g.Value()
		f.Add(jsongen.Compact(v), g.Spell(v, jsongen.Everything))
	}
	f.Fuzz(func(t *testing.T, a, b string) {
		equal := jsonkey.Equal(a, b)
		if jsonkey.Check(a) != nil {
			return
		}
		if !jsonkey.Equal(a, a) || !jsonkey.Equal(a, g.Respace(a)) {
			t.Fatalf("a text is not Equal to itself, or to itself respaced")
		}
		if m, err := json.Marshal(json.RawMessage(a)); err != nil || !jsonkey.Equal(a, string(m)) {
			t.Fatalf("Equal(%q, its json.Marshal %q) is false (%v)", a, m, err)
		}
		if !equal || jsonkey.Check(b) != nil {
			return
		}
		for _, w := range writers {
			sa, erra := spell(w.write, a)
			sb, errb := spell(w.write, b)
			if sa != sb || kindOf(erra) != kindOf(errb) {
				t.Fatalf("Equal, yet %s spells them %q, %v and %q, %v", w.name, sa, erra, sb, errb)
			}
		}
	})
}
