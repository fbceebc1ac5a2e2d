// Package jsongen generates JSON values for tests, and spells each of them
// the ways producers do: white space (space, tab, LF, CR) at every place
// RFC 8259 allows it, alone or in the layouts of common pretty printers;
// every character of a string in any of its spellings (as UTF-8, as \u
// with upper or lower hex digits, the short escapes, \/, surrogate pairs);
// every number in any spelling of its value (1, 1.0, 1e0, 10E-1, -0,
// 0.70); members in any order. [Gen.Break] damages text the ways
// producers and transports do, for tests of what readers refuse.
//
//	g := jsongen.New(25)
//	v := g.Value()
//	compact, spelled := jsongen.Compact(v), g.Spell(v, jsongen.Everything)
//
// The same seed makes the same values and spellings. Values may break
// I-JSON (RFC 7493) where asked: see [Gen.Defects].
package jsongen

import (
	"fmt"
	"math/rand/v2"
	"slices"
	"strconv"
	"strings"
	"unicode/utf16"
	"unicode/utf8"
)

// Kind is the kind of a [Value].
type Kind uint8

// The kinds of JSON values.
const (
	Null Kind = iota
	False
	True
	Number
	String
	Array
	Object
)

// Value is a JSON value as the generator holds it.
type Value struct {
	Kind    Kind
	Num     Num      // a Number
	Str     []rune   // a String's code points; one in U+D800–U+DFFF is a lone surrogate, written as an escape
	Elems   []Value  // an Array's elements
	Members []Member // an Object's members, in the order sent
}

// Member is a member of an object.
type Member struct {
	Name  []rune // code points, as for a string
	Value Value
}

// Str returns a string value.
func Str(s string) Value { return Value{Kind: String, Str: []rune(s)} }

// Obj returns an object value of names and values, alternately.
func Obj(namesAndValues ...any) Value {
	v := Value{Kind: Object}
	for i := 0; i+1 < len(namesAndValues); i += 2 {
		v.Members = append(v.Members, Member{Name: []rune(namesAndValues[i].(string)), Value: namesAndValues[i+1].(Value)})
	}
	return v
}

// Int returns an integer number value.
func Int(n int64) Value { return Value{Kind: Number, Num: ParseNum(strconv.FormatInt(n, 10))} }

// Num is a number: the spelling it was made with, and its value,
// ±0.Digits × 10^Exp.
type Num struct {
	Lit    string // as made: the compact spelling writes it so
	Neg    bool   // a minus sign (also on a zero: -0)
	Digits string // the significant digits, without leading or trailing zeros; "" for zero
	Exp    int
}

// ParseNum reads a JSON number (RFC 8259's grammar; it does not check it).
func ParseNum(lit string) Num {
	n := Num{Lit: lit, Neg: strings.HasPrefix(lit, "-")}
	s := strings.TrimPrefix(lit, "-")
	mant, e, _ := strings.Cut(strings.ToLower(s), "e")
	if e != "" {
		n.Exp, _ = strconv.Atoi(e)
	}
	whole, frac, _ := strings.Cut(mant, ".")
	all := whole + frac
	n.Exp += len(whole)
	trimmed := strings.TrimLeft(all, "0")
	n.Exp -= len(all) - len(trimmed)
	n.Digits = strings.TrimRight(trimmed, "0")
	if n.Digits == "" {
		n.Exp = 0
	}
	return n
}

// IsInt reports whether n is spelled as an integer (no fraction, no
// exponent), as Python's json reads an int rather than a float.
func (n Num) IsInt() bool { return !strings.ContainsAny(n.Lit, ".eE") }

// integral reports whether n's value is an integer.
func (n Num) integral() bool { return n.Exp >= len(n.Digits) }

