package jsongen

import (
	"bytes"
	"encoding/json"
	"fmt"
	"slices"
	"strings"
	"testing"
)

// decode reads text as encoding/json does, numbers as json.Number.
func decode(t *testing.T, text string) any {
	t.Helper()
	d := json.NewDecoder(strings.NewReader(text))
	d.UseNumber()
	var v any
	if err := d.Decode(&v); err != nil {
		t.Fatalf("%q: %v", text, err)
	}
	return v
}

// same reports whether a and b, decoded, are one value: numbers by value
// (and, with class, by kind and the sign of a float zero).
func same(a, b any, class bool) bool {
	switch a := a.(type) {
	case json.Number:
		b, ok := b.(json.Number)
		if !ok {
			return false
		}
		na, nb := ParseNum(string(a)), ParseNum(string(b))
		if class && (na.IsInt() != nb.IsInt() || !na.IsInt() && na.Neg != nb.Neg) {
			return false
		}
		return Value{Kind: Number, Num: na}.Equal(Value{Kind: Number, Num: nb})
	case []any:
		b, ok := b.([]any)
		return ok && slices.EqualFunc(a, b, func(x, y any) bool { return same(x, y, class) })
	case map[string]any:
		b, ok := b.(map[string]any)
		if !ok || len(a) != len(b) {
			return false
		}
		for k, x := range a {
			if y, ok := b[k]; !ok || !same(x, y, class) {
				return false
			}
		}
		return true
	}
	return a == b
}

// TestSpellingsAreTheValue: every spelling is JSON and, read by
// encoding/json, the value the compact spelling is (numbers by value, or
// by value and kind for SameClass).
func TestSpellingsAreTheValue(t *testing.T) {
	g := New(1)
	styles := []Style{{}, {Space: true}, {Escapes: true}, {Numbers: SameClass}, {Numbers: SameValue}, {Reorder: true}, Everything}
	for range 3000 {
		v := g.Value()
		compact := Compact(v)
		want := decode(t, compact)
		for _, st := range styles {
			s := g.Spell(v, st)
			if !json.Valid([]byte(s)) {
				t.Fatalf("style %+v: %q is not JSON (compact %q)", st, s, compact)
			}
			if st == (Style{}) && s != compact {
				t.Fatalf("the zero style spells %q, Compact %q", s, compact)
			}
			if !same(want, decode(t, s), st.Numbers == SameClass) {
				t.Fatalf("style %+v: %q is not the value of %q", st, s, compact)
			}
		}
	}
}

// TestSpaceEverywhere: white space of each of the four kinds lands at
// each place RFC 8259 allows it, and each layout is used.
func TestSpaceEverywhere(t *testing.T) {
	g := New(2)
	const ws = " \t\n\r"
	seen := map[string]map[byte]bool{}
	for range 4000 {
		s := g.Spell(g.Value(), Style{Space: true})
		for _, run := range spaceRuns(s) {
			if seen[run.place] == nil {
				seen[run.place] = map[byte]bool{}
			}
			for i := range len(run.text) {
				seen[run.place][run.text[i]] = true
			}
		}
	}
	for _, p := range []string{"before the value", "after the value", "after {", "before }", "inside {}", "after [", "before ]", "inside []",
		"before :", "after :", "before , in an object", "after , in an object", "before , in an array", "after , in an array"} {
		for i := range len(ws) {
			if !seen[p][ws[i]] {
				t.Errorf("no %q %s", ws[i], p)
			}
		}
	}
}

type spaceRun struct{ place, text string }

// spaceRuns finds the white space of JSON text s and names where each run
// is, by the tokens around it.
func spaceRuns(s string) []spaceRun {
	var runs []spaceRun
	var stack []byte // the open brackets
	prev := byte(0)  // the last structural byte, or 'v' after a scalar
	for i := 0; i < len(s); {
		c := s[i]
		if c == ' ' || c == '\t' || c == '\n' || c == '\r' {
			j := i
			for j < len(s) && strings.IndexByte(" \t\n\r", s[j]) >= 0 {
				j++
			}
			next := byte(0)
			if j < len(s) {
				next = s[j]
			}
			in := byte(0)
			if len(stack) > 0 {
				in = stack[len(stack)-1]
			}
			runs = append(runs, spaceRun{placeOf(prev, next, in), s[i:j]})
			i = j
			continue
		}
		switch c {
		case '{', '[':
			stack = append(stack, c)
			prev = c
		case '}', ']':
			stack = stack[:len(stack)-1]
			prev = c
		case ':', ',':
			prev = c
		case '"':
			j := i + 1
			for s[j] != '"' {
				if s[j] == '\\' {
					j++
				}
				j++
			}
			i = j + 1
			prev = 'v'
			continue
		default:
			prev = 'v'
		}
		i++
	}
	return runs
}

