package jmespath

import (
	"encoding/base64"
	"math"
	"slices"
	"strings"
	"unicode/utf8"

	"github.com/sqsonce/sqsonce/internal/inflate"
	"github.com/sqsonce/sqsonce/internal/jsonkey"
)

// function is a JMESPath function: its name, arity, which arguments are
// expression references (&expr), and its body. Each body follows
// jmespath.py's and Powertools TypeScript's and refuses what they compute
// differently.
type function struct {
	name     string
	args     int  // the number of arguments, or the least when variadic
	variadic bool // more arguments of the last kind are allowed
	expref   int  // the position of the expression reference, or -1
	call     func(ev *evaluator, args []value) (value, error)
}

var functions map[string]*function

func init() {
	functions = map[string]*function{}
	for _, f := range []*function{
		{name: "abs", args: 1, expref: -1, call: fnAbs},
		{name: "avg", args: 1, expref: -1, call: fnAvg},
		{name: "ceil", args: 1, expref: -1, call: func(ev *evaluator, a []value) (value, error) { return fnRound(a, math.Ceil, "ceil") }},
		{name: "contains", args: 2, expref: -1, call: fnContains},
		{name: "ends_with", args: 2, expref: -1, call: func(ev *evaluator, a []value) (value, error) { return fnAffix(ev, a, "ends_with", strings.HasSuffix) }},
		{name: "floor", args: 1, expref: -1, call: func(ev *evaluator, a []value) (value, error) { return fnRound(a, math.Floor, "floor") }},
		{name: "join", args: 2, expref: -1, call: fnJoin},
		{name: "keys", args: 1, expref: -1, call: func(ev *evaluator, a []value) (value, error) { return fnKeysValues(ev, a, "keys") }},
		{name: "length", args: 1, expref: -1, call: fnLength},
		{name: "map", args: 2, expref: 0, call: fnMap},
		{name: "max", args: 1, expref: -1, call: func(ev *evaluator, a []value) (value, error) { return fnExtreme(ev, a, "max", 1) }},
		{name: "max_by", args: 2, expref: 1, call: func(ev *evaluator, a []value) (value, error) { return fnExtremeBy(ev, a, "max_by", 1) }},
		{name: "merge", args: 1, variadic: true, expref: -1, call: fnMerge},
		{name: "min", args: 1, expref: -1, call: func(ev *evaluator, a []value) (value, error) { return fnExtreme(ev, a, "min", -1) }},
		{name: "min_by", args: 2, expref: 1, call: func(ev *evaluator, a []value) (value, error) { return fnExtremeBy(ev, a, "min_by", -1) }},
		{name: "not_null", args: 1, variadic: true, expref: -1, call: fnNotNull},
		{name: "reverse", args: 1, expref: -1, call: fnReverse},
		{name: "sort", args: 1, expref: -1, call: fnSort},
		{name: "sort_by", args: 2, expref: 1, call: fnSortBy},
		{name: "starts_with", args: 2, expref: -1, call: func(ev *evaluator, a []value) (value, error) { return fnAffix(ev, a, "starts_with", strings.HasPrefix) }},
		{name: "sum", args: 1, expref: -1, call: fnSum},
		{name: "to_array", args: 1, expref: -1, call: fnToArray},
		{name: "to_number", args: 1, expref: -1, call: fnToNumber},
		{name: "to_string", args: 1, expref: -1, call: fnToString},
		{name: "type", args: 1, expref: -1, call: fnType},
		{name: "values", args: 1, expref: -1, call: func(ev *evaluator, a []value) (value, error) { return fnKeysValues(ev, a, "values") }},
		{name: "powertools_json", args: 1, expref: -1, call: fnPowertoolsJSON},
		{name: "powertools_base64", args: 1, expref: -1, call: func(ev *evaluator, a []value) (value, error) { return fnBase64(ev, a, false) }},
		{name: "powertools_base64_gzip", args: 1, expref: -1, call: func(ev *evaluator, a []value) (value, error) { return fnBase64(ev, a, true) }},
	} {
		functions[f.name] = f
	}
}