// Equal reports whether a and b are the same value in every reader that
// keeps JSON's values (the same number; -0 and 0 are one, as in RFC 8785
// and JavaScript), compared as they are spelled.
func (a Value) Equal(b Value) bool {
	if a.Kind != b.Kind {
		return false
	}
	switch a.Kind {
	case Number:
		return a.Num.Digits == b.Num.Digits && a.Num.Exp == b.Num.Exp && (a.Num.Neg == b.Num.Neg || a.Num.Digits == "")
	case String:
		return slices.Equal(a.Str, b.Str)
	case Array:
		return slices.EqualFunc(a.Elems, b.Elems, Value.Equal)
	case Object:
		if len(a.Members) != len(b.Members) {
			return false
		}
		for _, m := range a.Members {
			k := slices.IndexFunc(b.Members, func(n Member) bool { return slices.Equal(n.Name, m.Name) })
			if k < 0 || !m.Value.Equal(b.Members[k].Value) {
				return false
			}
		}
	}
	return true
}

// Gen makes values and spellings from a seeded source. Its fields may be
// set before the first use.
type Gen struct {
	r *rand.Rand

	// Keys are the member names objects take theirs from (without
	// duplicates unless Defects says otherwise).
	Keys []string
	// Pieces are what strings are made of, a piece at a time.
	Pieces []string
	// MaxDepth is the depth from which arrays and objects are rare.
	MaxDepth int
	// Defects is the chance, in a thousand, that a value is made to break
	// I-JSON while staying JSON: an object names a member twice, a string
	// holds a lone surrogate, a number is longer than 100 characters.
	// Zero makes none.
	Defects int
}

// New returns a generator of seed, with [Keys], [Pieces], a MaxDepth of 4
// and no defects.
func New(seed uint64) *Gen {
	return &Gen{r: rand.New(rand.NewPCG(seed, 0x6a736f6e67656e)), Keys: Keys, Pieces: Pieces, MaxDepth: 4}
}

// Rand is the generator's source, for a test's own choices.
func (g *Gen) Rand() *rand.Rand { return g.r }

// Keys are member names: letter case ties, escapes' characters, non-ASCII
// and astral characters, array indices, the empty name. Every one has the
// same lower case in every Unicode version from 15.0 on.
var Keys = []string{"a", "A", "b", "B", "id", "Id", "ID", "é", "É", "ß", "中", "😀", "𝄞", "10", "9", "01", "",
	"x y", `"q"`, "/", `\`, "\n", "\t", "\u2028", "\x7f", "user_id", "userId", "_", "order_id", "a\u0301"}

// Pieces are what strings are made of: ASCII, the characters JSON escapes
// (quotation mark, reverse solidus, controls), the solidus, DEL, Latin,
// CJK, the line and paragraph separators, U+FEFF, U+FFFD, U+FFFF,
// combining marks and characters beyond U+FFFF.
var Pieces = []string{"a", "Z", "0", " ", "~", `"`, `\`, "/", "\n", "\t", "\r", "\b", "\f", "\x00", "\x01", "\x1f", "\x7f",
	"é", "ß", "中", "\u2028", "\u2029", "\ufeff", "\ufffd", "\uffff", "a\u0301", "😀", "𝄞", "\U0010ffff", "<&>", "order-42"}

func (g *Gen) chance(perThousand int) bool { return perThousand > 0 && g.r.IntN(1000) < perThousand }

// Value makes a value.
func (g *Gen) Value() Value { return g.value(0) }

func (g *Gen) value(depth int) Value {
	n := g.r.IntN(10)
	if depth >= g.MaxDepth && n < 3 {
		n += 3
	}
	switch n {
	case 0, 1:
		return g.object(depth)
	case 2:
		v := Value{Kind: Array}
		for range g.r.IntN(5) {
			v.Elems = append(v.Elems, g.value(depth+1))
		}
		return v
	case 3, 4:
		return Value{Kind: String, Str: g.String()}
	case 5:
		return Value{Kind: []Kind{Null, False, True}[g.r.IntN(3)]}
	}
	return Value{Kind: Number, Num: g.Number()}
}

