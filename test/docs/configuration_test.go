package docs_test

import (
	"regexp"
	"slices"
	"strings"
	"testing"

	"github.com/sqsonce/sqsonce/middleware/lambdaenv/envvars"
)

// envName is a variable of the contract, as the configuration table
// writes it.
var envName = regexp.MustCompile("`(SQSONCE_[A-Z0-9_]+)`")

// TestConfigurationTable holds docs/configuration.md's table of variables
// to the reader: every variable envvars reads has a row, every row names
// one it reads, and a row says "no; optional" exactly when the construct
// does not set its variables (envvars.Optional, not envvars.Set).
func TestConfigurationTable(t *testing.T) {
	const file = "docs/configuration.md"
	text := read(t, file)
	set, optional := envvars.Set(), envvars.Optional()
	seen := map[string]bool{}
	for _, line := range strings.Split(text, "\n") {
		if !strings.HasPrefix(line, "| `SQSONCE_") {
			continue
		}
		cells := strings.Split(line, "|")
		if len(cells) < 4 {
			t.Errorf("%s: a row with fewer than three cells: %.60s", file, line)
			continue
		}
		byConstruct := !strings.HasPrefix(strings.TrimSpace(cells[2]), "no; optional")
		for _, m := range envName.FindAllStringSubmatch(cells[1], -1) {
			name := m[1]
			if seen[name] {
				t.Errorf("%s: %s has two rows", file, name)
			}
			seen[name] = true
			switch {
			case slices.Contains(set, name) && !byConstruct:
				t.Errorf("%s: %s is set by the construct (envvars.Set) but its row says \"no; optional\"", file, name)
			case slices.Contains(optional, name) && byConstruct:
				t.Errorf("%s: %s is not set by the construct (envvars.Optional) but its row says when the construct sets it", file, name)
			case !slices.Contains(set, name) && !slices.Contains(optional, name):
				t.Errorf("%s: %s has a row but envvars reads no such variable", file, name)
			}
		}
	}
	for _, name := range slices.Concat(set, optional) {
		if !seen[name] {
			t.Errorf("%s: envvars reads %s but the table has no row for it", file, name)
		}
	}
	if len(seen) == 0 {
		t.Fatalf("%s: no table of SQSONCE_ variables found", file)
	}
}