// resolve checks the function calls of the AST n (names, arities, where
// expression references stand) and links them to their functions.
func resolve(n *node, exprefAllowed bool) error {
	if n.typ == nExpref && !exprefAllowed {
		return errAt(0, "an expression reference (&) outside the argument of map, sort_by, min_by or max_by that takes one")
	}
	if n.typ == nFunction {
		f, ok := functions[n.name]
		if !ok {
			return errAt(0, "unknown function %s()", n.name)
		}
		if len(n.children) < f.args || !f.variadic && len(n.children) != f.args {
			return errAt(0, "%s() takes %d arguments, not %d", n.name, f.args, len(n.children))
		}
		for i, c := range n.children {
			if i == f.expref && c.typ != nExpref {
				return errAt(0, "argument %d of %s() must be an expression reference (&…)", i+1, n.name)
			}
			if err := resolve(c, i == f.expref); err != nil {
				return err
			}
		}
		n.fn = f
		return nil
	}
	for _, c := range n.children {
		if err := resolve(c, false); err != nil {
			return err
		}
	}
	return nil
}

// function evaluates a function call: its arguments in order, then the
// function.
func (ev *evaluator) function(n *node, v value) (value, error) {
	args, err := ev.visitAll(n.children, v)
	if err != nil {
		return value{}, err
	}
	r, err := n.fn.call(ev, args)
	if err != nil {
		return value{}, inFunction(n.name, err)
	}
	return r, nil
}

func typeError(fn string, want string, got value) error {
	return refuseType(fn, want, got.k.String())
}

func fnAbs(_ *evaluator, a []value) (value, error) {
	if a[0].k != kNumber {
		return value{}, typeError("abs", "a number", a[0])
	}
	return number(strings.TrimPrefix(a[0].s, "-")), nil
}

// numbers returns the elements of an array of numbers.
func (ev *evaluator) numbers(fn string, v value) ([]value, error) {
	if v.k != kArray {
		return nil, typeError(fn, "an array of numbers", v)
	}
	xs, err := ev.elems(v)
	if err != nil {
		return nil, err
	}
	for _, x := range xs {
		if x.k != kNumber {
			return nil, typeError(fn, "an array of numbers", x)
		}
	}
	return xs, nil
}

// sum adds the numbers as TypeScript does (doubles, from 0, in order) and
// refuses unless every addition is exact: then Python's sum (exact for
// ints, compensated for floats since 3.12) gives the same number. float
// tells whether Python's is a float.
func (ev *evaluator) sum(xs []value) (total float64, float bool, err error) {
	for _, x := range xs {
		if jsonkey.IsInteger(x.s) {
			if _, ok := smallInt(x.s); !ok {
				return 0, false, refuse(errPrecision)
			}
		} else {
			float = true
		}
		y := double(x.s)
		s := total + y
		bv := s - total
		if math.IsInf(s, 0) || (total-(s-bv))+(y-bv) != 0 {
			return 0, false, refuse(errInexactSum)
		}
		total = s
	}
	return total, float, nil
}

func fnSum(ev *evaluator, a []value) (value, error) {
	xs, err := ev.numbers("sum", a[0])
	if err != nil {
		return value{}, err
	}
	total, float, err := ev.sum(xs)
	if err != nil {
		return value{}, err
	}
	if float {
		return number(floatSpelling(total)), nil
	}
	return number(intSpelling(total)), nil
}

func fnAvg(ev *evaluator, a []value) (value, error) {
	xs, err := ev.numbers("avg", a[0])
	if err != nil {
		return value{}, err
	}
	if len(xs) == 0 {
		// Python: None; TypeScript: NaN, which is true when tested.
		return value{}, refuse(errEmptyAvg)
	}
	total, _, err := ev.sum(xs)
	if err != nil {
		return value{}, err
	}
	// Both divide the exact sum by the count with one rounding.
	return number(floatSpelling(total / float64(len(xs)))), nil
}

