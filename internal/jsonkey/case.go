package jsonkey

import (
	"errors"
	"unicode"
	"unicode/utf8"
)

// ErrCaseVersioned is the rule [WriteTypeScript] adds: see [CaseStable].
var ErrCaseVersioned = errors.New("an object key holds a character whose lower case differs between Unicode versions, " +
	"and Powertools TypeScript sorts keys by the lower case of its runtime's version")

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
// skipping case-ignorable characters before testing for a cased one.
func jsLower(s string) string {
	ascii := true
	for i := 0; i < len(s) && ascii; i++ {
		ascii = s[i] < utf8.RuneSelf && (s[i] < 'A' || s[i] > 'Z')
	}
	if ascii {
		return s
	}
	rs := []rune(s)
	out := make([]rune, 0, len(rs))
	for n, r := range rs {
		switch {
		case r == 0x130:
			out = append(out, 'i', 0x307)
		case r == 0x3a3 && finalSigma(rs, n):
			out = append(out, 0x3c2)
		default:
			out = append(out, unicode.ToLower(r))
		}
	}
	return string(out)
}

// finalSigma reports whether the sigma at s[n] ends a word: preceded by a
// cased letter and not followed by one, skipping case-ignorable characters
// (ICU's isFollowedByCasedLetter, in both directions).
func finalSigma(s []rune, n int) bool {
	before := false
	for i := n - 1; i >= 0; i-- {
		if caseIgnorable(s[i]) {
			continue
		}
		before = cased(s[i])
		break
	}
	if !before {
		return false
	}
	for i := n + 1; i < len(s); i++ {
		if caseIgnorable(s[i]) {
			continue
		}
		return !cased(s[i])
	}
	return true
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