func (g *Gen) object(depth int) Value {
	v := Value{Kind: Object}
	var used []string
	for range g.r.IntN(6) {
		name := g.Keys[g.r.IntN(len(g.Keys))]
		if slices.Contains(used, name) && !g.chance(g.Defects*5) {
			continue
		}
		used = append(used, name)
		rs := []rune(name)
		if g.chance(g.Defects) {
			rs = append(rs, rune(0xd800+g.r.IntN(0x800)))
		}
		v.Members = append(v.Members, Member{Name: rs, Value: g.value(depth + 1)})
	}
	return v
}

// String makes a string's code points.
func (g *Gen) String() []rune {
	var rs []rune
	for range g.r.IntN(7) {
		rs = append(rs, []rune(g.Pieces[g.r.IntN(len(g.Pieces))])...)
	}
	if g.chance(g.Defects) {
		lone := rune(0xd800 + g.r.IntN(0x800))
		at := g.r.IntN(len(rs) + 1)
		rs = slices.Insert(rs, at, lone)
	}
	return rs
}

// Number makes a number: integers small and large (to 2^53 and beyond),
// zeros, decimals, exponents near a double's limits, and now and then one
// a double does not hold exactly.
func (g *Gen) Number() Num {
	r := g.r
	digits := func(n int) string {
		b := []byte{byte('1' + r.IntN(9))}
		for range n - 1 {
			b = append(b, byte('0'+r.IntN(10)))
		}
		return string(b)
	}
	sign := []string{"", "", "-"}[r.IntN(3)]
	var lit string
	switch r.IntN(12) {
	case 0:
		lit = []string{"0", "-0", "0.0", "-0.0", "0e0"}[r.IntN(5)]
	case 1, 2:
		lit = sign + strconv.Itoa(r.IntN(1000))
	case 3:
		lit = sign + digits(1+r.IntN(16))
	case 4:
		lit = sign + []string{"9007199254740992", "9007199254740991", "4294967295", "2147483648"}[r.IntN(4)]
	case 5:
		lit = sign + digits(1+r.IntN(4)) + ".0"
	case 6:
		lit = sign + "0." + strings.Repeat("0", r.IntN(6)) + digits(1+r.IntN(15))
	case 7:
		lit = sign + digits(1+r.IntN(6)) + "." + digits(1+r.IntN(6))
	case 8:
		lit = sign + digits(1) + "." + digits(1+r.IntN(14)) + []string{"e", "E"}[r.IntN(2)] + []string{"", "+", "-"}[r.IntN(3)] + strconv.Itoa(r.IntN(300))
	case 9:
		lit = sign + []string{"0.7", "0.1", "10.5", "1e-05", "1E+300", "5e-324", "1.7976931348623157e308", "2.5e-7", "1e16", "1e21", "123456789.125"}[r.IntN(11)]
	case 10:
		lit = sign + digits(1+r.IntN(3)) + "e" + strconv.Itoa(r.IntN(25))
	default: // a double does not hold it exactly, or out of its range
		lit = sign + []string{"9007199254740993", "12345678901234567890", "0.10000000000000000001", "1e400", "2e-400", "0.30000000000000004441"}[r.IntN(6)]
	}
	if g.chance(g.Defects) {
		lit = sign + digits(101+r.IntN(20))
	}
	return ParseNum(lit)
}

// Numbers says how [Gen.Spell] writes numbers.
type Numbers uint8

const (
	// KeepNumbers writes each number as it was made.
	KeepNumbers Numbers = iota
	// SameClass writes each number in another spelling of its value, and
	// of its kind: an integer stays an integer (0 may become -0), a
	// fraction or exponent stays one, a zero keeps its sign. Python's json
	// reads every such spelling as the same int or float.
	SameClass
	// SameValue writes each number in any spelling of its value: 1, 1.0,
	// 1e0, 10E-1; 0, -0, 0.0e5. JavaScript and RFC 8785 read them alike.
	SameValue
)