// fnRound is ceil and floor: Python returns an int, TypeScript a double;
// for an int the number itself.
func fnRound(a []value, round func(float64) float64, fn string) (value, error) {
	if a[0].k != kNumber {
		return value{}, typeError(fn, "a number", a[0])
	}
	if jsonkey.IsInteger(a[0].s) {
		return a[0], nil
	}
	f := round(double(a[0].s))
	if math.IsInf(f, 0) {
		return value{}, refuse(errOverflow) // Python raises OverflowError
	}
	s := intSpelling(f)
	if len(s) > maxNumberLen {
		return value{}, refuse(errOverflow)
	}
	return number(s), nil
}

func fnContains(ev *evaluator, a []value) (value, error) {
	haystack, needle := a[0], a[1]
	switch haystack.k {
	case kString:
		if needle.k != kString {
			// Python raises TypeError; TypeScript converts the needle.
			return value{}, typeError("contains", "a string to look for in a string", needle)
		}
		h, err := ev.text(haystack)
		if err != nil {
			return value{}, err
		}
		s, err := ev.text(needle)
		return boolean(strings.Contains(h, s)), err
	case kArray:
	default:
		return value{}, typeError("contains", "an array or a string", haystack)
	}
	composite := needle.k == kArray || needle.k == kObject
	var py, js bool
	err := ev.each(haystack, func(_ string, e value) (bool, error) {
		if e.k == kArray || e.k == kObject {
			if composite {
				// TypeScript's includes compares arrays and objects by
				// reference, Python by value.
				return false, refuse(errReference)
			}
			return true, nil
		}
		if composite {
			return true, nil
		}
		p, err := ev.deepEqual(e, needle, true)
		if err != nil {
			return false, err
		}
		j, err := ev.deepEqual(e, needle, false)
		py, js = py || p, js || j
		return !(py && js), err
	})
	if err != nil {
		return value{}, err
	}
	if py != js {
		return value{}, refuse(errEquality)
	}
	return boolean(py), nil
}

func fnAffix(ev *evaluator, a []value, fn string, has func(string, string) bool) (value, error) {
	if a[0].k != kString || a[1].k != kString {
		return value{}, typeError(fn, "two strings", a[1])
	}
	s, err := ev.text(a[0])
	if err != nil {
		return value{}, err
	}
	affix, err := ev.text(a[1])
	return boolean(has(s, affix)), err
}

func fnJoin(ev *evaluator, a []value) (value, error) {
	if a[0].k != kString || a[1].k != kArray {
		return value{}, typeError("join", "a string and an array of strings", a[1])
	}
	sep, err := ev.text(a[0])
	if err != nil {
		return value{}, err
	}
	xs, err := ev.elems(a[1])
	if err != nil {
		return value{}, err
	}
	if err := ev.charge(int64(len(xs)) * 16); err != nil {
		return value{}, err
	}
	parts := make([]string, len(xs))
	size := 0
	for i, x := range xs {
		if x.k != kString {
			return value{}, typeError("join", "an array of strings", x)
		}
		if parts[i], err = ev.text(x); err != nil {
			return value{}, err
		}
		size += len(parts[i]) + len(sep)
	}
	if err := ev.charge(int64(size)); err != nil {
		return value{}, err
	}
	return str(strings.Join(parts, sep)), nil
}

func fnKeysValues(ev *evaluator, a []value, fn string) (value, error) {
	if a[0].k != kObject {
		return value{}, typeError(fn, "an object", a[0])
	}
	if err := ev.ordered(a[0]); err != nil {
		return value{}, err
	}
	m, err := ev.members(a[0])
	if err != nil {
		return value{}, err
	}
	if fn == "values" {
		return array(slices.Clone(m.vals)), ev.charge(int64(len(m.vals))*valueSize + compositeSize)
	}
	if err := ev.charge(int64(len(m.keys))*valueSize + compositeSize); err != nil {
		return value{}, err
	}
	out := make([]value, len(m.keys))
	for i, k := range m.keys {
		out[i] = str(k)
	}
	return array(out), nil
}

