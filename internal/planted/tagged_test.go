//go:build sqsonceplanted

package planted_test

import (
	"slices"
	"testing"

	"github.com/sqsonce/sqsonce/internal/planted"
)

// TestNames holds Names to the defects' constants, and Enable to switching
// on exactly what it names.
func TestNames(t *testing.T) {
	if !slices.Equal(planted.Names, names) {
		t.Fatalf("Names = %v, want %v", planted.Names, names)
	}
	restore := planted.Enable(planted.EarlyTakeover)
	for _, n := range names {
		if planted.On(n) != (n == planted.EarlyTakeover) || planted.If(n, 1, 0) != map[bool]int{true: 1}[n == planted.EarlyTakeover] {
			t.Errorf("with only %s on, On(%q) = %v", planted.EarlyTakeover, n, planted.On(n))
		}
	}
	restore()
	if planted.On(planted.EarlyTakeover) {
		t.Error("restore left the defect on")
	}
}
