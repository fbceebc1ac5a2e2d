package jsonkey

import (
	"iter"
	"math"
	"slices"
)

// node is one value or member name of checked text, in document order:
// where it begins, and the index of the node after it and all it holds
// (its next sibling, when it has one). Where it ends is found again when
// needed (see end): eight bytes a value, where a long array of short
// values has about two bytes of text each.
type node struct{ at, next int32 }

// tree is checked text with the nodes of its values, so that an object's
// members can be taken in another order without scanning a value twice.
type tree struct {
	s     string
	nodes []node
}

// newTree indexes text, which check accepted, in one more pass of the
// scanner: the nodes are the values and member names the scanner reads, so
// the index splits the text exactly where the rules do (no second reader
// of the grammar to disagree with the first on white space or escapes).
func newTree(text string) (*tree, error) {
	if len(text) > math.MaxInt32 {
		return nil, &Error{ErrSyntax, math.MaxInt32}
	}
	t := &tree{s: text, nodes: make([]node, 0, countNodes(text))}
	s := scanner{s: text, tree: t}
	if _, err := s.value(s.space(0), 0, false); err != nil { // unreachable for checked text
		return nil, err
	}
	return t, nil
}

// countNodes counts the values and member names of checked text.
func countNodes(s string) int {
	n := 0
	for i := 0; i < len(s); i++ {
		switch c := s[i]; c {
		case '"':
			n++
			for i++; s[i] != '"'; i++ {
				if s[i] == '\\' {
					i++
				}
			}
		case '{', '[', 't', 'f', 'n':
			n++
		case '-', '0', '1', '2', '3', '4', '5', '6', '7', '8', '9':
			n++
			for i+1 < len(s) && isNumberByte(s[i+1]) {
				i++
			}
		}
	}
	return n
}

func isNumberByte(c byte) bool {
	return c >= '0' && c <= '9' || c == '-' || c == '+' || c == '.' || c == 'e' || c == 'E'
}

// begin adds the node of the value or member name at s[i] and returns its
// index, for done once the scanner has read what it holds.
func (t *tree) begin(i int) int {
	t.nodes = append(t.nodes, node{at: int32(i)})
	return len(t.nodes) - 1
}

// done ends node n: the next node is the one after it and all it holds.
func (t *tree) done(n int) { t.nodes[n].next = int32(len(t.nodes)) }

// end returns the index after node n's text.
func (t *tree) end(n int) int {
	s, i := t.s, int(t.nodes[n].at)
	if c := s[i]; c != '{' && c != '[' {
		end, _ := (&scanner{s: s}).scan(i, 0, false) // checked: no error
		return end
	}
	last := -1
	for c := range t.children(n) {
		last = c
	}
	if last >= 0 {
		i = t.end(last)
	} else {
		i++
	}
	return Space(s, i) + 1 // the closing byte
}

// text is the text of node n.
func (t *tree) text(n int) string { return t.s[t.nodes[n].at:t.end(n)] }

// kind is the first byte of node n.
func (t *tree) kind(n int) byte { return t.s[t.nodes[n].at] }

// children are the nodes an array or object n holds, in order: its
// elements, or its members' names and values alternately.
func (t *tree) children(n int) iter.Seq[int] {
	return func(yield func(int) bool) {
		for c := n + 1; c < int(t.nodes[n].next); c = int(t.nodes[c].next) {
			if !yield(c) {
				return
			}
		}
	}
}

// pairs are object n's members: the node of each name and of its value.
func (t *tree) pairs(n int) iter.Seq2[int, int] {
	return func(yield func(int, int) bool) {
		name := -1
		for c := range t.children(n) {
			if name < 0 {
				name = c
				continue
			}
			if !yield(name, c) {
				return
			}
			name = -1
		}
	}
}

// member is an object member: its name, where the name is, and its value.
type member struct {
	name      string
	at, value int32 // the nodes of the name and of the value
}