// bmpText is the text of the string v, refused when it has a character
// beyond U+FFFF: Python counts and reverses code points, TypeScript UTF-16
// units (splitting a pair).
func (ev *evaluator) bmpText(v value) (string, error) {
	s, err := ev.text(v)
	if err != nil {
		return "", err
	}
	for _, r := range s {
		if r > 0xffff {
			return "", refuse(errAstral)
		}
	}
	return s, nil
}

func fnLength(ev *evaluator, a []value) (value, error) {
	switch a[0].k {
	case kString:
		s, err := ev.bmpText(a[0])
		return number(intSpelling(float64(utf8.RuneCountInString(s)))), err
	case kObject:
		if a[0].f&fOpaque != 0 {
			return value{}, refuse(errOpaque)
		}
		fallthrough
	case kArray:
		n, err := ev.length(a[0])
		return number(intSpelling(float64(n))), err
	}
	return value{}, typeError("length", "a string, an array or an object", a[0])
}

// jsFalsy reports whether JavaScript's || would replace v: false, 0, "".
func jsFalsy(v value) bool {
	switch v.k {
	case kFalse:
		return true
	case kNumber:
		return double(v.s) == 0
	case kString:
		return !truthy(v)
	}
	return false
}

func fnMap(ev *evaluator, a []value) (value, error) {
	if a[1].k != kArray {
		return value{}, typeError("map", "an array", a[1])
	}
	xs, err := ev.elems(a[1])
	if err != nil {
		return value{}, err
	}
	if err := ev.charge(int64(len(xs))*valueSize + compositeSize); err != nil {
		return value{}, err
	}
	out := make([]value, len(xs))
	for i, x := range xs {
		r, err := ev.visit(a[0].c.expr, x)
		if err != nil {
			return value{}, err
		}
		if r.k == kUndef {
			return value{}, refuse(errUndef)
		}
		if jsFalsy(r) {
			// TypeScript's map writes expression.visit(arg) || null.
			return value{}, refuse(errFalsy)
		}
		out[i] = r
	}
	return array(out), nil
}

// homogeneous returns the elements of an array of numbers or of strings,
// and their kind.
func (ev *evaluator) homogeneous(fn string, v value) ([]value, kind, error) {
	if v.k != kArray {
		return nil, 0, typeError(fn, "an array of numbers or of strings", v)
	}
	xs, err := ev.elems(v)
	if err != nil || len(xs) == 0 {
		return xs, kNull, err
	}
	k := xs[0].k
	for _, x := range xs {
		if x.k != k || k != kNumber && k != kString {
			return nil, 0, typeError(fn, "an array of numbers or of strings", x)
		}
	}
	return xs, k, nil
}

// compare compares two numbers or two strings as both runtimes must.
func (ev *evaluator) compare(a, b value) (int, error) {
	if a.k != b.k {
		return 0, refuse(errMixedOrder)
	}
	if a.k == kNumber {
		return compareNumbers(a.s, b.s)
	}
	x, err := ev.text(a)
	if err != nil {
		return 0, err
	}
	y, err := ev.text(b)
	if err != nil {
		return 0, err
	}
	return compareStrings(x, y)
}

// fnExtreme is max (sign 1) and min (-1): the first greatest (least)
// element, as Python's max and min return it.
func fnExtreme(ev *evaluator, a []value, fn string, sign int) (value, error) {
	xs, _, err := ev.homogeneous(fn, a[0])
	if err != nil || len(xs) == 0 {
		return null, err
	}
	best := xs[0]
	for _, x := range xs[1:] {
		c, err := ev.compare(x, best)
		if err != nil {
			return value{}, err
		}
		if c == sign {
			best = x
		}
	}
	return best, nil
}

