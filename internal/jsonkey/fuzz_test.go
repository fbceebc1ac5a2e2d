package jsonkey_test

import (
	"bytes"
	"encoding/json"
	"errors"
	"slices"
	"strings"
	"testing"

	"github.com/sqsonce/sqsonce/internal/jsonkey"
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