// Style says how [Gen.Spell] writes a value; the zero Style is the compact
// spelling ([Compact]).
type Style struct {
	Space   bool    // white space at every place RFC 8259 allows it, in a random layout
	Escapes bool    // each character of each string and name in a random one of its spellings
	Numbers Numbers // how numbers are written
	Reorder bool    // object members in a random order
}

// Everything is the Style that changes everything but the value: white
// space, escapes, numbers (SameValue) and member order.
var Everything = Style{Space: true, Escapes: true, Numbers: SameValue, Reorder: true}

// Compact writes v without white space, each string as JavaScript's
// JSON.stringify escapes it (the short escapes, \u00XX for other controls
// and for lone surrogates, lower-case hex), each number as made, members
// in the order sent.
func Compact(v Value) string {
	w := writer{}
	w.value(v, 0)
	return w.b.String()
}

// Spell writes v in style st.
func (g *Gen) Spell(v Value, st Style) string {
	w := writer{g: g, st: st}
	if st.Space {
		w.layout = g.layout()
	}
	w.space(placeTop, 0)
	w.value(v, 0)
	w.space(placeEnd, 0)
	return w.b.String()
}

// The places where RFC 8259 allows white space: around the top-level
// value, and on either side of each structural character.
type place uint8

const (
	placeTop        place = iota // before the top-level value
	placeEnd                     // after it
	placeOpen                    // after { or [
	placeClose                   // before } or ]
	placeEmpty                   // inside {} or []
	placeColonLeft               // before :
	placeColonRight              // after :
	placeCommaLeft               // before ,
	placeCommaRight              // after ,
	places
)

// layout writes the white space at each place: a pretty printer's, or
// random runs.
type layout struct {
	name   string
	random bool
	nl     string         // the line break of a multi-line layout; "" for one line
	indent string         // one level of indentation
	fixed  [places]string // one-line white space, by place
	inline bool           // arrays on one line (Jackson)
}

// layouts are the ways common producers lay JSON out.
var layouts = []layout{
	{name: "Jackson's default pretty printer", nl: "\n", indent: "  ", fixed: [places]string{placeColonLeft: " ", placeColonRight: " ", placeEmpty: " "}, inline: true},
	{name: "Python json.dumps(indent=2)", nl: "\n", indent: "  ", fixed: [places]string{placeColonRight: " "}},
	{name: "Python json.dumps", fixed: [places]string{placeColonRight: " ", placeCommaRight: " "}},
	{name: "Go json.MarshalIndent with a tab", nl: "\n", indent: "\t", fixed: [places]string{placeColonRight: " "}},
	{name: "Windows line breaks", nl: "\r\n", indent: "    ", fixed: [places]string{placeColonRight: " ", placeEnd: "\r\n"}},
	{name: "spaces around every token", fixed: [places]string{placeTop: " ", placeEnd: " ", placeOpen: " ", placeClose: " ", placeEmpty: " ",
		placeColonLeft: " ", placeColonRight: " ", placeCommaLeft: " ", placeCommaRight: " "}},
	{name: "random runs", random: true},
	{name: "random runs", random: true},
	{name: "random runs", random: true},
}

func (g *Gen) layout() *layout { return &layouts[g.r.IntN(len(layouts))] }

type writer struct {
	g      *Gen
	st     Style
	layout *layout
	b      strings.Builder
}

// space writes the white space of place p at depth.
func (w *writer) space(p place, depth int) { w.spaceIn(p, depth, false) }