// keysBy evaluates the expression reference on each element of an array:
// numbers or strings, all of one kind.
func (ev *evaluator) keysBy(fn string, a []value) ([]value, []value, error) {
	if a[0].k != kArray {
		return nil, nil, typeError(fn, "an array", a[0])
	}
	xs, err := ev.elems(a[0])
	if err != nil {
		return nil, nil, err
	}
	if err := ev.charge(int64(len(xs)) * valueSize); err != nil {
		return nil, nil, err
	}
	keys := make([]value, len(xs))
	for i, x := range xs {
		k, err := ev.visit(a[1].c.expr, x)
		if err != nil {
			return nil, nil, err
		}
		if k.k != kNumber && k.k != kString || k.k != keys[0].k && i > 0 {
			if k.k == kUndef {
				return nil, nil, refuse(errUndef)
			}
			return nil, nil, typeError(fn, "expression values that are all numbers or all strings", k)
		}
		keys[i] = k
	}
	return xs, keys, nil
}

func fnExtremeBy(ev *evaluator, a []value, fn string, sign int) (value, error) {
	xs, keys, err := ev.keysBy(fn, a)
	if err != nil || len(xs) == 0 {
		return null, err
	}
	best := 0
	for i := 1; i < len(xs); i++ {
		c, err := ev.compare(keys[i], keys[best])
		if err != nil {
			return value{}, err
		}
		if c == sign {
			best = i
		}
	}
	return xs[best], nil
}

func fnMerge(ev *evaluator, a []value) (value, error) {
	if err := ev.charge(compositeSize); err != nil {
		return value{}, err
	}
	out := &composite{}
	f := flags(0)
	for _, x := range a {
		if x.k != kObject {
			return value{}, typeError("merge", "objects", x)
		}
		if x.f&fOpaque != 0 {
			return value{}, refuse(errOpaque)
		}
		f |= x.f & fUnordered
		m, err := ev.members(x)
		if err != nil {
			return value{}, err
		}
		if err := ev.charge(int64(len(m.keys)) * (valueSize + 16)); err != nil {
			return value{}, err
		}
		if err := ev.step(int64(len(m.keys))); err != nil {
			return value{}, err
		}
		if len(out.keys) == 0 {
			out.keys, out.vals = slices.Clone(m.keys), slices.Clone(m.vals)
			continue
		}
		index, err := ev.nameIndex(out)
		if err != nil {
			return value{}, err
		}
		for i, k := range m.keys {
			if at, ok := index[k]; ok {
				out.vals[at] = m.vals[i]
			} else {
				index[k] = len(out.keys)
				out.keys, out.vals = append(out.keys, k), append(out.vals, m.vals[i])
			}
		}
	}
	return value{k: kObject, c: out, f: f}, nil
}

func fnNotNull(_ *evaluator, a []value) (value, error) {
	for _, x := range a {
		if x.k == kNull {
			continue
		}
		if jsFalsy(x) {
			// TypeScript returns find(…) || null.
			return value{}, refuse(errFalsy)
		}
		return x, nil
	}
	return null, nil
}

// reorder records that TypeScript reordered the array v in place.
func (ev *evaluator) reorder(v value) {
	if ev.stale == nil {
		ev.stale = map[identity]struct{}{}
	}
	ev.stale[v.identity()] = struct{}{}
}

func fnReverse(ev *evaluator, a []value) (value, error) {
	switch a[0].k {
	case kString:
		s, err := ev.bmpText(a[0])
		if err != nil {
			return value{}, err
		}
		if err := ev.charge(int64(len(s)) * 5); err != nil {
			return value{}, err
		}
		rs := []rune(s)
		slices.Reverse(rs)
		return str(string(rs)), nil
	case kArray:
		xs, err := ev.elems(a[0])
		if err != nil {
			return value{}, err
		}
		if err := ev.charge(int64(len(xs))*valueSize + compositeSize); err != nil {
			return value{}, err
		}
		out := slices.Clone(xs)
		slices.Reverse(out)
		if len(out) > 1 {
			ev.reorder(a[0])
		}
		return array(out), nil
	}
	return value{}, typeError("reverse", "a string or an array", a[0])
}

