package docs_test

import (
	"go/parser"
	"go/token"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"
)

var (
	// bodyField is the key the README's function takes.
	bodyField = regexp.MustCompile(`idempotency\.BodyField\("([^"]+)"\)`)
	// keySource is a construct's Props.KeySource.
	keySource = regexp.MustCompile(`KeySource:\s*"([^"]*)"`)
)

// section returns the text of a Markdown page's section under heading (a
// whole heading line), up to the next heading of its level or above.
func section(t *testing.T, file, text, heading string) string {
	t.Helper()
	i := strings.Index(text, "\n"+heading+"\n")
	if i < 0 {
		t.Fatalf("%s has no heading %q", file, heading)
	}
	level := len(heading) - len(strings.TrimLeft(heading, "#"))
	lines := strings.Split(text[i+len(heading)+2:], "\n")
	for j, l := range lines {
		n := len(l) - len(strings.TrimLeft(l, "#"))
		if n > 0 && n <= level && strings.HasPrefix(l[n:], " ") {
			lines = lines[:j]
			break
		}
	}
	return strings.Join(lines, "\n")
}

// TestREADMEKeySource holds the README's construct fragment to the
// README's function: its Props.KeySource is "body:" and the field the
// function keys on (idempotency.BodyField), so that sqsonce-ops, which
// reads SQSONCE_KEY from the function's environment, computes the
// function's record ids. test/ownfunction/stack, the README's CDK app
// that make own-function deploys, sets the same.
func TestREADMEKeySource(t *testing.T) {
	readme := read(t, "README.md")
	var field, source string
	for _, b := range blocks("README.md", section(t, "README.md", readme, "## Use it in your own function")) {
		switch {
		case strings.Contains(b.code, "idempotentconsumer.New("):
			source = "(none)"
			if m := keySource.FindStringSubmatch(b.code); m != nil {
				source = m[1]
			}
		case b.info == "go": // the function, a whole file
			if m := bodyField.FindStringSubmatch(b.code); m != nil {
				field = m[1]
			}
		}
	}
	if field == "" || source == "" {
		t.Fatalf("README.md's own function (key %q) or its construct fragment (KeySource %q) not found", field, source)
	}
	if want := "body:" + field; source != want {
		t.Errorf("README.md's construct fragment sets KeySource %s, want %q: the function keys on idempotency.BodyField(%q), and sqsonce-ops takes the key as SQSONCE_KEY says", source, want, field)
	}
	stack := read(t, "test/ownfunction/stack/main.go")
	if m := keySource.FindStringSubmatch(stack); m == nil || m[1] != "body:"+field {
		t.Errorf("test/ownfunction/stack/main.go's KeySource %v, want %q as the README's", m, "body:"+field)
	}
}

// metricsPackage is a package path ending in /metrics, in a code span.
var metricsPackage = regexp.MustCompile("`([a-z]+(?:/[a-z]+)*/metrics)`")

// TestInfraREADMEMetricsPackage: what infra/README.md says writes the
// metrics the construct's alarms watch is the package idempotentconsumer
// imports for them (middleware/metrics), not the reference app's own
// handler/metrics, which counts only its provider calls.
func TestInfraREADMEMetricsPackage(t *testing.T) {
	const module = "github.com/sqsonce/sqsonce/"
	files, err := filepath.Glob(filepath.Join(root, "infra", "idempotentconsumer", "*.go"))
	if err != nil {
		t.Fatal(err)
	}
	want := ""
	fset := token.NewFileSet()
	for _, f := range files {
		if strings.HasSuffix(f, "_test.go") {
			continue
		}
		af, err := parser.ParseFile(fset, f, nil, parser.ImportsOnly)
		if err != nil {
			t.Fatal(err)
		}
		for _, im := range af.Imports {
			p, _ := strconv.Unquote(im.Path.Value)
			if rel, ok := strings.CutPrefix(p, module); ok && strings.HasSuffix(rel, "/metrics") {
				want = rel
			}
		}
	}
	if want == "" {
		t.Fatal("infra/idempotentconsumer imports no sqsonce metrics package")
	}
	n := 0
	for i, l := range strings.Split(prose(read(t, "infra/README.md")), "\n") {
		for _, m := range metricsPackage.FindAllStringSubmatch(l, -1) {
			n++
			if m[1] != want {
				t.Errorf("infra/README.md:%d: %s, but the metrics the construct's alarms watch are %s's", i+1, m[1], want)
			}
		}
	}
	if n == 0 {
		t.Errorf("infra/README.md does not name %s, which writes the metrics the alarms watch", want)
	}
}
