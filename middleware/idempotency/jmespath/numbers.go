package jmespath

import (
	"math"
	"math/big"
	"strconv"
	"strings"
)

// Numbers keep the spelling they were read with. Python reads a spelling
// without '.', 'e' or 'E' as an exact integer and any other as a double;
// JavaScript reads every spelling as a double. Where the two disagree (an
// integer beyond 2^53 compared, summed or spelled), the evaluation is
// refused; otherwise the result is spelled so that both read it as they
// would have computed it.

// isInt reports whether Python reads the spelling n as an int.
func isInt(n string) bool { return !strings.ContainsAny(n, ".eE") }

// double is JavaScript's value of n (and Python's for a float spelling):
// the nearest double, ±Inf beyond the range.
func double(n string) float64 {
	f, _ := strconv.ParseFloat(n, 64)
	return f
}

// maxExact is 2^53: every integer of at most this magnitude is a double.
const maxExact = 1 << 53

// smallInt returns the integer n spells, when it is an int spelling of at
// most 2^53 in magnitude.
func smallInt(n string) (int64, bool) {
	if !isInt(n) || len(n) > 17 {
		return 0, false
	}
	i, err := strconv.ParseInt(n, 10, 64)
	if err != nil || i > maxExact || i < -maxExact {
		return 0, false
	}
	return i, true
}

// pyCompare compares two number spellings as Python compares the numbers
// json.loads makes of them: ints exactly, floats as doubles, an int and a
// float by their exact values.
func pyCompare(a, b string) int {
	if x, ok := smallInt(a); ok {
		if y, ok := smallInt(b); ok {
			return cmp3(x, y)
		}
	}
	if !isInt(a) && !isInt(b) {
		return cmpFloat(double(a), double(b))
	}
	return exact(a).Cmp(exact(b))
}

// exact is Python's value of n exactly: an int's, or its double's (±Inf
// as big.Float's infinities).
func exact(n string) *big.Float {
	if isInt(n) {
		i, _ := new(big.Int).SetString(n, 10)
		return new(big.Float).SetPrec(uint(max(i.BitLen(), 1))).SetInt(i)
	}
	return new(big.Float).SetFloat64(double(n))
}

func cmpFloat(x, y float64) int {
	switch {
	case x < y:
		return -1
	case x > y:
		return 1
	}
	return 0
}

func cmp3(x, y int64) int {
	switch {
	case x < y:
		return -1
	case x > y:
		return 1
	}
	return 0
}

// compareNumbers compares two number spellings, refusing when Python and
// JavaScript order them differently.
func compareNumbers(a, b string) (int, error) {
	py, js := pyCompare(a, b), cmpFloat(double(a), double(b))
	if py != js {
		return 0, refuse(errPrecision)
	}
	return py, nil
}

// pyEqualNumbers and jsEqualNumbers are == on two numbers in each runtime.
func pyEqualNumbers(a, b string) bool { return pyCompare(a, b) == 0 }
func jsEqualNumbers(a, b string) bool { return double(a) == double(b) }

// intSpelling spells the integer-valued double f as Python prints int(f)
// (every digit), for ceil and floor.
func intSpelling(f float64) string {
	if f == 0 {
		return "0"
	}
	if math.Abs(f) < 1<<62 {
		return strconv.FormatInt(int64(f), 10)
	}
	return new(big.Float).SetFloat64(f).Text('f', 0)
}

// floatSpelling spells the double f so that Python reads a float (it has a
// '.' or an exponent) and both runtimes read f.
func floatSpelling(f float64) string {
	s := strconv.FormatFloat(f, 'g', -1, 64)
	if !strings.ContainsAny(s, ".e") {
		s += ".0"
	}
	return s
}

// pyNumber is Python's json.dumps of the number json.loads makes of n.
func pyNumber(dst []byte, n string) []byte {
	if isInt(n) {
		if strings.Trim(n, "-0") == "" {
			return append(dst, '0')
		}
		return append(dst, n...)
	}
	f := double(n)
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
	if decpt > -4 && decpt <= 16 { // float.__repr__'s fixed notation
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

// jsNumber is JavaScript's JSON.stringify of the number JSON.parse makes
// of n.
func jsNumber(dst []byte, n string) []byte {
	f := double(n)
	if math.IsInf(f, 0) {
		return append(dst, "null"...)
	}
	if f == 0 {
		return append(dst, '0')
	}
	digits, k, neg := shortest(f)
	if neg {
		dst = append(dst, '-')
	}
	nd := len(digits)
	switch {
	case nd <= k && k <= 21:
		dst = append(dst, digits...)
		return append(dst, strings.Repeat("0", k-nd)...)
	case 0 < k && k <= 21:
		return append(append(append(dst, digits[:k]...), '.'), digits[k:]...)
	case -6 < k && k <= 0:
		dst = append(dst, "0."...)
		dst = append(dst, strings.Repeat("0", -k)...)
		return append(dst, digits...)
	}
	dst = append(dst, digits[0])
	if nd > 1 {
		dst = append(append(dst, '.'), digits[1:]...)
	}
	dst = append(dst, 'e')
	if k-1 >= 0 {
		dst = append(dst, '+')
	}
	return strconv.AppendInt(dst, int64(k-1), 10)
}

// shortest returns the shortest decimal digits that read back as f and the
// position of the decimal point: f = 0.digits × 10^decpt.
func shortest(f float64) (digits string, decpt int, neg bool) {
	s := strconv.FormatFloat(f, 'e', -1, 64)
	neg = s[0] == '-'
	s = strings.TrimPrefix(s, "-")
	mant, e, _ := strings.Cut(s, "e")
	x, _ := strconv.Atoi(e)
	return strings.Replace(mant, ".", "", 1), x + 1, neg
}
