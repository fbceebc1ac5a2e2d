package jmespath

import (
	"bytes"
	"encoding/json"
	"fmt"

	"github.com/jmespath-community/go-jmespath/pkg/parsing"
)

// need is what an expression reads of one value of a document: the whole
// value, or some members of an object, or elements of an array (all of
// them through elems, or the first few through index), each with what is
// read of it in turn. A document decoded for an expression holds only what
// the expression can read, so that a key taken from a large event costs
// what the key costs, not what the event does (see prune).
type need struct {
	whole  bool
	fields map[string]*need
	elems  *need         // every element of an array
	index  map[int]*need // elements by their non-negative index
}

func (n *need) field(name string) *need {
	if n.fields == nil {
		n.fields = map[string]*need{}
	}
	c := n.fields[name]
	if c == nil {
		c = &need{}
		n.fields[name] = c
	}
	return c
}

func (n *need) elem() *need {
	if n.elems == nil {
		n.elems = &need{}
	}
	return n.elems
}

func (n *need) at(i int) *need {
	if n.index == nil {
		n.index = map[int]*need{}
	}
	c := n.index[i]
	if c == nil {
		c = &need{}
		n.index[i] = c
	}
	return c
}

// mark records that the value at n is read whole.
func mark(n *need) {
	if n != nil {
		n.whole = true
	}
}

// needs returns what the expression expr reads of the document it is
// evaluated on, or nil when that cannot be told (a construct the walk does
// not know, a variable, an expression reference): then the whole document
// is decoded.
func needs(expr string) *need {
	ast, err := parsing.NewParser().Parse(expr)
	if err != nil {
		return nil
	}
	root := &need{}
	w := walker{root: root}
	mark(w.walk(ast, root))
	if w.unknown {
		return nil
	}
	return root
}

type walker struct {
	root    *need
	unknown bool
}

// walk records what node reads of the value at cur, and returns where its
// result lies in the document, or nil when the result is a value the
// expression computed: then everything it was computed from is marked
// whole, so anything read from the result is covered.
func (w *walker) walk(node parsing.ASTNode, cur *need) *need {
	if cur == nil || w.unknown {
		return nil
	}
	ch := node.Children
	switch node.NodeType {
	case parsing.ASTField:
		name, ok := node.Value.(string)
		if !ok {
			break
		}
		return cur.field(name)
	case parsing.ASTSubexpression, parsing.ASTPipe:
		if len(ch) != 2 {
			break
		}
		return w.walk(ch[1], w.walk(ch[0], cur))
	case parsing.ASTIndexExpression:
		if len(ch) != 2 {
			break
		}
		x := w.walk(ch[0], cur)
		if x == nil {
			return nil
		}
		switch ch[1].NodeType {
		case parsing.ASTIndex:
			if i, ok := ch[1].Value.(int); ok && i >= 0 {
				return x.at(i)
			}
			return x.elem()
		case parsing.ASTSlice:
			x.elem() // the slice's elements are x's
			return x
		}
	case parsing.ASTProjection:
		if len(ch) != 2 {
			break
		}
		if x := w.walk(ch[0], cur); x != nil {
			mark(w.walk(ch[1], x.elem()))
		}
		return nil
	case parsing.ASTFilterProjection:
		if len(ch) != 3 {
			break
		}
		if x := w.walk(ch[0], cur); x != nil {
			e := x.elem()
			mark(w.walk(ch[2], e))
			mark(w.walk(ch[1], e))
		}
		return nil
	case parsing.ASTFlatten, parsing.ASTValueProjection:
		if len(ch) == 0 {
			break
		}
		mark(w.walk(ch[0], cur))
		return nil
	case parsing.ASTComparator, parsing.ASTAndExpression, parsing.ASTOrExpression,
		parsing.ASTNotExpression, parsing.ASTMultiSelectList:
		for _, c := range ch {
			mark(w.walk(c, cur))
		}
		return nil
	case parsing.ASTMultiSelectHash:
		for _, kv := range ch {
			if kv.NodeType != parsing.ASTKeyValPair || len(kv.Children) != 1 {
				w.unknown = true
				return nil
			}
			mark(w.walk(kv.Children[0], cur))
		}
		return nil
	case parsing.ASTFunctionExpression:
		for _, c := range ch {
			if c.NodeType == parsing.ASTExpRef {
				w.unknown = true // evaluated on elements of another argument
				return nil
			}
			mark(w.walk(c, cur))
		}
		return nil
	case parsing.ASTLiteral:
		return nil
	case parsing.ASTIdentity, parsing.ASTCurrentNode:
		return cur
	case parsing.ASTRootNode:
		return w.root
	}
	w.unknown = true
	return nil
}

// maxWholeValues bounds the JSON values an expression may read whole from
// one event (its objects, arrays and their members and elements): decoded,
// each costs about a hundred bytes however few bytes it has in the event.
const maxWholeValues = 1 << 15

// errTooManyValues is the error of an expression that reads more than
// maxWholeValues values whole.
var errTooManyValues = fmt.Errorf("the expression reads more than %d JSON values of the event whole", maxWholeValues)

