package jsonkey

import (
	"errors"
	"fmt"
	"math"
	"strconv"
	"strings"

	"github.com/sqsonce/sqsonce/internal/redact"
)

// ErrInexactNumber is the kind of error [ExactNumber] returns.
var ErrInexactNumber = errors.New("a number a double cannot hold exactly")

// maxExactInt is 2^53: every integer up to it in magnitude is a double.
const maxExactInt = 1 << 53

// ExactNumber returns an error wrapping [ErrInexactNumber] for a JSON
// number n that a double does not hold exactly, by a rule that depends on
// how n is written, not on its value's luck: an integer (no fraction, no
// exponent) beyond ±2^53, or any other number whose shortest double
// spelling is a different number (more than about 17 significant digits,
// or out of a double's range). n is at most [MaxNumberLen] long; the check
// is a few strconv calls. The error describes n by a short prefix, its
// length and a digest.
func ExactNumber(n string) error {
	return exactNumber(n, 64)
}

// ExactNumber32 is [ExactNumber] for a float32: n must be a number whose
// shortest float32 spelling is the same number.
func ExactNumber32(n string) error {
	return exactNumber(n, 32)
}

func exactNumber(n string, bits int) error {
	if bits == 64 && !strings.ContainsAny(n, ".eE") {
		digits := strings.TrimPrefix(n, "-")
		// 2^53 has 16 digits: a longer integer is beyond it.
		if i, err := strconv.ParseInt(digits, 10, 64); len(digits) > 16 || err != nil || i > maxExactInt {
			return fmt.Errorf("%w: integer %s is beyond ±2^53, which a key cannot tell from its neighbours: send it as a string",
				ErrInexactNumber, redact.String(n))
		}
		return nil
	}
	f, err := strconv.ParseFloat(n, bits)
	if err != nil {
		return fmt.Errorf("%w: number %s is out of range for a key: send it as a string", ErrInexactNumber, redact.String(n))
	}
	nearest := strconv.FormatFloat(f, 'g', -1, bits)
	if !sameDecimal(n, nearest) {
		// Not the nearest double: it would show the value.
		return fmt.Errorf("%w: number %s has more significant digits than a key keeps: send it as a string",
			ErrInexactNumber, redact.String(n))
	}
	return nil
}

// sameDecimal reports whether two JSON numbers have the same value, by
// comparing their significant digits and decimal exponents.
func sameDecimal(a, b string) bool {
	da, ea, na, oka := decimal(a)
	db, eb, nb, okb := decimal(b)
	if !oka || !okb {
		return false
	}
	if da == "" || db == "" { // zero, whatever its sign
		return da == db
	}
	return da == db && ea == eb && na == nb
}

// decimal splits a JSON number into its sign, its significant digits
// (without leading or trailing zeros) and the exponent e such that the
// number is 0.digits × 10^e.
func decimal(n string) (digits string, exp int, neg bool, ok bool) {
	neg = strings.HasPrefix(n, "-")
	n = strings.TrimPrefix(n, "-")
	mant, e, hasExp := strings.Cut(strings.ToLower(n), "e")
	whole, frac, _ := strings.Cut(mant, ".")
	all := whole + frac
	trimmed := strings.TrimLeft(all, "0")
	if trimmed == "" {
		return "", 0, neg, true // zero, whatever its exponent: 0e10000000 too
	}
	if hasExp {
		x, err := strconv.Atoi(e)
		if err != nil || x > 1<<20 || x < -1<<20 {
			return "", 0, false, false
		}
		exp = x
	}
	exp += len(whole)
	exp -= len(all) - len(trimmed)
	return strings.TrimRight(trimmed, "0"), exp, neg, true
}

// IsInteger reports whether the JSON number n is written as an integer
// (no fraction, no exponent), as Python's json.loads reads it as an int.
func IsInteger(n string) bool { return !strings.ContainsAny(n, ".eE") }

// AppendPythonNumber appends Python's json.dumps of what json.loads makes
// of the JSON number n: an int exactly as written ("-0" as 0), or a
// float's repr (±Infinity beyond a double's range).
func AppendPythonNumber(dst []byte, n string) []byte {
	if IsInteger(n) {
		if strings.Trim(n, "-0") == "" {
			return append(dst, '0')
		}
		return append(dst, n...)
	}
	f, _ := strconv.ParseFloat(n, 64) // ±Inf when out of range, as float() gives
	switch {
	case math.IsInf(f, 1):
		return append(dst, "Infinity"...)
	case math.IsInf(f, -1):
		return append(dst, "-Infinity"...)
	}
	digits, decpt, neg := shortest(f)
	if neg {
		dst = append(dst, '-')
	}
	if decpt > -4 && decpt <= 16 { // repr's fixed notation
		switch {
		case decpt <= 0:
			dst = append(dst, "0."...)
			dst = append(dst, strings.Repeat("0", -decpt)...)
			return append(dst, digits...)
		case decpt >= len(digits):
			dst = append(dst, digits...)
			dst = append(dst, strings.Repeat("0", decpt-len(digits))...)
			return append(dst, ".0"...)
		}
		return append(append(append(dst, digits[:decpt]...), '.'), digits[decpt:]...)
	}
	dst = append(dst, digits[0])
	if len(digits) > 1 {
		dst = append(append(dst, '.'), digits[1:]...)
	}
	e := decpt - 1
	dst = append(dst, 'e')
	if e < 0 {
		dst, e = append(dst, '-'), -e
	} else {
		dst = append(dst, '+')
	}
	if e < 10 {
		dst = append(dst, '0')
	}
	return strconv.AppendInt(dst, int64(e), 10)
}

// AppendJSNumber appends JavaScript's Number::toString of the double
// nearest the JSON number n, as JSON.stringify and RFC 8785 write it
// (non-finite numbers as null).
func AppendJSNumber(dst []byte, n string) []byte {
	f, _ := strconv.ParseFloat(n, 64)
	if math.IsInf(f, 0) {
		return append(dst, "null"...)
	}
	if f == 0 {
		return append(dst, '0')
	}
	digits, e, neg := shortest(f)
	if neg {
		dst = append(dst, '-')
	}
	k := len(digits)
	switch {
	case k <= e && e <= 21:
		dst = append(dst, digits...)
		return append(dst, strings.Repeat("0", e-k)...)
	case 0 < e && e <= 21:
		return append(append(append(dst, digits[:e]...), '.'), digits[e:]...)
	case -6 < e && e <= 0:
		dst = append(dst, "0."...)
		dst = append(dst, strings.Repeat("0", -e)...)
		return append(dst, digits...)
	}
	dst = append(dst, digits[0])
	if k > 1 {
		dst = append(append(dst, '.'), digits[1:]...)
	}
	dst = append(dst, 'e')
	if e-1 >= 0 {
		dst = append(dst, '+')
	}
	return strconv.AppendInt(dst, int64(e-1), 10)
}

// shortest returns the shortest decimal digits that read back as f, and
// the position of the decimal point: f = 0.digits × 10^decpt.
func shortest(f float64) (digits string, decpt int, neg bool) {
	s := strconv.FormatFloat(f, 'e', -1, 64) // -d.ddde±dd
	neg = s[0] == '-'
	s = strings.TrimPrefix(s, "-")
	mant, e, _ := strings.Cut(s, "e")
	x, _ := strconv.Atoi(e)
	return strings.Replace(mant, ".", "", 1), x + 1, neg
}