// members returns object n's members in the order sent.
func (t *tree) members(n int) []member {
	count := 0
	for range t.children(n) {
		count++
	}
	ms := make([]member, 0, count/2)
	for name, value := range t.pairs(n) {
		s, _ := Unquote(t.text(name))
		ms = append(ms, member{name: s, at: int32(name), value: int32(value)})
	}
	return ms
}

// Tree is JSON text that keeps the rules, indexed so that it can be walked
// value by value without scanning any value twice. Its memory is about
// twelve bytes per value and member name.
type Tree struct{ t *tree }

// Index checks text (see [Check]) and indexes it.
func Index(text string) (*Tree, error) {
	if err := check(text, false); err != nil {
		return nil, err
	}
	t, err := newTree(text)
	if err != nil {
		return nil, err
	}
	if err := t.duplicates(0, len(t.nodes)); err != nil {
		return nil, err
	}
	return &Tree{t}, nil
}

// duplicates refuses an object among nodes from to to (a value and all it
// holds) that names a member twice. Each object's names are sorted in one
// list at a time, allocated to the largest object.
func (t *tree) duplicates(from, to int) error {
	var names []string
	for n := from; n < to; n++ {
		if t.kind(n) != '{' {
			continue
		}
		count := 0
		for range t.pairs(n) {
			count++
		}
		if cap(names) < count {
			names = make([]string, 0, count)
		}
		names = names[:0]
		for name := range t.pairs(n) {
			s, _ := Unquote(t.text(name))
			names = append(names, s)
		}
		if len(names) > 1 {
			slices.Sort(names)
			for k := 1; k < len(names); k++ {
				if names[k] == names[k-1] {
					return &Error{ErrDuplicateName, t.second(n, names[k])}
				}
			}
		}
	}
	return nil
}

// second returns the offset of the second member of object n named s.
func (t *tree) second(n int, s string) int {
	seen := false
	for name := range t.pairs(n) {
		if u, _ := Unquote(t.text(name)); u == s {
			if seen {
				return int(t.nodes[name].at)
			}
			seen = true
		}
	}
	return int(t.nodes[n].at)
}

// Root is the tree's value.
func (t *Tree) Root() Node { return Node{t.t, 0} }

// Node is one value of a [Tree].
type Node struct {
	t *tree
	n int
}

// Kind is the first byte of the value: '{', '[', '"', 't', 'f', 'n', or
// '-' or a digit for a number.
func (v Node) Kind() byte { return v.t.kind(v.n) }

// Text is the value as the text spells it.
func (v Node) Text() string { return v.t.text(v.n) }

// Offset is the byte offset of the value in the text.
func (v Node) Offset() int { return int(v.t.nodes[v.n].at) }

// Str is the string a string value spells.
func (v Node) Str() string {
	s, _ := Unquote(v.Text())
	return s
}

// Elements are an array's elements, in order.
func (v Node) Elements() iter.Seq[Node] {
	return func(yield func(Node) bool) {
		for c := range v.t.children(v.n) {
			if !yield(Node{v.t, c}) {
				return
			}
		}
	}
}

// Members are an object's members, in the order sent: each name (decoded)
// and value.
func (v Node) Members() iter.Seq2[string, Node] {
	return func(yield func(string, Node) bool) {
		for name, value := range v.t.pairs(v.n) {
			if !yield(Node{v.t, name}.Str(), Node{v.t, value}) {
				return
			}
		}
	}
}

// Get returns the value at path, a list of member names from v, and
// whether it is there (every value on the way an object that has the
// member).
func (v Node) Get(path ...string) (Node, bool) {
	for _, want := range path {
		if v.Kind() != '{' {
			return Node{}, false
		}
		found := false
		for name, m := range v.Members() {
			if name == want {
				v, found = m, true
				break
			}
		}
		if !found {
			return Node{}, false
		}
	}
	return v, true
}