// collatable reports whether localeCompare (ICU's root collation, as
// Powertools TypeScript's sort() uses it under Lambda's en-US locale)
// orders the strings as Python does (by code point): when every string is
// made of ASCII digits and lower-case letters, or every string of ASCII
// digits and upper-case letters.
func collatable(ss []string) bool {
	lower, upper := true, true
	for _, s := range ss {
		for i := 0; i < len(s); i++ {
			c := s[i]
			digit := c >= '0' && c <= '9'
			lower = lower && (digit || c >= 'a' && c <= 'z')
			upper = upper && (digit || c >= 'A' && c <= 'Z')
		}
	}
	return lower || upper
}

func fnSort(ev *evaluator, a []value) (value, error) {
	xs, k, err := ev.homogeneous("sort", a[0])
	if err != nil || len(xs) < 2 {
		if err == nil {
			return array(slices.Clone(xs)), nil
		}
		return value{}, err
	}
	if err := ev.charge(int64(len(xs))*(valueSize+16+8) + compositeSize); err != nil {
		return value{}, err
	}
	if k == kString {
		ss := make([]string, len(xs))
		for i, x := range xs {
			if ss[i], err = ev.text(x); err != nil {
				return value{}, err
			}
		}
		if !collatable(ss) {
			return value{}, refuse(errCollation)
		}
	} else {
		for _, x := range xs {
			if math.IsInf(double(x.s), 0) {
				// TypeScript's comparator a - b is NaN for two infinities.
				return value{}, refuse(errOverflow)
			}
		}
	}
	out, moved, err := ev.sorted(xs, xs)
	if moved {
		ev.reorder(a[0])
	}
	return out, err
}

// sorted sorts xs by keys (stable, as both runtimes' sorts are) into a new
// array, and reports whether the order changed.
func (ev *evaluator) sorted(xs, keys []value) (value, bool, error) {
	if err := ev.step(int64(len(xs)) * int64(1+bitLen(len(xs)))); err != nil {
		return value{}, false, err
	}
	order := make([]int, len(xs))
	for i := range order {
		order[i] = i
	}
	var err error
	slices.SortStableFunc(order, func(i, j int) int {
		if err != nil {
			return 0
		}
		var c int
		c, err = ev.compare(keys[i], keys[j])
		return c
	})
	if err != nil {
		return value{}, false, err
	}
	out := make([]value, len(xs))
	moved := false
	for i, at := range order {
		out[i] = xs[at]
		moved = moved || at != i
	}
	return array(out), moved, nil
}

func bitLen(n int) int {
	b := 0
	for ; n > 0; n >>= 1 {
		b++
	}
	return b
}

func fnSortBy(ev *evaluator, a []value) (value, error) {
	xs, keys, err := ev.keysBy("sort_by", a)
	if err != nil {
		return value{}, err
	}
	if err := ev.charge(int64(len(xs))*(valueSize+8) + compositeSize); err != nil {
		return value{}, err
	}
	out, _, err := ev.sorted(xs, keys) // a copy in both runtimes
	return out, err
}

func fnToArray(ev *evaluator, a []value) (value, error) {
	if a[0].k == kArray {
		return a[0], nil
	}
	return array([]value{a[0]}), ev.charge(valueSize + compositeSize)
}

