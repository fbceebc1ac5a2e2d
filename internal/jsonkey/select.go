package jsonkey

import (
	"encoding/json"
	"slices"
)

// Select scans text, one JSON value, and returns the values at the given
// paths, each a list of object member names from the top, as text spells
// them: "" for a path that is absent (a member missing, or a value on the
// way that is not an object). The whole text must be JSON, nested at most
// [MaxDepth] levels; the other rules apply to what the paths read: a member
// on a path must appear once in its object, and a selected value must keep
// every rule. A member name that breaks a rule matches no path, and is
// refused if it would read as a path's name with U+FFFD in place of its
// flaws.
//
// Select reads text once and decodes nothing but the member names of the
// objects on the paths.
func Select(text string, paths [][]string) ([]string, error) {
	s := scanner{s: text, dups: true}
	values := make([]string, len(paths))
	live := make([]int, len(paths))
	for n := range live {
		live[n] = n
	}
	end, err := s.selectValue(s.space(0), 0, paths, live, 0, values)
	if err != nil {
		return nil, err
	}
	if end = s.space(end); end != len(text) {
		return nil, &Error{ErrSyntax, end}
	}
	return values, nil
}

// selectValue scans the value at s[i] (depth levels deep), which is at
// level `level` of the paths in live, storing in values the values where a
// path ends.
func (s *scanner) selectValue(i, depth int, paths [][]string, live []int, level int, values []string) (int, error) {
	var ended, deeper []int
	for _, n := range live {
		if len(paths[n]) == level {
			ended = append(ended, n)
		} else {
			deeper = append(deeper, n)
		}
	}
	isObject := i < len(s.s) && s.s[i] == '{'
	if len(ended) == 0 {
		if len(deeper) > 0 && isObject {
			return s.selectObject(i, depth, paths, deeper, level, values)
		}
		return s.value(i, depth, false)
	}
	end, err := s.value(i, depth, true)
	if err != nil {
		return 0, err
	}
	for _, n := range ended {
		values[n] = s.s[i:end]
	}
	// A path that ends here goes no deeper: the others still can.
	if len(deeper) > 0 && isObject {
		_, err = s.selectObject(i, depth, paths, deeper, level, values)
	}
	return end, err
}

// selectObject scans the object at s[i], following the paths in live into
// its members; a member that a path follows may appear only once.
func (s *scanner) selectObject(i, depth int, paths [][]string, live []int, level int, values []string) (int, error) {
	i, depth, more, err := s.open(i, depth, '}')
	followed := make([]bool, len(live))
	var next []int
	for more {
		at := i
		var quoted string
		if quoted, i, err = s.member(i, false); err != nil {
			return 0, err
		}
		next = next[:0]
		name, ok := Unquote(quoted)
		if !ok {
			// A name that breaks a rule matches no path; one that
			// encoding/json would read as a path's name (U+FFFD in place of
			// each flaw), as earlier releases did, is refused instead.
			var lossy string
			if json.Unmarshal([]byte(quoted), &lossy) == nil && slices.ContainsFunc(live, func(n int) bool { return paths[n][level] == lossy }) {
				_, err := (&scanner{s: s.s}).str(at, true)
				return 0, err
			}
		}
		for k, n := range live {
			if !ok || paths[n][level] != name {
				continue
			}
			if followed[k] {
				return 0, &Error{ErrDuplicateName, at}
			}
			followed[k] = true
			next = append(next, n)
		}
		if i, err = s.selectValue(i, depth, paths, next, level+1, values); err != nil {
			return 0, err
		}
		i, more, err = s.next(s.space(i), '}')
	}
	return i, err
}
