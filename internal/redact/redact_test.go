package redact_test

import (
	"crypto/sha256"
	"fmt"
	"strings"
	"testing"

	"github.com/sqsonce/sqsonce/internal/redact"
)

func TestString(t *testing.T) {
	long64 := strings.Repeat("secret text ", 10_000)
	tests := []struct {
		in, shown string // shown: the prefix as it is shown, with "… "
	}{
		{"", ``},
		{"v9", ``},
		{"document", ``},
		{"alice@example.com", ``},
		{strings.Repeat("x", redact.MinShown-1), ``}, // a short value: nothing of it
		{strings.Repeat("y", redact.MinShown), `"yyyyyyyy"… `},
		{"aaaaaaaé" + strings.Repeat("z", 60), `"aaaaaaa"… `}, // cut before a split character
		{"a\nb\x00" + strings.Repeat("z", 60), `"a\nb\x00zzzz"… `},
		{long64, `"secret t"… `},
	}
	for _, tt := range tests {
		want := fmt.Sprintf("%s(%d bytes, sha256:%x)", tt.shown, len(tt.in), sha256.Sum256([]byte(tt.in)))
		want = want[:len(want)-57] + ")" // 8 of the 64 hex digits
		if got := redact.String(tt.in); got != want {
			t.Errorf("String(%.20q) = %s, want %s", tt.in, got, want)
		}
		if got := redact.Bytes([]byte(tt.in)); got != redact.String(tt.in) {
			t.Errorf("Bytes(%.20q) = %s, want String's", tt.in, got)
		}
		if len(tt.in) > 1 && len(tt.in) < redact.MinShown && strings.Contains(redact.String(tt.in), tt.in[:2]) {
			t.Errorf("String(%q) = %s: shows part of a short value", tt.in, redact.String(tt.in))
		}
	}
	long := strings.Repeat("x", 1<<20)
	if got := redact.String(long); len(got) > 64 || redact.String(long+"x") == got {
		t.Errorf("String of 1 MiB = %s: want a short description that tells different values apart", got)
	}
}
