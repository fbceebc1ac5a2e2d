package jmespath

import (
	"strings"
	"unsafe"
)

// Budgets of one evaluation, in proportion to the bytes it reads (the
// record's strings and what powertools_base64(_gzip) decoded): what it may
// allocate, and how many nodes and elements it may go through. They make
// Select's cost linear in the message whatever the expression (an
// expression such as [@,@][] | [@,@][] | … doubles its work per step).
const (
	allocPerByte = 14
	allocFixed   = 512 << 10
	stepsPerByte = 64
	stepsFixed   = 1 << 20
	// maxDecoded bounds the bytes powertools_base64 and
	// powertools_base64_gzip produce in one evaluation, together: SQS's
	// largest message.
	maxDecoded = 1 << 20
)

// valueSize is what the budget charges for one value held in a slice, and
// compositeSize for the header of an array or object the evaluation builds.
const (
	valueSize     = int64(unsafe.Sizeof(value{}))
	compositeSize = 64
)

// evaluator is one evaluation's state.
type evaluator struct {
	alloc   int64 // bytes it may still allocate
	steps   int64 // nodes and elements it may still visit
	decoded int64 // bytes powertools_base64(_gzip) may still produce
	// stale holds the arrays that Powertools TypeScript's sort() and
	// reverse() reorder in place (Python's make copies): reading one again
	// would see a different order in each runtime.
	stale map[identity]struct{}
	// memo holds powertools_* results by function and argument, so that
	// an expression that decodes the body several times decodes it once:
	// the first in first (under firstKey, when hasFirst), the others in
	// memo.
	first    value
	firstKey memoKey
	hasFirst bool
	memo     map[memoKey]value
}

type memoKey struct {
	fn string
	id identity
}

func newEvaluator(input int64) *evaluator {
	return &evaluator{
		alloc:   allocPerByte*input + allocFixed,
		steps:   stepsPerByte*input + stepsFixed,
		decoded: maxDecoded,
	}
}

// grow adds what n more bytes read allow the evaluation to spend.
func (ev *evaluator) grow(n int64) {
	ev.alloc += allocPerByte * n
	ev.steps += stepsPerByte * n
}

// charge takes n bytes from the allocation budget.
func (ev *evaluator) charge(n int64) error {
	if ev.alloc -= n; ev.alloc < 0 {
		return refuse(errMemory)
	}
	return nil
}

// step takes n from the step budget.
func (ev *evaluator) step(n int64) error {
	if ev.steps -= n; ev.steps < 0 {
		return refuse(errSteps)
	}
	return nil
}

// checkStale refuses an array that TypeScript's sort() or reverse()
// reordered in place.
func (ev *evaluator) checkStale(v value) error {
	if len(ev.stale) == 0 {
		return nil
	}
	if _, ok := ev.stale[v.identity()]; ok {
		return refuse(errMutated)
	}
	return nil
}

// length returns the number of elements of an array or members of an
// object.
func (ev *evaluator) length(v value) (int, error) {
	if err := ev.checkStale(v); err != nil {
		return 0, err
	}
	if !v.raw() {
		return len(v.c.vals), nil
	}
	// Reading a raw value's members skips over their text: the steps
	// count its bytes, so reading nested values again and again (deep
	// nesting) stays within the budget.
	if err := ev.step(int64(len(v.s))); err != nil {
		return 0, err
	}
	n := 0
	eachRaw(v.s, func(string, string) bool { n++; return true })
	return n, nil
}

// each calls fn with each element of the array v, or each member of the
// object v (its name decoded), in Python's order (the order sent), until fn
// returns false or an error.
func (ev *evaluator) each(v value, fn func(key string, e value) (bool, error)) error {
	if err := ev.checkStale(v); err != nil {
		return err
	}
	if !v.raw() {
		for i, e := range v.c.vals {
			if err := ev.step(1); err != nil {
				return err
			}
			var key string
			if v.c.keys != nil {
				key = v.c.keys[i]
			}
			if more, err := fn(key, e); err != nil || !more {
				return err
			}
		}
		return nil
	}
	if err := ev.step(int64(len(v.s))); err != nil {
		return err
	}
	var err error
	eachRaw(v.s, func(key, text string) bool {
		if strings.IndexByte(key, '\\') >= 0 {
			if err = ev.charge(2 * int64(len(key))); err != nil {
				return false
			}
		}
		if key != "" {
			key = decodeString(key)
		}
		var more bool
		more, err = fn(key, rawValue(text))
		return more && err == nil
	})
	return err
}

