package jsonkey

import "math"

// node is one value or member name of checked text, in document order:
// where it begins and ends, and the index of the node after it and all it
// holds (its next sibling, when it has one).
type node struct{ at, end, next int32 }

// tree is checked text with the nodes of its values, so that an object's
// members can be taken in another order without scanning a value twice.
type tree struct {
	s     string
	nodes []node
}

// newTree indexes text, which Check accepted.
func newTree(text string) (*tree, error) {
	if len(text) > math.MaxInt32 {
		return nil, &Error{ErrSyntax, math.MaxInt32}
	}
	t := &tree{s: text, nodes: make([]node, 0, countNodes(text))}
	t.add(Space(text, 0))
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

// add indexes the value at s[i] and returns the index after it.
func (t *tree) add(i int) int {
	s := t.s
	n := len(t.nodes)
	t.nodes = append(t.nodes, node{at: int32(i)})
	end := i + 1
	switch c := s[i]; {
	case c == '"':
		for ; s[end] != '"'; end++ {
			if s[end] == '\\' {
				end++
			}
		}
		end++
	case c == '{' || c == '[':
		end = Space(s, end)
		for s[end] != '}' && s[end] != ']' {
			if c == '{' {
				end = Space(s, t.add(end)+1) // the name, then the ':'
			}
			end = Space(s, t.add(end))
			if s[end] == ',' {
				end = Space(s, end+1)
			}
		}
		end++
	case c == 't' || c == 'n':
		end = i + 4
	case c == 'f':
		end = i + 5
	default:
		for end < len(s) && isNumberByte(s[end]) {
			end++
		}
	}
	t.nodes[n].end, t.nodes[n].next = int32(end), int32(len(t.nodes))
	return end
}

// text is the text of node n.
func (t *tree) text(n int) string { return t.s[t.nodes[n].at:t.nodes[n].end] }

// kind is the first byte of node n.
func (t *tree) kind(n int) byte { return t.s[t.nodes[n].at] }

// children calls fn with the nodes an array or object n holds, in order:
// its elements, or its members' names and values alternately.
func (t *tree) children(n int, fn func(c int)) {
	for c := n + 1; c < int(t.nodes[n].next); c = int(t.nodes[c].next) {
		fn(c)
	}
}

// member is an object member: its name, where the name is, and its value.
type member struct {
	name  string
	at    int // the name's node
	value int // the value's node
}

// members returns object n's members in the order sent.
func (t *tree) members(n int) []member {
	count := 0
	t.children(n, func(int) { count++ })
	ms := make([]member, 0, count/2)
	name := -1
	t.children(n, func(c int) {
		if name < 0 {
			name = c
			return
		}
		s, _ := Unquote(t.text(name))
		ms = append(ms, member{name: s, at: name, value: c})
		name = -1
	})
	return ms
}