// fnToNumber: a number is itself; a string that spells a JSON number is
// that number (Python's int() or float() and JavaScript's Number() read it
// alike); an ASCII string that neither Python's int() and float() nor
// JavaScript's Number() read is null in both; other strings are refused
// (one runtime reads them, the other not or otherwise: " 12", "1_000",
// "0x10", "Infinity", and Number("") is 0); anything else is null.
func fnToNumber(ev *evaluator, a []value) (value, error) {
	switch a[0].k {
	case kNumber:
		return a[0], nil
	case kString:
		s, err := ev.text(a[0])
		if err != nil {
			return value{}, err
		}
		if len(s) <= maxNumberLen && s != "" && (s[0] == '-' || s[0] >= '0' && s[0] <= '9') &&
			s == trimJSONSpace(s) && (*evaluator)(nil).checkJSON(s) == nil {
			return number(s), nil
		}
		if plainASCII(s) && !jsNumeric(s) && !pyNumeric(s) {
			return null, nil
		}
		return value{}, refuse(errNotANumber)
	}
	return null, nil
}

// plainASCII reports whether s is printable ASCII (control characters
// are white space to one runtime and not the other).
func plainASCII(s string) bool {
	for i := 0; i < len(s); i++ {
		if s[i] < ' ' || s[i] > '~' {
			return false
		}
	}
	return true
}

// jsNumeric reports whether JavaScript's Number() reads the printable
// ASCII string s as a number (ECMAScript's StringNumericLiteral).
func jsNumeric(s string) bool {
	s = strings.Trim(s, " ")
	if s == "" {
		return true // 0
	}
	if len(s) > 2 && s[0] == '0' {
		digits := map[byte]string{'x': "0123456789abcdefABCDEF", 'X': "0123456789abcdefABCDEF",
			'o': "01234567", 'O': "01234567", 'b': "01", 'B': "01"}[s[1]]
		if digits != "" {
			return strings.Trim(s[2:], digits) == ""
		}
	}
	s = strings.TrimLeft(s[:1], "+-") + s[1:]
	return s == "Infinity" || decimal(s, false)
}

// pyNumeric reports whether Python's int() or float() reads the printable
// ASCII string s.
func pyNumeric(s string) bool {
	s = strings.Trim(s, " ")
	if s != "" && (s[0] == '+' || s[0] == '-') {
		s = s[1:]
	}
	switch strings.ToLower(s) {
	case "inf", "infinity", "nan":
		return true
	}
	return decimal(s, true)
}

// decimal reports whether s is digits, an optional fraction and an
// optional exponent ("5.", ".5" and "5" included), with single underscores
// between digits when underscores is set.
func decimal(s string, underscores bool) bool {
	digits := func(s string) (rest string, n int) {
		for len(s) > 0 && (s[0] >= '0' && s[0] <= '9' || underscores && s[0] == '_' && n > 0 && len(s) > 1 && s[1] >= '0' && s[1] <= '9') {
			if s[0] != '_' {
				n++
			}
			s = s[1:]
		}
		return s, n
	}
	s, whole := digits(s)
	frac := 0
	if len(s) > 0 && s[0] == '.' {
		s, frac = digits(s[1:])
	}
	if whole+frac == 0 {
		return false
	}
	if len(s) > 0 && (s[0] == 'e' || s[0] == 'E') {
		s = s[1:]
		if len(s) > 0 && (s[0] == '+' || s[0] == '-') {
			s = s[1:]
		}
		var exp int
		if s, exp = digits(s); exp == 0 {
			return false
		}
	}
	return s == ""
}

func fnType(_ *evaluator, a []value) (value, error) {
	return str(a[0].k.String()), nil
}

// fnToString: a string is itself; anything else is spelled as JSON, which
// Python (json.dumps with separators (',', ':'), ASCII only) and
// TypeScript (JSON.stringify) must spell alike.
func fnToString(ev *evaluator, a []value) (value, error) {
	if a[0].k == kString {
		return a[0], nil
	}
	js, err := ev.spell(nil, a[0])
	if err != nil {
		return value{}, err
	}
	return str(unsafeString(js)), nil
}

// fnPowertoolsJSON reads JSON text under the package's rules (see
// jsonrules.go): json.loads in Python, JSON.parse in TypeScript.
func fnPowertoolsJSON(ev *evaluator, a []value) (value, error) {
	return ev.decodeOnce("powertools_json", a[0], func(s string) (value, error) {
		if err := ev.checkJSON(s); err != nil {
			return value{}, err
		}
		return rawValue(trimJSONSpace(s)), nil
	})
}

