package standalone_test

import (
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// root is the module root, from this package's folder.
const root = "../.."

// skipped are folders that hold no file of the project's own.
var skipped = map[string]bool{".git": true, "node_modules": true, "cdk.out": true, ".tools": true, "build": true, "bin": true}

// files returns the text of the project's source and documentation files,
// by path from the root.
func files(t *testing.T) map[string]string {
	t.Helper()
	out := map[string]string{}
	err := filepath.WalkDir(root, func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.IsDir() {
			if skipped[d.Name()] {
				return filepath.SkipDir
			}
			return nil
		}
		switch filepath.Ext(path) {
		case ".go", ".md", ".json", ".yml", ".yaml", ".ts", ".js", ".sh", ".txt":
		default:
			if d.Name() != "Makefile" && d.Name() != "run" {
				return nil
			}
		}
		b, err := os.ReadFile(path)
		if err != nil {
			return err
		}
		rel, _ := filepath.Rel(root, path)
		out[filepath.ToSlash(rel)] = string(b)
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	if _, ok := out["middleware/idempotency/doc.go"]; !ok || len(out) < 50 {
		t.Fatalf("read %d files from %s, without the idempotency package doc: not the module root?", len(out), root)
	}
	return out
}

// TestNoReferenceOutside checks that no file refers to a document that is
// not in the repository: the design notes, the style guide or the problem
// statement the project was written from.
func TestNoReferenceOutside(t *testing.T) {
	self := "test/standalone/standalone_test.go"
	outside := []string{"DESIGN" + ".md", "STYLE" + ".md", "../" + "shared", "/work/" + "shared", "keys-" + "article", "the " + "article"}
	for path, text := range files(t) {
		if path == self {
			continue
		}
		for _, ref := range outside {
			if i := strings.Index(strings.ToLower(text), strings.ToLower(ref)); i >= 0 {
				line := 1 + strings.Count(text[:i], "\n")
				t.Errorf("%s:%d refers to %q, which is not in the repository", path, line, ref)
			}
		}
	}
}

// TestPromiseStatedOnce checks that the promise is written in the package
// doc of idempotency only, and that the README and the store packages link
// to it instead of restating it.
func TestPromiseStatedOnce(t *testing.T) {
	all := files(t)
	const home = "middleware/idempotency/doc.go"
	// Phrases that only a statement of the promise uses.
	statements := []string{"runs to completion at most once", "at most once while", "documented window", "one documented window", "never starts twice"}
	for path, text := range all {
		if path == home || path == "test/standalone/standalone_test.go" {
			continue
		}
		for _, s := range statements {
			if strings.Contains(strings.ToLower(text), s) {
				t.Errorf("%s restates the promise (%q): link to the package doc of idempotency instead", path, s)
			}
		}
	}
	if !strings.Contains(all[home], "# The promise") {
		t.Errorf("%s has no \"# The promise\" section", home)
	}
	links := map[string]string{
		"README.md": "idempotency#hdr-The_promise",
		"middleware/idempotency/dynamostore/doc.go": `package idempotency ("The promise")`,
		"middleware/idempotency/memstore/doc.go":    `package idempotency ("The promise")`,
	}
	for path, link := range links {
		if !strings.Contains(strings.Join(strings.Fields(strings.ReplaceAll(all[path], "//", "")), " "), link) {
			t.Errorf("%s does not link to the promise (%q)", path, link)
		}
	}
}
