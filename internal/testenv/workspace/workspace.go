// Package workspace lets a test build a module outside the repository
// against this tree: the repository is several modules joined by go.work,
// and a module elsewhere sees them only through replace directives.
package workspace

import (
	"bufio"
	"bytes"
	"fmt"
	"maps"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
)

// Module is one module of the workspace: its path and its directory.
type Module struct {
	Path, Dir string
}

// Root is the directory holding go.work, found from the test's working
// directory upwards; the test fails if there is none.
func Root(t testing.TB) string {
	t.Helper()
	dir, err := os.Getwd()
	if err != nil {
		t.Fatal(err)
	}
	for {
		if _, err := os.Stat(filepath.Join(dir, "go.work")); err == nil {
			return dir
		}
		up := filepath.Dir(dir)
		if up == dir {
			t.Fatal("workspace: no go.work above the test's directory")
		}
		dir = up
	}
}

// Modules lists the modules go.work uses, each with its absolute
// directory and the path its go.mod declares.
func Modules(t testing.TB) []Module {
	t.Helper()
	root := Root(t)
	work, err := os.ReadFile(filepath.Join(root, "go.work"))
	if err != nil {
		t.Fatal(err)
	}
	var mods []Module
	in := false
	for line := range strings.Lines(string(work)) {
		line = strings.TrimSpace(line)
		switch {
		case strings.HasPrefix(line, "use ("):
			in = true
		case in && line == ")":
			in = false
		case in && line != "" && !strings.HasPrefix(line, "//"):
			dir := filepath.Join(root, line)
			mods = append(mods, Module{Path: modulePath(t, dir), Dir: dir})
		}
	}
	if len(mods) == 0 {
		t.Fatal("workspace: go.work uses no module")
	}
	return mods
}

func modulePath(t testing.TB, dir string) string {
	f, err := os.Open(filepath.Join(dir, "go.mod"))
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		if p, ok := strings.CutPrefix(strings.TrimSpace(sc.Text()), "module "); ok {
			return strings.Trim(strings.TrimSpace(p), `"`)
		}
	}
	t.Fatalf("workspace: %s/go.mod names no module", dir)
	return ""
}

// Replaces is a replace block pointing every module of the workspace at
// its directory in this tree, for the go.mod of a module outside it.
func Replaces(t testing.TB) string {
	t.Helper()
	var b strings.Builder
	b.WriteString("replace (\n")
	for _, m := range Modules(t) {
		fmt.Fprintf(&b, "\t%s => %s\n", m.Path, m.Dir)
	}
	b.WriteString(")\n")
	return b.String()
}

// Sums is every go.sum line of the workspace's modules (and go.work.sum),
// sorted and without duplicates: the go.sum of a module outside the tree
// that depends on some of them, so that nothing needs a checksum database.
func Sums(t testing.TB) []byte {
	t.Helper()
	seen := map[string]bool{}
	files := []string{filepath.Join(Root(t), "go.work.sum")}
	for _, m := range Modules(t) {
		files = append(files, filepath.Join(m.Dir, "go.sum"))
	}
	for _, f := range files {
		data, err := os.ReadFile(f)
		if os.IsNotExist(err) {
			continue
		}
		if err != nil {
			t.Fatal(err)
		}
		for line := range strings.Lines(string(data)) {
			if line = strings.TrimSpace(line); line != "" {
				seen[line] = true
			}
		}
	}
	lines := slices.Sorted(maps.Keys(seen))
	return []byte(strings.Join(lines, "\n") + "\n")
}

// GoMod is the go.mod of a module named path outside the tree that may
// import any package of the workspace or of its modules' requirements:
// every module's require lines (each path once; the go command's minimal
// version selection raises it to what the replaced modules need) and
// [Replaces]. With [Sums] as its go.sum it builds with GOFLAGS=-mod=mod,
// from the module cache or, where that is cold, the Go proxy.
func GoMod(t testing.TB, path string) string {
	t.Helper()
	mods := Modules(t)
	ours := map[string]bool{}
	for _, m := range mods {
		ours[m.Path] = true
	}
	seen := map[string]bool{}
	var b strings.Builder
	fmt.Fprintf(&b, "module %s\n\ngo 1.26.0\n\nrequire (\n", path)
	for _, m := range mods {
		data, err := os.ReadFile(filepath.Join(m.Dir, "go.mod"))
		if err != nil {
			t.Fatal(err)
		}
		in := false
		for line := range strings.Lines(string(data)) {
			line = strings.TrimSpace(line)
			var req string
			switch {
			case line == "require (":
				in = true
			case in && line == ")":
				in = false
			case in:
				req = line
			case strings.HasPrefix(line, "require "):
				req = strings.TrimPrefix(line, "require ")
			}
			req, _, _ = strings.Cut(req, "//")
			f := strings.Fields(req)
			if len(f) != 2 || ours[f[0]] || seen[f[0]] {
				continue
			}
			seen[f[0]] = true
			fmt.Fprintf(&b, "\t%s %s\n", f[0], f[1])
		}
	}
	b.WriteString(")\n\n")
	b.WriteString(Replaces(t))
	return b.String()
}

// READMEMain returns the Go block of README.md's "Use it in your own
// function", the function a new user copies, ending in a newline.
func READMEMain(t testing.TB) string {
	t.Helper()
	readme, err := os.ReadFile(filepath.Join(Root(t), "README.md"))
	if err != nil {
		t.Fatal(err)
	}
	_, section, ok := bytes.Cut(readme, []byte("\n## Use it in your own function\n"))
	if !ok {
		t.Fatal(`README.md has no section "## Use it in your own function"`)
	}
	_, block, ok := bytes.Cut(section, []byte("\n```go\n"))
	if !ok {
		t.Fatal("the section has no ```go block")
	}
	block, _, ok = bytes.Cut(block, []byte("\n```\n"))
	if !ok {
		t.Fatal("the section's ```go block does not end")
	}
	return string(block) + "\n"
}