// elems returns the elements of the array v (or the values of the object
// v), charging the budget for the slice.
func (ev *evaluator) elems(v value) ([]value, error) {
	if !v.raw() {
		if err := ev.checkStale(v); err != nil {
			return nil, err
		}
		return v.c.vals, nil
	}
	n, err := ev.length(v)
	if err != nil {
		return nil, err
	}
	if err := ev.charge(int64(n) * valueSize); err != nil {
		return nil, err
	}
	out := make([]value, 0, n)
	return out, ev.each(v, func(_ string, e value) (bool, error) {
		out = append(out, e)
		return true, nil
	})
}

// member returns the member name of the object v, and whether it has one.
func (ev *evaluator) member(v value, name string) (value, bool, error) {
	if !v.raw() {
		for i, k := range v.c.keys {
			if k == name {
				return v.c.vals[i], true, nil
			}
		}
		return value{}, false, ev.step(int64(len(v.c.keys)))
	}
	var found value
	ok := false
	scanned := int64(len(v.s))
	var err error
	eachRaw(v.s, func(key, text string) bool {
		if strings.IndexByte(key, '\\') >= 0 {
			if err = ev.charge(2 * int64(len(key))); err != nil {
				return false
			}
		}
		if keyEquals(key, name) {
			found, ok = rawValue(text), true
			scanned = offset(v.s, text) + int64(len(text))
			return false
		}
		return true
	})
	if err != nil {
		return value{}, false, err
	}
	return found, ok, ev.step(scanned)
}

// offset is the position of sub, a substring of s, in s.
func offset(s, sub string) int64 {
	return int64(uintptr(unsafe.Pointer(unsafe.StringData(sub))) - uintptr(unsafe.Pointer(unsafe.StringData(s))))
}

// text returns the string value v, decoded.
func (ev *evaluator) text(v value) (string, error) {
	if !v.raw() {
		return v.s, nil
	}
	if err := ev.charge(2 * int64(len(v.s))); err != nil {
		return "", err
	}
	return decodeString(v.s), nil
}

// truthy is JMESPath's truth, the same in both runtimes: false, null, "",
// [], {} and a comparison without a value are false.
func truthy(v value) bool {
	switch v.k {
	case kNull, kFalse, kUndef:
		return false
	case kString:
		if v.raw() {
			return v.s != `""`
		}
		return v.s != ""
	case kArray, kObject:
		if v.raw() {
			i := skipSpace(v.s, 1)
			return v.s[i] != ']' && v.s[i] != '}'
		}
		return len(v.c.vals) > 0
	}
	return true
}

// objectProto lists the properties every JavaScript object inherits:
// TypeScript's field access (name in value) finds them on an object that
// lacks the member, where Python finds nothing.
var objectProto = map[string]bool{
	"constructor": true, "__defineGetter__": true, "__defineSetter__": true, "hasOwnProperty": true,
	"__lookupGetter__": true, "__lookupSetter__": true, "isPrototypeOf": true, "propertyIsEnumerable": true,
	"toString": true, "valueOf": true, "__proto__": true, "toLocaleString": true,
}

// visit evaluates n on the current value v.
func (ev *evaluator) visit(n *node, v value) (value, error) {
	if err := ev.step(1); err != nil {
		return value{}, err
	}
	switch n.typ {
	case nField:
		if v.k != kObject {
			return null, nil
		}
		m, ok, err := ev.member(v, n.name)
		if err != nil || ok {
			return m, err
		}
		if objectProto[n.name] {
			return value{}, refuse(errProtoName)
		}
		return null, nil
	case nSubexpression, nIndexExpression, nPipe:
		var err error
		for _, c := range n.children {
			if v, err = ev.visit(c, v); err != nil {
				return value{}, err
			}
		}
		return v, nil
	case nCurrent, nIdentity:
		return v, nil
	case nLiteral:
		return n.lit, nil
	case nExpref:
		return value{k: kExpref, c: &composite{expr: n.children[0]}}, ev.charge(compositeSize)
	case nComparator:
		return ev.comparator(n, v)
	case nFunction:
		return ev.function(n, v)
	case nProjection, nValueProjection, nFilterProjection:
		return ev.projection(n, v)
	case nFlatten:
		base, err := ev.visit(n.children[0], v)
		if err != nil || base.k != kArray {
			return null, err
		}
		return ev.flatten(base)
	case nIndex:
		if v.k != kArray {
			return null, nil
		}
		return ev.index(v, n.index)
	case nSlice:
		if v.k != kArray {
			return null, nil
		}
		return ev.slice(v, n)
	case nMultiSelectList, nMultiSelectHash:
		return ev.multiSelect(n, v)
	case nOr:
		l, err := ev.visit(n.children[0], v)
		if err != nil || truthy(l) {
			return l, err
		}
		return ev.visit(n.children[1], v)
	case nAnd:
		l, err := ev.visit(n.children[0], v)
		if err != nil || !truthy(l) {
			return l, err
		}
		return ev.visit(n.children[1], v)
	case nNot:
		x, err := ev.visit(n.children[0], v)
		if err != nil {
			return value{}, err
		}
		return boolean(!truthy(x)), nil
	}
	panic("jmespath: unknown node")
}

