package docs_test

import (
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"testing"
)

// rule is a target's rule of the Makefile: its prerequisites and recipe.
type rule struct {
	prereqs []string
	recipe  []string // the recipe's lines, without their tab
}

// makeRule returns the rule of the root Makefile that makes target.
func makeRule(t *testing.T, makefile, target string) rule {
	t.Helper()
	lines := strings.Split(makefile, "\n")
	for i, l := range lines {
		if l == "" || strings.HasPrefix(l, "\t") || strings.HasPrefix(l, "#") {
			continue
		}
		targets, rest, ok := strings.Cut(l, ":")
		if !ok || strings.HasPrefix(rest, "=") || strings.ContainsAny(targets, "=$") {
			continue // an assignment (:=), not a rule
		}
		if !slices.Contains(strings.Fields(targets), target) {
			continue
		}
		if f := strings.Fields(rest); len(f) > 0 && (f[0] == "export" || strings.Contains(rest, "=")) {
			continue // a target-specific variable
		}
		r := rule{prereqs: strings.Fields(rest)}
		for _, rl := range lines[i+1:] {
			recipe, ok := strings.CutPrefix(rl, "\t")
			if !ok {
				break
			}
			r.recipe = append(r.recipe, recipe)
		}
		return r
	}
	t.Fatalf("the Makefile has no rule for %s", target)
	return rule{}
}

// helpLine returns the text `make help` prints for target: its
// "## target: text" line of the Makefile (help-check requires one).
func helpLine(t *testing.T, makefile, target string) string {
	t.Helper()
	for _, l := range strings.Split(makefile, "\n") {
		if text, ok := strings.CutPrefix(l, "## "+target+": "); ok {
			return text
		}
	}
	t.Fatalf("the Makefile has no ## %s: help line", target)
	return ""
}

// variable returns a Makefile variable's value, with $(VAR) expanded and
// $(CURDIR), the root, left out ("$(CURDIR)/.tools" is ".tools").
func variable(t *testing.T, makefile, name string) string {
	t.Helper()
	def := regexp.MustCompile(`(?m)^` + regexp.QuoteMeta(name) + `\s*[:?]?=\s*(.*?)\s*$`)
	m := def.FindStringSubmatch(makefile)
	if m == nil {
		t.Fatalf("the Makefile does not set %s", name)
	}
	return regexp.MustCompile(`\$\(([A-Z_]+)\)`).ReplaceAllStringFunc(m[1], func(ref string) string {
		if ref == "$(CURDIR)" {
			return "."
		}
		return variable(t, makefile, ref[2:len(ref)-1])
	})
}

// names reports whether text names word as a whole word, a name of the
// Makefile's: "lint" is not named by "cfn-lint", nor "test" by "test-go".
func names(text, word string) bool {
	return regexp.MustCompile(`(^|[^A-Za-z0-9_-])` + regexp.QuoteMeta(word) + `($|[^A-Za-z0-9_-])`).MatchString(text)
}

// lineOf returns the first line of text that starts with prefix, after
// its indentation.
func lineOf(t *testing.T, file, text, prefix string) string {
	t.Helper()
	for _, l := range strings.Split(text, "\n") {
		if strings.HasPrefix(strings.TrimSpace(l), prefix) {
			return l
		}
	}
	t.Fatalf("%s has no line starting with %q", file, prefix)
	return ""
}

// TestMakeTestDescribed holds the three descriptions of `make test` to
// the Makefile: the README's `make test` line, docs/development.md's row
// for it and the line `make help` prints for it each name every
// prerequisite of the Makefile's test rule.
func TestMakeTestDescribed(t *testing.T) {
	mk := read(t, "Makefile")
	prereqs := makeRule(t, mk, "test").prereqs
	if len(prereqs) < 2 {
		t.Fatalf("test's prerequisites %v: not the Makefile's rule?", prereqs)
	}
	for _, d := range []struct{ where, text string }{
		{"README.md's make test line", lineOf(t, "README.md", read(t, "README.md"), "make test ")},
		{"docs/development.md's make test row", lineOf(t, "docs/development.md", read(t, "docs/development.md"), "| `make test` |")},
		{"make help's line for test", helpLine(t, mk, "test")},
	} {
		for _, p := range prereqs {
			if !names(d.text, p) {
				t.Errorf("%s does not name %s, a prerequisite of the Makefile's test (%s):\n%s", d.where, p, strings.Join(prereqs, " "), d.text)
			}
		}
	}
	t.Logf("make test is %s, in README.md, docs/development.md and make help", strings.Join(prereqs, " "))
	if !names("lint, test-go (go vet)", "lint") || names("cfn-lint", "lint") || names("test-go", "test") {
		t.Error("names: a whole name of the Makefile's, and only that, is named")
	}
}