// prune decodes doc, one valid JSON value, keeping of it only what n says
// is read: the members of an object that n names, the elements of an
// array that n reaches (an array read only by index is cut after the last
// index read; its other elements are null), all of a value read whole.
// Numbers are float64, or json.Number with numbers set. Members and
// elements left out are skipped without being decoded. The values read
// whole are counted against *budget; beyond it prune fails with
// errTooManyValues.
func prune(doc []byte, n *need, numbers bool, budget *int) (any, error) {
	doc = bytes.TrimSpace(doc)
	if n == nil || n.whole || len(doc) == 0 || (doc[0] != '{' && doc[0] != '[') {
		if *budget -= values(doc); *budget < 0 {
			return nil, errTooManyValues
		}
		d := json.NewDecoder(bytes.NewReader(doc))
		if numbers {
			d.UseNumber()
		}
		var v any
		err := d.Decode(&v)
		return v, err
	}
	if doc[0] == '{' {
		out := map[string]any{}
		for name, value := range members(doc) {
			c := n.fields[name]
			if c == nil {
				continue
			}
			v, err := prune(value, c, numbers, budget)
			if err != nil {
				return nil, err
			}
			out[name] = v // the last of duplicated names, as encoding/json keeps
		}
		return out, nil
	}
	limit := -1 // no limit
	if n.elems == nil {
		limit = 0
		for i := range n.index {
			limit = max(limit, i+1)
		}
	}
	var out []any
	i := 0
	for value := range elements(doc) {
		if limit >= 0 && i >= limit {
			break
		}
		c := union(n.elems, n.index[i])
		var v any
		if c != nil {
			var err error
			if v, err = prune(value, c, numbers, budget); err != nil {
				return nil, err
			}
		}
		out = append(out, v)
		i++
	}
	if out == nil {
		out = []any{}
	}
	return out, nil
}

// values counts the values of the valid JSON value doc, nearly: one, and
// one more for each comma and each object or array, outside strings.
func values(doc []byte) int {
	n := 1
	for i := 0; i < len(doc); i++ {
		switch doc[i] {
		case '"':
			i = skipString(doc, i) - 1
		case ',', '{', '[':
			n++
		}
	}
	return n
}

// union is what a and b read together.
func union(a, b *need) *need {
	switch {
	case a == nil:
		return b
	case b == nil:
		return a
	}
	u := &need{whole: a.whole || b.whole, elems: union(a.elems, b.elems)}
	for _, m := range []map[string]*need{a.fields, b.fields} {
		for k, v := range m {
			u.field(k)
			u.fields[k] = union(u.fields[k], v)
		}
	}
	for _, m := range []map[int]*need{a.index, b.index} {
		for k, v := range m {
			u.at(k)
			u.index[k] = union(u.index[k], v)
		}
	}
	return u
}

// members yields the names and the raw values of the members of obj, a
// valid JSON object.
func members(obj []byte) func(yield func(string, []byte) bool) {
	return func(yield func(string, []byte) bool) {
		i := skipSpace(obj, 1)
		for i < len(obj) && obj[i] == '"' {
			end := skipString(obj, i)
			name := decodeName(obj[i:end])
			i = skipSpace(obj, end)
			i = skipSpace(obj, i+1) // the colon
			vend := skipValue(obj, i)
			if !yield(name, obj[i:vend]) {
				return
			}
			i = skipSpace(obj, vend)
			if i < len(obj) && obj[i] == ',' {
				i = skipSpace(obj, i+1)
			}
		}
	}
}

// elements yields the raw elements of arr, a valid JSON array.
func elements(arr []byte) func(yield func([]byte) bool) {
	return func(yield func([]byte) bool) {
		i := skipSpace(arr, 1)
		for i < len(arr) && arr[i] != ']' {
			end := skipValue(arr, i)
			if !yield(arr[i:end]) {
				return
			}
			i = skipSpace(arr, end)
			if i < len(arr) && arr[i] == ',' {
				i = skipSpace(arr, i+1)
			}
		}
	}
}

// decodeName is the string a valid JSON string literal spells.
func decodeName(lit []byte) string {
	if bytes.IndexByte(lit, '\\') < 0 {
		return string(lit[1 : len(lit)-1])
	}
	var s string
	_ = json.Unmarshal(lit, &s)
	return s
}

func skipSpace(b []byte, i int) int {
	for i < len(b) && (b[i] == ' ' || b[i] == '\t' || b[i] == '\n' || b[i] == '\r') {
		i++
	}
	return i
}

// skipString returns the index after the string literal at b[i].
func skipString(b []byte, i int) int {
	for i++; i < len(b); i++ {
		switch b[i] {
		case '\\':
			i++
		case '"':
			return i + 1
		}
	}
	return len(b)
}

// skipValue returns the index after the valid JSON value at b[i].
func skipValue(b []byte, i int) int {
	switch b[i] {
	case '"':
		return skipString(b, i)
	case '{', '[':
		depth := 0
		for ; i < len(b); i++ {
			switch b[i] {
			case '"':
				i = skipString(b, i) - 1
			case '{', '[':
				depth++
			case '}', ']':
				if depth--; depth == 0 {
					return i + 1
				}
			}
		}
		return len(b)
	}
	for i < len(b) && b[i] != ',' && b[i] != '}' && b[i] != ']' && b[i] != ' ' && b[i] != '\t' && b[i] != '\n' && b[i] != '\r' {
		i++
	}
	return i
}