// decodeOnce is a powertools_* function fn of the string a: decode's
// result on its text, charged a step a byte, once per string in an
// evaluation.
func (ev *evaluator) decodeOnce(fn string, a value, decode func(s string) (value, error)) (value, error) {
	if a.k != kString {
		return value{}, typeError(fn, "a string", a)
	}
	key := memoKey{fn, a.identity()}
	if ev.hasFirst && ev.firstKey == key {
		return ev.first, nil
	}
	if v, ok := ev.memo[key]; ok {
		return v, nil
	}
	s, err := ev.text(a)
	if err != nil {
		return value{}, err
	}
	if err := ev.step(int64(len(s))); err != nil {
		return value{}, err
	}
	v, err := decode(s)
	if err != nil {
		return value{}, err
	}
	if !ev.hasFirst {
		ev.first, ev.firstKey, ev.hasFirst = v, key, true
		return v, nil
	}
	if ev.memo == nil {
		ev.memo = map[memoKey]value{}
	}
	ev.memo[key] = v
	return v, nil
}

// fnBase64 is powertools_base64 and powertools_base64_gzip. Both runtimes
// must decode alike: the text must be what TypeScript's fromBase64 accepts
// (length a multiple of 4, the standard alphabet, up to two '=' at the end;
// Python's b64decode also accepts more), the gzip data one member with
// nothing after it, and the result valid UTF-8 (Python's decode() raises,
// TypeScript writes U+FFFD), without a leading byte order mark for
// powertools_base64 (TypeScript's TextDecoder drops it).
func fnBase64(ev *evaluator, a []value, gz bool) (value, error) {
	fn := "powertools_base64"
	if gz {
		fn += "_gzip"
	}
	return ev.decodeOnce(fn, a[0], func(s string) (value, error) {
		return ev.decodeBase64(s, gz)
	})
}

// decodeBase64 decodes s for fnBase64.
func (ev *evaluator) decodeBase64(s string, gz bool) (value, error) {
	if !strictBase64(s) {
		return value{}, refuse(errBase64)
	}
	if err := ev.charge(int64(base64.StdEncoding.DecodedLen(len(s)))); err != nil {
		return value{}, err
	}
	b, err := base64.StdEncoding.DecodeString(s)
	if err != nil {
		return value{}, refuse(errBase64)
	}
	if gz {
		if b, err = inflate.GunzipMember(b, int(min(ev.decoded, maxDecoded))); err != nil {
			if inflate.IsTooLarge(err) {
				return value{}, refuse(errDecodedSize)
			}
			return value{}, refuse(errGzip)
		}
	}
	if ev.decoded -= int64(len(b)); ev.decoded < 0 {
		return value{}, refuse(errDecodedSize)
	}
	ev.grow(int64(len(b)))
	if gz {
		if err := ev.charge(int64(len(b))); err != nil {
			return value{}, err
		}
	}
	if !utf8.Valid(b) {
		return value{}, refuse(errUTF8)
	}
	if !gz && len(b) >= 3 && string(b[:3]) == "\ufeff" {
		return value{}, refuse(errBOM)
	}
	return str(unsafeString(b)), nil
}

// strictBase64 reports whether s is what Powertools TypeScript's
// fromBase64 accepts: ^[A-Za-z0-9+/]*={0,2}$ with a length that is a
// multiple of 4.
func strictBase64(s string) bool {
	if len(s)%4 != 0 {
		return false
	}
	end := len(s)
	for n := 0; n < 2 && end > 0 && s[end-1] == '='; n++ {
		end--
	}
	for i := 0; i < end; i++ {
		c := s[i]
		if !(c >= 'A' && c <= 'Z' || c >= 'a' && c <= 'z' || c >= '0' && c <= '9' || c == '+' || c == '/') {
			return false
		}
	}
	return true
}