func (w *writer) spaceIn(p place, depth int, array bool) {
	l := w.layout
	switch {
	case l == nil:
	case l.random:
		w.b.WriteString(w.g.whitespace())
	case l.nl != "" && !(array && l.inline) && (p == placeOpen || p == placeCommaRight):
		w.b.WriteString(l.nl + strings.Repeat(l.indent, depth+1))
	case l.nl != "" && !(array && l.inline) && p == placeClose:
		w.b.WriteString(l.nl + strings.Repeat(l.indent, depth))
	case array && l.inline && (p == placeOpen || p == placeClose || p == placeCommaRight):
		w.b.WriteString(" ")
	default:
		w.b.WriteString(l.fixed[p])
	}
}

// whitespace is a random run of JSON white space: usually short, now and
// then a long one.
func (g *Gen) whitespace() string {
	const ws = " \t\n\r"
	n := []int{0, 0, 0, 1, 1, 2, 3}[g.r.IntN(7)]
	if g.r.IntN(50) == 0 {
		n = 8 + g.r.IntN(120)
	}
	b := make([]byte, n)
	for i := range b {
		b[i] = ws[g.r.IntN(len(ws))]
	}
	return string(b)
}

func (w *writer) value(v Value, depth int) {
	switch v.Kind {
	case Null:
		w.b.WriteString("null")
	case False:
		w.b.WriteString("false")
	case True:
		w.b.WriteString("true")
	case Number:
		w.b.WriteString(w.number(v.Num))
	case String:
		w.str(v.Str)
	case Array:
		w.b.WriteByte('[')
		if len(v.Elems) == 0 {
			w.spaceIn(placeEmpty, depth, true)
		} else {
			w.spaceIn(placeOpen, depth, true)
		}
		for i, e := range v.Elems {
			if i > 0 {
				w.spaceIn(placeCommaLeft, depth, true)
				w.b.WriteByte(',')
				w.spaceIn(placeCommaRight, depth, true)
			}
			w.value(e, depth+1)
		}
		if len(v.Elems) > 0 {
			w.spaceIn(placeClose, depth, true)
		}
		w.b.WriteByte(']')
	case Object:
		ms := v.Members
		if w.st.Reorder && len(ms) > 1 {
			ms = slices.Clone(ms)
			w.g.r.Shuffle(len(ms), func(i, j int) { ms[i], ms[j] = ms[j], ms[i] })
		}
		w.b.WriteByte('{')
		if len(ms) == 0 {
			w.space(placeEmpty, depth)
		} else {
			w.space(placeOpen, depth)
		}
		for i, m := range ms {
			if i > 0 {
				w.space(placeCommaLeft, depth)
				w.b.WriteByte(',')
				w.space(placeCommaRight, depth)
			}
			w.str(m.Name)
			w.space(placeColonLeft, depth)
			w.b.WriteByte(':')
			w.space(placeColonRight, depth)
			w.value(m.Value, depth+1)
		}
		if len(ms) > 0 {
			w.space(placeClose, depth)
		}
		w.b.WriteByte('}')
	}
}

func (w *writer) str(rs []rune) {
	w.b.WriteByte('"')
	for _, r := range rs {
		if w.st.Escapes {
			w.b.WriteString(w.g.char(r))
		} else {
			w.b.WriteString(compactChar(r))
		}
	}
	w.b.WriteByte('"')
}

// compactChar is r as JSON.stringify writes it in a string.
func compactChar(r rune) string {
	if e, ok := shortEscapes[r]; ok {
		return e
	}
	if r < 0x20 || utf16.IsSurrogate(r) {
		return fmt.Sprintf(`\u%04x`, r)
	}
	return string(r)
}

var shortEscapes = map[rune]string{'"': `\"`, '\\': `\\`, '\b': `\b`, '\f': `\f`, '\n': `\n`, '\r': `\r`, '\t': `\t`}

