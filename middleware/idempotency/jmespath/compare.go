package jmespath

import (
	"strings"
	"unicode/utf8"
)

// comparator evaluates ==, !=, <, <=, > and >=.
func (ev *evaluator) comparator(n *node, v value) (value, error) {
	l, err := ev.visit(n.children[0], v)
	if err != nil {
		return value{}, err
	}
	r, err := ev.visit(n.children[1], v)
	if err != nil {
		return value{}, err
	}
	if l.k == kUndef || r.k == kUndef {
		return value{}, refuse(errUndef)
	}
	switch n.op {
	case tEq, tNe:
		eq, err := ev.equal(l, r)
		if err != nil {
			return value{}, err
		}
		return boolean(eq == (n.op == tEq)), nil
	}
	if l.k == kNumber && r.k == kNumber {
		c, err := compareNumbers(l.s, r.s)
		if err != nil {
			return value{}, err
		}
		switch n.op {
		case tLt:
			return boolean(c < 0), nil
		case tLte:
			return boolean(c <= 0), nil
		case tGt:
			return boolean(c > 0), nil
		}
		return boolean(c >= 0), nil
	}
	comparable := func(k kind) bool { return k == kNumber || k == kString }
	switch {
	case l.k == kString && r.k == kString:
		// Python orders strings; TypeScript answers undefined. Both are
		// false when Python's answer is.
		a, err := ev.text(l)
		if err != nil {
			return value{}, err
		}
		b, err := ev.text(r)
		if err != nil {
			return value{}, err
		}
		c := strings.Compare(a, b)
		if n.op == tLt && c < 0 || n.op == tLte && c <= 0 || n.op == tGt && c > 0 || n.op == tGte && c >= 0 {
			return value{}, refuse(errStringOrder)
		}
		return undef, nil
	case comparable(l.k) && comparable(r.k):
		return value{}, refuse(errMixedOrder) // Python raises TypeError
	}
	return undef, nil // Python: None; TypeScript: undefined
}

// equal is ==: Python's (jmespath.py's _equals) and TypeScript's
// (isStrictEqual) must agree, or the comparison is refused.
func (ev *evaluator) equal(a, b value) (bool, error) {
	// jmespath.py: 0 or 1 against a boolean is unequal (Python's own ==
	// would say 1 == True); TypeScript compares types first.
	if a.k == kNumber && (b.k == kTrue || b.k == kFalse) || b.k == kNumber && (a.k == kTrue || a.k == kFalse) {
		return false, nil
	}
	py, err := ev.deepEqual(a, b, true)
	if err != nil {
		return false, err
	}
	js, err := ev.deepEqual(a, b, false)
	if err != nil {
		return false, err
	}
	if py != js {
		return false, refuse(errEquality)
	}
	return py, nil
}

// deepEqual is Python's == on the values json.loads makes (python set) or
// TypeScript's isStrictEqual.
func (ev *evaluator) deepEqual(a, b value, python bool) (bool, error) {
	if err := ev.step(1); err != nil {
		return false, err
	}
	boolNum := func(k kind) bool { return k == kTrue || k == kFalse || k == kNumber }
	switch {
	case a.k == kNumber && b.k == kNumber:
		if python {
			return pyEqualNumbers(a.s, b.s), nil
		}
		return jsEqualNumbers(a.s, b.s), nil
	case python && boolNum(a.k) && boolNum(b.k):
		// Python: True == 1 == 1.0, False == 0 (inside arrays and objects)
		return pyEqualNumbers(boolNumber(a), boolNumber(b)), nil
	case a.k != b.k:
		return false, nil
	case a.k == kString:
		x, err := ev.text(a)
		if err != nil {
			return false, err
		}
		y, err := ev.text(b)
		return x == y, err
	case a.k == kArray:
		x, err := ev.elems(a)
		if err != nil {
			return false, err
		}
		y, err := ev.elems(b)
		if err != nil || len(x) != len(y) {
			return false, err
		}
		for i := range x {
			if eq, err := ev.deepEqual(x[i], y[i], python); err != nil || !eq {
				return false, err
			}
		}
		return true, nil
	case a.k == kObject:
		if a.f&fOpaque != 0 || b.f&fOpaque != 0 {
			return false, refuse(errOpaque)
		}
		x, err := ev.members(a)
		if err != nil {
			return false, err
		}
		y, err := ev.members(b)
		if err != nil || len(x.keys) != len(y.keys) {
			return false, err
		}
		index, err := ev.nameIndex(y)
		if err != nil {
			return false, err
		}
		for i, k := range x.keys {
			j, ok := index[k]
			if !ok {
				return false, nil
			}
			if eq, err := ev.deepEqual(x.vals[i], y.vals[j], python); err != nil || !eq {
				return false, err
			}
		}
		return true, nil
	}
	return true, nil // null, true, false
}

func boolNumber(v value) string {
	switch v.k {
	case kTrue:
		return "1"
	case kFalse:
		return "0"
	}
	return v.s
}

// members returns the object v's names and values, charging the budget.
func (ev *evaluator) members(v value) (*composite, error) {
	if !v.raw() {
		if err := ev.checkStale(v); err != nil {
			return nil, err
		}
		return v.c, nil
	}
	n, err := ev.length(v)
	if err != nil {
		return nil, err
	}
	if err := ev.charge(int64(n)*(valueSize+16) + compositeSize); err != nil {
		return nil, err
	}
	c := &composite{keys: make([]string, 0, n), vals: make([]value, 0, n)}
	return c, ev.each(v, func(key string, e value) (bool, error) {
		c.keys = append(c.keys, key)
		c.vals = append(c.vals, e)
		return true, nil
	})
}

// compareStrings compares two strings as Python does (by code point) and
// TypeScript's < and > do (by UTF-16 unit), refusing when they disagree: at
// the first difference, a character beyond U+FFFF against one from U+E000
// to U+FFFF.
func compareStrings(a, b string) (int, error) {
	c := strings.Compare(a, b)
	if c == 0 {
		return 0, nil
	}
	i := 0
	for i < len(a) && i < len(b) && a[i] == b[i] {
		i++
	}
	if i == len(a) || i == len(b) {
		return c, nil // a prefix of the other
	}
	for i > 0 && !utf8.RuneStart(a[i]) {
		i--
	}
	ra, _ := utf8.DecodeRuneInString(a[i:])
	rb, _ := utf8.DecodeRuneInString(b[i:])
	if (ra > 0xffff) != (rb > 0xffff) && min(ra, rb) >= 0xe000 {
		return 0, refuse(errUTF16Order)
	}
	return c, nil
}
