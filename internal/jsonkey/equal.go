package jsonkey

import "unicode/utf8"

// Equal reports whether JSON texts a and b, which keep the rules (see
// [Check]), are one value written alike but for white space and the
// escapes of strings: the same tokens in the same order, each string the
// same once decoded, each number spelled the same. Every format spells
// two such texts the same way. It reads both once and allocates nothing.
// For text that breaks the rules its answer means nothing, but it never
// panics.
func Equal(a, b string) bool {
	i, j := Space(a, 0), Space(b, 0)
	for i < len(a) && j < len(b) {
		if a[i] != '"' || b[j] != '"' {
			if a[i] != b[j] {
				return false
			}
			i, j = Space(a, i+1), Space(b, j+1)
			continue
		}
		ea, erra := (&scanner{s: a}).str(i, false)
		eb, errb := (&scanner{s: b}).str(j, false)
		if erra != nil || errb != nil || !sameString(a[i+1:ea-1], b[j+1:eb-1]) {
			return false
		}
		i, j = Space(a, ea), Space(b, eb)
	}
	return i == len(a) && j == len(b)
}

// sameString reports whether the insides of two scanned JSON strings spell
// the same characters. A byte that is not UTF-8, or a lone surrogate
// escape, equals only itself spelled the same.
func sameString(a, b string) bool {
	i, j := 0, 0
	for i < len(a) && j < len(b) {
		ra, na, oka := nextChar(a, i)
		rb, nb, okb := nextChar(b, j)
		if !oka || !okb {
			if a[i:i+na] != b[j:j+nb] {
				return false
			}
		} else if ra != rb {
			return false
		}
		i, j = i+na, j+nb
	}
	return i == len(a) && j == len(b)
}

// nextChar reads the character at s[i] of a scanned string's inside: the
// code point, its length, and false for a byte that is not UTF-8 or a lone
// surrogate escape.
func nextChar(s string, i int) (rune, int, bool) {
	if s[i] != '\\' {
		r, n := utf8.DecodeRuneInString(s[i:])
		return r, n, r != utf8.RuneError || n > 1
	}
	if s[i+1] == 'u' {
		r, _ := hex4(s, i+2)
		if r >= 0xd800 && r < 0xe000 {
			p, end, ok := pair(s, i+6, r)
			if !ok {
				return r, 6, false
			}
			return p, end - i, true
		}
		return r, 6, true
	}
	r, n := unescape(s, i)
	return r, n, true
}