// Spellings returns every spelling of r in a JSON string but those that
// differ only in the case of hex digits: UTF-8 where JSON allows it, the
// short escape, \/ for /, \u with lower-case hex and with upper-case hex,
// and for a character beyond U+FFFF its surrogate pair.
func Spellings(r rune) []string {
	var out []string
	if !(r < 0x20 || r == '"' || r == '\\' || utf16.IsSurrogate(r)) {
		out = append(out, string(r))
	}
	if e, ok := shortEscapes[r]; ok {
		out = append(out, e)
	}
	if r == '/' {
		out = append(out, `\/`)
	}
	if r > 0xffff {
		hi, lo := utf16.EncodeRune(r)
		out = append(out, fmt.Sprintf(`\u%04x\u%04x`, hi, lo), fmt.Sprintf(`\u%04X\u%04X`, hi, lo))
	} else {
		out = append(out, fmt.Sprintf(`\u%04x`, r))
		if u := fmt.Sprintf(`\u%04X`, r); u != out[len(out)-1] {
			out = append(out, u)
		}
	}
	return out
}

// char is a random spelling of r, its hex digits each in a random case.
func (g *Gen) char(r rune) string {
	all := Spellings(r)
	s := all[g.r.IntN(len(all))]
	if !strings.HasPrefix(s, `\u`) {
		return s
	}
	b := []byte(s)
	for i := range b {
		if b[i] >= 'a' && b[i] <= 'f' && g.r.IntN(2) == 0 {
			b[i] -= 'a' - 'A'
		} else if b[i] >= 'A' && b[i] <= 'F' && g.r.IntN(2) == 0 {
			b[i] += 'a' - 'A'
		}
	}
	return string(b)
}

// number is n as the style writes it.
func (w *writer) number(n Num) string {
	if w.g == nil || w.st.Numbers == KeepNumbers {
		return n.Lit
	}
	return w.g.Respell(n, w.st.Numbers)
}

// Respell returns a random spelling of n's value: of its class with
// SameClass, any with SameValue (see [Numbers]), at most 100 characters
// (n itself when no other spelling is that short).
func (g *Gen) Respell(n Num, how Numbers) string {
	if how == KeepNumbers {
		return n.Lit
	}
	r := g.r
	class := how == SameClass
	if n.Digits == "" { // Python reads -0 as the int 0, but -0.0 as the float -0.0
		sign := []string{"", "-"}[r.IntN(2)]
		switch {
		case class && n.IsInt():
			return sign + "0"
		case class && n.Neg:
			sign = "-"
		case class:
			sign = ""
		}
		forms := []string{"0.0", "0.00", "0e0", "0E+1", "0.0e-5", "0e00"}
		if !class {
			forms = append(forms, "0")
		}
		return sign + forms[r.IntN(len(forms))]
	}
	sign := ""
	if n.Neg {
		sign = "-"
	}
	if class && n.IsInt() {
		return sign + n.Digits + strings.Repeat("0", n.Exp-len(n.Digits))
	}
	if len(n.Lit) > 100 {
		return n.Lit
	}
	e := []string{"e", "E"}[r.IntN(2)]
	for range 100 { // then n.Lit: no other spelling fits in 100 characters
		var s string
		switch r.IntN(5) {
		case 0: // an integer, when the value is one and not too long
			if class || !n.integral() || n.Exp > 40 {
				continue
			}
			s = n.Digits + strings.Repeat("0", n.Exp-len(n.Digits))
		case 1: // a fraction, with trailing zeros
			if n.Exp > 40 || n.Exp < -40 {
				continue
			}
			s = fixed(n.Digits, n.Exp) + strings.Repeat("0", r.IntN(3))
		default: // an exponent, the point moved
			shift := r.IntN(len(n.Digits)+4) - 2 // digits before the point
			mant := pointed(n.Digits, shift, r.IntN(3))
			x := n.Exp - shift
			xs := strconv.Itoa(x)
			switch {
			case x >= 0 && r.IntN(2) == 0:
				xs = "+" + xs
			case x >= 0 && r.IntN(4) == 0:
				xs = "0" + xs // leading zeros are allowed
			}
			s = mant + e + xs
		}
		if len(sign+s) <= 100 {
			return sign + s
		}
	}
	return n.Lit
}