func placeOf(prev, next, in byte) string {
	kind := " in an object"
	if in == '[' {
		kind = " in an array"
	}
	switch {
	case prev == 0:
		return "before the value"
	case next == 0:
		return "after the value"
	case prev == '{' && next == '}':
		return "inside {}"
	case prev == '[' && next == ']':
		return "inside []"
	case prev == '{' || prev == '[':
		return "after " + string(prev)
	case next == '}' || next == ']':
		return "before " + string(next)
	case next == ':':
		return "before :"
	case prev == ':':
		return "after :"
	case next == ',':
		return "before ," + kind
	case prev == ',':
		return "after ," + kind
	}
	return fmt.Sprintf("between %q and %q", prev, next)
}

// TestEverySpellingOfEveryCharacter: Spellings gives each character's
// spellings (UTF-8 where allowed, the short escape, \/, \u in both cases,
// the surrogate pair), each of them reads as the character, and Spell uses
// every one, with mixed-case hex digits too.
func TestEverySpellingOfEveryCharacter(t *testing.T) {
	g := New(3)
	for _, piece := range Pieces {
		for _, r := range piece {
			all := Spellings(r)
			want := map[string]bool{}
			for _, s := range all {
				var got string
				if err := json.Unmarshal([]byte(`"`+s+`"`), &got); err != nil || got != string(r) {
					t.Errorf("%U: spelling %q reads as %q, %v", r, s, got, err)
				}
				want[strings.ToLower(s)] = true
			}
			if r > 0xffff && !slices.ContainsFunc(all, func(s string) bool { return strings.Count(s, `\u`) == 2 }) {
				t.Errorf("%U: no surrogate pair among %q", r, all)
			}
			used, mixed := map[string]bool{}, false
			for range 400 {
				s := g.char(r)
				used[strings.ToLower(s)] = true
				mixed = mixed || s != strings.ToLower(s) && s != strings.ToUpper(s) && strings.HasPrefix(s, `\u`) && strings.ContainsAny(s[2:], "abcdef") && strings.ContainsAny(s[2:], "ABCDEF")
			}
			for s := range want {
				if !used[s] {
					t.Errorf("%U: spelling %q never used", r, s)
				}
			}
			if hexLetters(all[len(all)-1]) >= 2 && !mixed {
				t.Errorf("%U: hex digits never in mixed case", r)
			}
		}
	}
	if got := Spellings('/'); !slices.Contains(got, `\/`) || !slices.Contains(got, "/") {
		t.Errorf("/: %q", got)
	}
	if got := Spellings('é'); !slices.Equal(got, []string{"é", `\u00e9`, `\u00E9`}) {
		t.Errorf("é: %q", got)
	}
}

// TestEverySpellingOfNumbers: Respell keeps the value (and with SameClass
// the kind and a float zero's sign), and reaches the spellings producers
// use: 1, 1.0, 1e0, 10E-1, 1E+0, 0.1e1, -0.
func TestEverySpellingOfNumbers(t *testing.T) {
	g := New(4)
	for _, lit := range []string{"1", "0", "-0", "0.0", "-0.0", "0.7", "0.70", "7e-1", "10", "-12.5", "1e-05", "1E+300", "5e-324", "9007199254740992", "123456789.125", "1e400"} {
		n := ParseNum(lit)
		for _, how := range []Numbers{SameClass, SameValue} {
			seen := map[string]bool{}
			for range 300 {
				s := g.Respell(n, how)
				seen[s] = true
				if !json.Valid([]byte(s)) || len(s) > 100 {
					t.Fatalf("%s: %q is not a JSON number of at most 100 characters", lit, s)
				}
				if !same(json.Number(lit), json.Number(s), how == SameClass) {
					t.Fatalf("%s (%d): %q is another value", lit, how, s)
				}
			}
			if how == SameValue && n.Digits != "" && len(seen) < 10 {
				t.Errorf("%s: only %d spellings: %v", lit, len(seen), seen)
			}
		}
	}
	one := map[string]bool{}
	for range 2000 {
		one[g.Respell(ParseNum("1"), SameValue)] = true
	}
	for _, want := range []string{"1", "1.0", "1e0", "10E-1", "1E+0", "0.1e1", "1.00", "1e00"} {
		if !one[want] {
			t.Errorf("1 is never spelled %s", want)
		}
	}
	zero := map[string]bool{}
	for range 500 {
		zero[g.Respell(ParseNum("0"), SameValue)] = true
	}
	for _, want := range []string{"0", "-0", "0.0", "-0.0", "0e0"} {
		if !zero[want] {
			t.Errorf("0 is never spelled %s", want)
		}
	}
}

