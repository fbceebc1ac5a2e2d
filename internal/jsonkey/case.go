package jsonkey

import (
	"errors"
	"strings"
	"unicode"
	"unicode/utf8"
)

// The rules [WriteTypeScript] adds: see [CaseStable], and WriteTypeScript
// for ErrSortChanged.
var (
	ErrCaseVersioned = errors.New("an object key holds a character whose lower case differs between Unicode versions, " +
		"and Powertools TypeScript sorts keys by the lower case of its runtime's version")
	ErrSortChanged = errors.New("an object whose keys an earlier release sorted otherwise (a final sigma after a character " +
		"such as ª, Ⓐ, ‘ or ·): refused rather than given another record id")
)

// CaseStable reports whether every character of s has the same lower case,
// and the same part in the final-sigma rule, in Unicode 15.0 (this
// package's tables) and in every later version up to 17.0 (node 20's
// ICU 78): characters assigned in Unicode 15.0, except U+0295 (a lower-case
// letter until 16.0, a letter without case since) and U+1171E (a
// case-ignorable mark until 16.0). A character assigned later may have a
// lower case in one runtime's Unicode and none in another's.
func CaseStable(s string) bool {
	for _, r := range s {
		if r >= utf8.RuneSelf && !caseStable(r) {
			return false
		}
	}
	return true
}

func caseStable(r rune) bool {
	if r == 0x295 || r == 0x1171e {
		return false
	}
	return unicode.In(r, unicode.L, unicode.M, unicode.N, unicode.P, unicode.S, unicode.Z, unicode.Cc, unicode.Cf, unicode.Co)
}

// jsLower is JavaScript's String.prototype.toLowerCase as V8 computes it
// with ICU: Unicode's full lower-case mapping, with its one unconditional
// special case (U+0130) and the final sigma, whose context ICU reads by
// skipping case-ignorable characters before testing for a cased one. It
// returns s itself when s has no upper case.
func jsLower(s string) string { return lowerWith(s, cased, caseIgnorable) }

// lowerBefore is jsLower as releases before this one computed it (see
// sigmaChanged).
func lowerBefore(s string) string { return lowerWith(s, casedBefore, ignorableBefore) }

func lowerWith(s string, cased, caseIgnorable func(rune) bool) string {
	var b strings.Builder
	lowered := false
	for i, r := range s {
		l := r
		switch {
		case r < utf8.RuneSelf:
			if 'A' <= r && r <= 'Z' {
				l += 'a' - 'A'
			}
		case r == 0x130:
			l = -1
		case r == 0x3a3 && finalSigma(s, i, cased, caseIgnorable):
			l = 0x3c2
		default:
			l = unicode.ToLower(r)
		}
		if l == r && !lowered {
			continue
		}
		if !lowered {
			lowered = true
			b.Grow(len(s) + 2)
			b.WriteString(s[:i])
		}
		if l < 0 {
			b.WriteString("i\u0307")
		} else {
			b.WriteRune(l)
		}
	}
	if !lowered {
		return s
	}
	return b.String()
}

// finalSigma reports whether the sigma at s[i] ends a word: preceded by a
// cased letter and not followed by one, skipping case-ignorable characters
// (ICU's isFollowedByCasedLetter, in both directions).
func finalSigma(s string, i int, cased, caseIgnorable func(rune) bool) bool {
	before := false
	for j := i; j > 0; {
		r, n := utf8.DecodeLastRuneInString(s[:j])
		j -= n
		if !caseIgnorable(r) {
			before = cased(r)
			break
		}
	}
	if !before {
		return false
	}
	for _, r := range s[i+len("Σ"):] {
		if !caseIgnorable(r) {
			return !cased(r)
		}
	}
	return true
}

// sigmaChanged reports whether a final sigma of s was read otherwise by the
// releases before this one, which took Cased as Lu, Ll and Lt alone and
// Case_Ignorable without most of Word_Break's MidLetter and MidNumLet:
// their TypeScript ids for objects with such keys were not Powertools'.
func sigmaChanged(s string) bool {
	for i, r := range s {
		if r == 0x3a3 && finalSigma(s, i, cased, caseIgnorable) != finalSigma(s, i, casedBefore, ignorableBefore) {
			return true
		}
	}
	return false
}

func casedBefore(r rune) bool { return unicode.IsUpper(r) || unicode.IsLower(r) || unicode.IsTitle(r) }

func ignorableBefore(r rune) bool {
	return r == '\'' || r == '.' || r == ':' || r == 0xb7 || r == 0x2019 ||
		unicode.In(r, unicode.Mn, unicode.Me, unicode.Cf, unicode.Lm, unicode.Sk)
}

// cased is Unicode's Cased property: Lowercase, Uppercase or Lt.
func cased(r rune) bool {
	return unicode.In(r, unicode.Lu, unicode.Ll, unicode.Lt, unicode.Other_Lowercase, unicode.Other_Uppercase)
}

// caseIgnorable is Unicode's Case_Ignorable property: Mn, Me, Cf, Lm, Sk,
// and Word_Break MidLetter, MidNumLet or Single_Quote.
func caseIgnorable(r rune) bool {
	switch r {
	case '\'', '.', ':', 0xb7, 0x387, 0x55f, 0x5f4, 0x2018, 0x2019, 0x2024, 0x2027, 0xfe13, 0xfe52, 0xfe55, 0xff07, 0xff0e, 0xff1a:
		return true
	}
	return unicode.In(r, unicode.Mn, unicode.Me, unicode.Cf, unicode.Lm, unicode.Sk)
}