// projection evaluates a projection: the right side on each element of
// the left side's array (its object's values for a value projection) that
// the filter keeps, if there is one.
func (ev *evaluator) projection(n *node, v value) (value, error) {
	want := kArray
	if n.typ == nValueProjection {
		want = kObject
	}
	base, err := ev.visit(n.children[0], v)
	if err != nil || base.k != want {
		return null, err
	}
	if want == kObject {
		if err := ev.ordered(base); err != nil {
			return value{}, err
		}
	}
	return ev.project(base, func(e value) (value, bool, error) {
		if n.typ == nFilterProjection {
			cond, err := ev.visit(n.children[2], e)
			if err != nil || !truthy(cond) {
				return value{}, false, err
			}
		}
		r, err := ev.visit(n.children[1], e)
		return r, true, err
	})
}

// multiSelect evaluates a multi-select list or hash: an array of its
// children's values, or an object of them under its keys.
func (ev *evaluator) multiSelect(n *node, v value) (value, error) {
	if v.k == kNull {
		return null, nil
	}
	if v.k == kUndef {
		return value{}, refuse(errUndef)
	}
	hash := n.typ == nMultiSelectHash
	size := int64(compositeSize)
	if hash {
		size += int64(len(n.children)) * 16
	}
	if err := ev.charge(size); err != nil {
		return value{}, err
	}
	vals, err := ev.visitAll(n.children, v)
	if err != nil {
		return value{}, err
	}
	if !hash {
		return array(vals), nil
	}
	// set writes at most one value an iteration, so in vals' own array
	// no value is overwritten before it is read.
	obj := &composite{keys: make([]string, 0, len(n.keys)), vals: vals[:0]}
	for i, r := range vals {
		obj.set(n.keys[i], r)
	}
	return value{k: kObject, c: obj}, nil
}

// visitAll evaluates each of nodes on v, in order, refusing an undefined
// result.
func (ev *evaluator) visitAll(nodes []*node, v value) ([]value, error) {
	if err := ev.charge(int64(len(nodes)) * valueSize); err != nil {
		return nil, err
	}
	out := make([]value, len(nodes))
	for i, c := range nodes {
		r, err := ev.visit(c, v)
		if err != nil {
			return nil, err
		}
		if r.k == kUndef {
			return nil, refuse(errUndef)
		}
		out[i] = r
	}
	return out, nil
}

// values returns an empty slice with room for n values, charging the
// budget for it and for the array it becomes.
func (ev *evaluator) values(n int) ([]value, error) {
	if err := ev.charge(int64(n)*valueSize + compositeSize); err != nil {
		return nil, err
	}
	return make([]value, 0, n), nil
}

// set sets the member name of the object c, in place when it has it (as a
// Python dict and a JavaScript object do).
func (c *composite) set(name string, v value) {
	for i, k := range c.keys {
		if k == name {
			c.vals[i] = v
			return
		}
	}
	c.keys = append(c.keys, name)
	c.vals = append(c.vals, v)
}

// project collects fn's results on each element of base (an array, or an
// object's values) that fn keeps, leaving out nulls, as both runtimes do.
func (ev *evaluator) project(base value, fn func(value) (value, bool, error)) (value, error) {
	n, err := ev.length(base)
	if err != nil {
		return value{}, err
	}
	out, err := ev.values(n)
	if err != nil {
		return value{}, err
	}
	err = ev.each(base, func(_ string, e value) (bool, error) {
		r, keep, err := fn(e)
		if err != nil || !keep {
			return err == nil, err
		}
		if r.k == kUndef {
			// Python drops None from a projection, TypeScript keeps
			// undefined.
			return false, refuse(errUndef)
		}
		if r.k != kNull {
			out = append(out, r)
		}
		return true, nil
	})
	if err != nil {
		return value{}, err
	}
	return array(out), nil
}

