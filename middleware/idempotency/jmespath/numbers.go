package jmespath

import (
	"cmp"
	"math"
	"math/big"
	"strconv"
	"strings"

	"github.com/sqsonce/sqsonce/internal/jsonkey"
)

// Numbers keep the spelling they were read with. Python reads a spelling
// without '.', 'e' or 'E' as an exact integer and any other as a double;
// JavaScript reads every spelling as a double. Where the two disagree (an
// integer beyond 2^53 compared, summed or spelled), the evaluation is
// refused; otherwise the result is spelled so that both read it as they
// would have computed it.

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
	if !jsonkey.IsInteger(n) || len(n) > 17 {
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
			return cmp.Compare(x, y)
		}
	}
	if !jsonkey.IsInteger(a) && !jsonkey.IsInteger(b) {
		return cmp.Compare(double(a), double(b))
	}
	return exact(a).Cmp(exact(b))
}

// exact is Python's value of n exactly: an int's, or its double's (±Inf
// as big.Float's infinities).
func exact(n string) *big.Float {
	if jsonkey.IsInteger(n) {
		i, _ := new(big.Int).SetString(n, 10)
		return new(big.Float).SetPrec(uint(max(i.BitLen(), 1))).SetInt(i)
	}
	return new(big.Float).SetFloat64(double(n))
}

// compareNumbers compares two number spellings, refusing when Python and
// JavaScript order them differently.
func compareNumbers(a, b string) (int, error) {
	py, js := pyCompare(a, b), cmp.Compare(double(a), double(b))
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
