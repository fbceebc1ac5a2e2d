package jmespath

import (
	"github.com/sqsonce/sqsonce/internal/jsonkey"
)

// The JSON reading rules for key material are package jsonkey's, the same
// for every key source: one JSON value, valid UTF-8, no unpaired surrogate
// escape, no member named twice, numbers of at most jsonkey.MaxNumberLen
// characters, nesting of at most jsonkey.MaxDepth. Text that Python's
// json.loads and JavaScript's JSON.parse could read as different values, or
// that one of them refuses, breaks one of them.
const maxNumberLen = jsonkey.MaxNumberLen

// checkCostPerMember is what the budget charges per member of a large
// object (more than 16 members) before jsonkey.Check reads it: Check keeps
// such an object's names in a set, about 93 bytes a name with the set's
// growth (measured); smaller objects cost it nothing.
const (
	checkCostPerMember = 96
	checkSmallObject   = 16
)

// checkJSON checks s against the rules, charging the budget first (ev may
// be nil: a literal of the expression).
func (ev *evaluator) checkJSON(s string) error {
	if ev != nil {
		if err := ev.charge(checkCostPerMember * int64(largeMembers(s))); err != nil {
			return err
		}
	}
	if err := jsonkey.Check(s); err != nil {
		return refuseJSON(err)
	}
	return nil
}

// largeMembers counts the members of the objects of s with more than
// checkSmallObject members, by their ':' outside strings (s may be
// invalid: the count is then only an estimate). It allocates nothing.
func largeMembers(s string) int {
	// counts holds the members of the open objects, outermost first, up
	// to a depth; deeper ones are counted as one.
	var counts [64]int
	depth, total := 0, 0
	for i := 0; i < len(s); i++ {
		switch s[i] {
		case '"':
			for i++; i < len(s) && s[i] != '"'; i++ {
				if s[i] == '\\' {
					i++
				}
			}
		case '{', '[':
			if depth++; depth < len(counts) {
				counts[depth] = 0
			}
		case ':':
			if depth < len(counts) {
				counts[depth]++
			} else {
				total++
			}
		case '}', ']':
			if depth > 0 && depth < len(counts) && counts[depth] > checkSmallObject {
				total += counts[depth]
			}
			depth = max(depth-1, 0)
		}
	}
	return total
}