// TestMakeBenchDescribed holds make help's line for bench and
// docs/development.md's row for it to the packages the bench recipe runs.
func TestMakeBenchDescribed(t *testing.T) {
	mk := read(t, "Makefile")
	var pkgs []string
	for _, l := range makeRule(t, mk, "bench").recipe {
		for _, f := range strings.Fields(l) {
			if p, ok := strings.CutPrefix(f, "./"); ok {
				pkgs = append(pkgs, strings.TrimSuffix(p, "..."))
			}
		}
	}
	if len(pkgs) == 0 {
		t.Fatal("the bench recipe names no package")
	}
	for _, d := range []struct{ where, text string }{
		{"docs/development.md's make bench row", lineOf(t, "docs/development.md", read(t, "docs/development.md"), "| `make bench` |")},
		{"make help's line for bench", helpLine(t, mk, "bench")},
	} {
		for _, p := range pkgs {
			if !strings.Contains(d.text, p) {
				t.Errorf("%s does not say it runs the benchmarks of %s, as the recipe does:\n%s", d.where, p, d.text)
			}
		}
	}
}

// rieSetting is a command's SQSONCE_RIE=value.
var rieSetting = regexp.MustCompile(`(?:^|\s)SQSONCE_RIE=(\S+)\s`)

// TestRIECommands checks every shell command of the pages that sets
// SQSONCE_RIE against the Makefile, as docs/concurrency.md's
// "./test/concurrency/" command gives it: `make tools` comes first in its
// block and installs the emulator ($(RIE)), and the value is that path
// made absolute with $PWD (the command is given from the repository's
// root; go test runs a package in its own folder, where a relative path
// names nothing). Each package the command tests exists.
func TestRIECommands(t *testing.T) {
	mk := read(t, "Makefile")
	rie := filepath.Clean(variable(t, mk, "RIE"))
	if !slices.Contains(makeRule(t, mk, "tools").prereqs, "$(RIE)") {
		t.Fatalf("make tools does not install $(RIE) (%s)", rie)
	}
	perPage := map[string]int{}
	for _, page := range checked(t) {
		for _, b := range blocks(page, read(t, page)) {
			if b.lang() != "sh" {
				continue
			}
			tools := false
			for i, l := range strings.Split(b.code, "\n") {
				if strings.HasPrefix(strings.TrimSpace(l), "make tools") {
					tools = true
				}
				m := rieSetting.FindStringSubmatch(l + " ")
				if m == nil {
					continue
				}
				perPage[page]++
				where := page + ":" + strconv.Itoa(b.line+i)
				if !tools {
					t.Errorf("%s: SQSONCE_RIE with no `make tools` before it in the block, which installs %s", where, rie)
				}
				if v, ok := strings.CutPrefix(m[1], "$PWD/"); !ok || filepath.Clean(v) != rie {
					t.Errorf("%s: SQSONCE_RIE=%s, want $PWD/%s: make tools installs the emulator there, and go test runs a package in its own folder, where a relative path names nothing", where, m[1], rie)
				}
				for _, f := range strings.Fields(l) {
					if p, ok := strings.CutPrefix(f, "./"); ok && strings.HasPrefix(p, "test/") {
						if _, err := os.Stat(filepath.Join(root, filepath.FromSlash(p))); err != nil {
							t.Errorf("%s: the command tests %s: %v", where, f, err)
						}
					}
				}
			}
		}
	}
	if perPage["docs/concurrency.md"] == 0 {
		t.Errorf("docs/concurrency.md has no sh block with the SQSONCE_RIE=… go test … ./test/concurrency/ command: the test would check nothing (%v)", perPage)
	}
}