// TestBreak: damaged text is, mostly, not JSON; every kind of damage is
// done.
func TestBreak(t *testing.T) {
	g := New(5)
	kinds := map[string]bool{}
	invalid, n := 0, 5000
	for range n {
		text, what := g.Break(g.Spell(g.Value(), Everything))
		kinds[what] = true
		if !json.Valid([]byte(text)) {
			invalid++
		}
	}
	if len(kinds) < 15 {
		t.Errorf("%d kinds of damage: %v", len(kinds), kinds)
	}
	if invalid < n*8/10 {
		t.Errorf("%d of %d damaged texts are not JSON; want most", invalid, n)
	}
	t.Logf("%d of %d damaged texts are not JSON (encoding/json), %d kinds of damage", invalid, n, len(kinds))
}

// TestDefects: with Defects, values break I-JSON in each way while staying
// JSON.
func TestDefects(t *testing.T) {
	g := New(6)
	g.Defects = 100
	var dup, lone, long bool
	for range 2000 {
		s := g.Spell(g.Value(), Everything)
		if !json.Valid([]byte(s)) {
			t.Fatalf("%q is not JSON", s)
		}
		c := Compact(g.Value())
		lone = lone || strings.Contains(c, `\ud`)
		long = long || len(c) > 101 && bytes.ContainsAny([]byte(c), "0123456789") && longNumber(c)
		dup = dup || dupName(t, c)
	}
	if !dup || !lone || !long {
		t.Errorf("duplicate names %v, lone surrogates %v, long numbers %v: want all", dup, lone, long)
	}
}

// hexLetters counts the letters among the hex digits of the \u escapes of s.
func hexLetters(s string) int {
	n := 0
	for _, u := range strings.Split(s, `\u`)[1:] {
		for _, c := range u[:4] {
			if strings.ContainsRune("abcdefABCDEF", c) {
				n++
			}
		}
	}
	return n
}

func longNumber(s string) bool {
	run := 0
	for i := range len(s) {
		if s[i] >= '0' && s[i] <= '9' {
			if run++; run > 100 {
				return true
			}
		} else {
			run = 0
		}
	}
	return false
}

// dupName reports whether some object of JSON text s names a member twice.
func dupName(t *testing.T, s string) bool {
	d := json.NewDecoder(strings.NewReader(s))
	type frame struct {
		object bool
		names  map[string]bool
		key    bool // the next token of an object is a name
	}
	var stack []*frame
	for {
		tok, err := d.Token()
		if err != nil {
			return false
		}
		top := (*frame)(nil)
		if len(stack) > 0 {
			top = stack[len(stack)-1]
		}
		if top != nil && top.object && top.key {
			if name, ok := tok.(string); ok {
				if top.names[name] {
					return true
				}
				top.names[name] = true
				top.key = false
				continue
			}
		}
		switch tok {
		case json.Delim('{'):
			if top != nil && top.object {
				top.key = true
			}
			stack = append(stack, &frame{object: true, names: map[string]bool{}, key: true})
			continue
		case json.Delim('['):
			if top != nil && top.object {
				top.key = true
			}
			stack = append(stack, &frame{})
			continue
		case json.Delim('}'), json.Delim(']'):
			stack = stack[:len(stack)-1]
			continue
		}
		if top != nil && top.object {
			top.key = true
		}
	}
}

// TestRespace: respaced JSON is JSON and the same tokens, with white space
// at the places RFC 8259 allows.
func TestRespace(t *testing.T) {
	g := New(7)
	for range 2000 {
		c := Compact(g.Value())
		s := g.Respace(c)
		var a, b bytes.Buffer
		if err := json.Compact(&a, []byte(s)); err != nil {
			t.Fatalf("%q respaced %q: %v", c, s, err)
		}
		json.Compact(&b, []byte(c)) //nolint:errcheck // c is JSON
		if a.String() != b.String() {
			t.Fatalf("%q respaced %q reads as %q", c, s, a.String())
		}
	}
}