// fixed writes 0.digits × 10^exp with a decimal point: 12.5, 0.007, 10.0.
func fixed(digits string, exp int) string {
	switch {
	case exp <= 0:
		return "0." + strings.Repeat("0", -exp) + digits
	case exp >= len(digits):
		return digits + strings.Repeat("0", exp-len(digits)) + ".0"
	}
	return digits[:exp] + "." + digits[exp:]
}

// pointed writes digits with shift of them before a decimal point (none
// when shift is len(digits) and zeros is 0; zeros before the point when
// shift is not positive), and zeros trailing zeros after it.
func pointed(digits string, shift, zeros int) string {
	if shift <= 0 {
		return "0." + strings.Repeat("0", -shift) + digits + strings.Repeat("0", zeros)
	}
	if shift >= len(digits) {
		s := digits + strings.Repeat("0", shift-len(digits))
		if zeros > 0 {
			s += "." + strings.Repeat("0", zeros)
		}
		return s
	}
	return digits[:shift] + "." + digits[shift:] + strings.Repeat("0", zeros)
}

// Break damages text, a spelling of a JSON value, in one random way: white
// space JSON does not allow (U+000B, U+000C, U+00A0, U+FEFF, U+2028), a
// trailing comma, a missing or other separator, a number JSON does not
// spell (+1, 01, .5, 1., 0x1F, NaN, Infinity), a raw control character or
// an invalid escape in a string, single quotes, invalid UTF-8, a comment,
// a byte order mark, text after the value, or text cut short. It returns
// the damaged text and what was done. Damage does not always leave text
// that is not JSON (a stray byte inside a string may be a character): a
// test asks its references.
func (g *Gen) Break(text string) (string, string) {
	r := g.r
	outside, inside := positions(text)
	pick := func(ps []int) int {
		if len(ps) == 0 {
			return len(text)
		}
		return ps[r.IntN(len(ps))]
	}
	at := func(ps []int, s string) string {
		i := pick(ps)
		return text[:i] + s + text[i:]
	}
	structural := func(c byte) []int {
		var ps []int
		for _, i := range outside {
			if i < len(text) && text[i] == c {
				ps = append(ps, i)
			}
		}
		return ps
	}
	replaceAt := func(ps []int, with string) string {
		if len(ps) == 0 {
			return text + with
		}
		i := ps[r.IntN(len(ps))]
		return text[:i] + with + text[i+1:]
	}
	switch k := r.IntN(16); k {
	case 0:
		s := []string{"\v", "\f", "\u00a0", "\ufeff", "\u2028", "\u3000", "\x00"}[r.IntN(7)]
		return at(outside, s), fmt.Sprintf("white space JSON does not allow (%U)", []rune(s)[0])
	case 1:
		closing := append(structural('}'), structural(']')...)
		return at(closing, ","), "a trailing comma"
	case 2:
		if r.IntN(2) == 0 {
			return replaceAt(structural(':'), []string{"", "=", " ", "::"}[r.IntN(4)]), "a missing or other name separator"
		}
		return replaceAt(structural(','), []string{"", ";", ",,"}[r.IntN(3)]), "a missing or other value separator"
	case 3:
		return at(outside, []string{"+1", "01", ".5", "1.", "1e", "-", "0x1F", "NaN", "Infinity", "-Infinity", "1_000", "١"}[r.IntN(12)]), "a number JSON does not spell, where a value may be"
	case 4:
		digits := numberStarts(text, outside)
		return at(digits, []string{"+", "0", "."}[r.IntN(3)]), "a number spelled with a sign, a leading zero or a point JSON does not allow"
	case 5:
		return at(inside, string(rune(r.IntN(0x20)))), "a raw control character in a string"
	case 6:
		return at(inside, []string{`\x41`, `\U00e9`, `\u00g0`, `\u12`, `\'`, `\a`, `\0`, `\` + "\n"}[r.IntN(8)]), "an invalid escape in a string"
	case 7:
		return at(outside, `'s'`), "a single-quoted string"
	case 8:
		return at(inside, []string{"\xff", "\xc3", "\xc0\xaf", "\xed\xa0\x80", "\xf4\x90\x80\x80", "\xe2\x82"}[r.IntN(6)]), "invalid UTF-8 in a string"
	case 9:
		return at(outside, []string{"/* c */", "// c\n", "#c\n"}[r.IntN(3)]), "a comment"
	case 10:
		return "\ufeff" + text, "a byte order mark"
	case 11:
		return text + []string{" x", "{}", ",", "]", " 1", "\x00"}[r.IntN(6)], "text after the value"
	case 12:
		if len(text) < 2 {
			return "", "no text"
		}
		return text[:r.IntN(len(text)-1)+1], "text cut short"
	case 13:
		return at(outside, []string{"undefined", "None", "True", "nul", "tru"}[r.IntN(5)]), "a word JSON does not have"
	case 14:
		return replaceAt(structural('"'), "'"), "a string quoted with a single quote"
	default:
		return at(outside, []string{"[", "{", "}", "]"}[r.IntN(4)]), "a bracket too many"
	}
}

// positions returns the offsets in text, which is JSON, between tokens
// (outside strings, not within a number or literal) and inside strings
// (after the opening quote, before the closing one, between characters).
func positions(text string) (outside, inside []int) {
	in := false
	for i := 0; i <= len(text); i++ {
		if !in {
			if i == 0 || i == len(text) || !isWord(text[i-1]) || !isWord(text[i]) {
				outside = append(outside, i)
			}
			if i < len(text) && text[i] == '"' {
				in = true
			}
			continue
		}
		if i < len(text) && !utf8.RuneStart(text[i]) {
			continue
		}
		inside = append(inside, i)
		switch {
		case i >= len(text):
		case text[i] == '\\':
			i++
			if i < len(text) && text[i] == 'u' {
				i += 4
			}
		case text[i] == '"':
			in = false
		}
	}
	return outside, inside
}

func isWord(c byte) bool {
	return c >= '0' && c <= '9' || c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c == '.' || c == '-' || c == '+'
}

// numberStarts are the offsets, among outside, where a number begins.
func numberStarts(text string, outside []int) []int {
	var ps []int
	for _, i := range outside {
		if i < len(text) && (text[i] == '-' || text[i] >= '0' && text[i] <= '9') {
			ps = append(ps, i)
		}
	}
	return ps
}

// Respace lays text, which is JSON, out again: random white space at every
// place between its tokens where RFC 8259 allows it, and none elsewhere;
// the tokens are kept as they are. Text that is not JSON comes back with
// white space somewhere between its bytes.
func (g *Gen) Respace(text string) string {
	var b strings.Builder
	b.Grow(len(text) * 2)
	b.WriteString(g.whitespace())
	for i := 0; i < len(text); {
		c := text[i]
		switch {
		case c == ' ' || c == '\t' || c == '\n' || c == '\r':
			i++
			continue
		case c == '"':
			j := i + 1
			for j < len(text) && text[j] != '"' {
				if text[j] == '\\' {
					j++
				}
				j++
			}
			j = min(j+1, len(text))
			b.WriteString(text[i:j])
			i = j
		case strings.IndexByte("{}[]:,", c) >= 0:
			b.WriteByte(c)
			i++
		default: // a number or literal: up to the next delimiter
			j := i
			for j < len(text) && strings.IndexByte(" \t\n\r{}[]:,\"", text[j]) < 0 {
				j++
			}
			b.WriteString(text[i:j])
			i = j
		}
		b.WriteString(g.whitespace())
	}
	return b.String()
}