func (ev *evaluator) flatten(base value) (value, error) {
	total := 0
	err := ev.each(base, func(_ string, e value) (bool, error) {
		if e.k != kArray {
			total++
			return true, nil
		}
		n, err := ev.length(e)
		total += n
		return true, err
	})
	if err != nil {
		return value{}, err
	}
	out, err := ev.values(total)
	if err != nil {
		return value{}, err
	}
	err = ev.each(base, func(_ string, e value) (bool, error) {
		if e.k != kArray {
			out = append(out, e)
			return true, nil
		}
		return true, ev.each(e, func(_ string, x value) (bool, error) {
			out = append(out, x)
			return true, nil
		})
	})
	return array(out), err
}

func (ev *evaluator) index(v value, i int) (value, error) {
	n, err := ev.length(v)
	if err != nil {
		return value{}, err
	}
	if i < 0 {
		i += n
	}
	if i < 0 || i >= n {
		return null, nil
	}
	if !v.raw() {
		return v.c.vals[i], nil
	}
	var found value
	at := 0
	err = ev.each(v, func(_ string, e value) (bool, error) {
		if at == i {
			found = e
			return false, nil
		}
		at++
		return true, nil
	})
	return found, err
}

// slice is Python's list[start:stop:step].
func (ev *evaluator) slice(v value, n *node) (value, error) {
	elems, err := ev.elems(v)
	if err != nil {
		return value{}, err
	}
	length := len(elems)
	step := 1
	if n.hasSlice[2] {
		step = n.slice[2]
	}
	bound := func(i int, given bool, def int) int {
		if !given {
			return def
		}
		if i < 0 {
			i += length
			if i < 0 {
				if step < 0 {
					return -1
				}
				return 0
			}
		} else if i >= length {
			if step < 0 {
				return length - 1
			}
			return length
		}
		return i
	}
	var start, stop int
	if step > 0 {
		start, stop = bound(n.slice[0], n.hasSlice[0], 0), bound(n.slice[1], n.hasSlice[1], length)
	} else {
		start, stop = bound(n.slice[0], n.hasSlice[0], length-1), bound(n.slice[1], n.hasSlice[1], -1)
	}
	count := 0
	if step > 0 && start < stop {
		count = (stop - start + step - 1) / step
	} else if step < 0 && start > stop {
		count = (start - stop - step - 1) / -step
	}
	out, err := ev.values(count)
	if err != nil {
		return value{}, err
	}
	for i := start; len(out) < count; i += step {
		out = append(out, elems[i])
	}
	return array(out), nil
}

// ordered refuses an object whose member order the two runtimes see
// differently, for what reveals it: JavaScript enumerates the members
// whose names are array indices first, in numeric order, then the others
// in the order sent; Python in the order sent. Objects of the record
// (attributes, messageAttributes) come in an order Lambda does not give.
func (ev *evaluator) ordered(obj value) error {
	if obj.f&fOpaque != 0 {
		return refuse(errOpaque)
	}
	n, err := ev.length(obj)
	if err != nil || n < 2 {
		return err
	}
	if obj.f&fUnordered != 0 {
		return refuse(errUnordered)
	}
	// The orders agree when the index-named members come first, ascending.
	last, others := int64(-1), false
	return ev.each(obj, func(key string, _ value) (bool, error) {
		i := arrayIndex(key)
		switch {
		case i < 0:
			others = true
		case others || i <= last:
			return false, refuse(errIndexKeys)
		default:
			last = i
		}
		return true, nil
	})
}

// arrayIndex returns the number of a member name that JavaScript treats as
// an array index (the canonical decimal spelling of 0 to 2^32-2), or -1.
func arrayIndex(k string) int64 {
	if k == "" || len(k) > 10 || (k[0] == '0' && len(k) > 1) {
		return -1
	}
	var n int64
	for i := 0; i < len(k); i++ {
		if k[i] < '0' || k[i] > '9' {
			return -1
		}
		n = n*10 + int64(k[i]-'0')
	}
	if n > 1<<32-2 {
		return -1
	}
	return n
}

// reserve returns dst with room for n more bytes, charging the budget for
// any new allocation.
func (ev *evaluator) reserve(dst []byte, n int) ([]byte, error) {
	if len(dst)+n <= cap(dst) {
		return dst, nil
	}
	size := max(2*cap(dst), len(dst)+n, 64)
	if err := ev.charge(int64(size)); err != nil {
		return nil, err
	}
	return append(make([]byte, 0, size), dst...), nil
}

// nameIndex maps an object's names to their positions, charging the budget.
func (ev *evaluator) nameIndex(c *composite) (map[string]int, error) {
	if err := ev.charge(int64(len(c.keys)) * 64); err != nil {
		return nil, err
	}
	m := make(map[string]int, len(c.keys))
	for i, k := range c.keys {
		m[k] = i
	}
	return m, nil
}
