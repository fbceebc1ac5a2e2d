package jsonkey_test

import (
	"errors"
	"strconv"
	"strings"
	"testing"

	"github.com/sqsonce/sqsonce/internal/jsonkey"
)

// TestInexactNumberQuotesNoValue: the error for a number a key cannot keep
// says what is wrong and shows neither the number nor the double it would
// become (either is the key's value).
func TestInexactNumberQuotesNoValue(t *testing.T) {
	for _, n := range []string{"1234567.1234567891234567", "98765432109876543", "1e400", "-0.10000000000000000555"} {
		err := jsonkey.ExactNumber(n)
		if !errors.Is(err, jsonkey.ErrInexactNumber) {
			t.Fatalf("ExactNumber(%s) = %v, want ErrInexactNumber", n, err)
		}
		f, _ := strconv.ParseFloat(n, 64)
		for _, v := range []string{n, strconv.FormatFloat(f, 'g', -1, 64), strconv.FormatFloat(f, 'e', -1, 64), n[:min(6, len(n))]} {
			if strings.Contains(err.Error(), v) {
				t.Errorf("ExactNumber(%s) = %q: shows %s", n, err, v)
			}
		}
		if !strings.Contains(err.Error(), "send it as a string") {
			t.Errorf("ExactNumber(%s) = %q: does not say what to do", n, err)
		}
	}
}
