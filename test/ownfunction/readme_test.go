package main

import (
	"bytes"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/sqsonce/sqsonce/internal/testenv/workspace"
)

// TestMainIsTheREADMEs: main.go, the function TestOwnFunction deploys, is
// byte for byte the Go block of the README's "Use it in your own
// function", so that the acceptance test runs what a new user copies.
func TestMainIsTheREADMEs(t *testing.T) {
	block := []byte(workspace.READMEMain(t))
	main, err := os.ReadFile("main.go")
	if err != nil {
		t.Fatal(err)
	}
	if want := block; !bytes.Equal(main, want) {
		t.Errorf("main.go is not the README's block: copy it again (awk '/^## Use it in your own function/{f=1} f&&/^```go$/{g=1;next} g&&/^```$/{exit} g' README.md > test/ownfunction/main.go): %d bytes, the block %d", len(main), len(want))
	}
}

// TestREADMESetup runs the README's setup block as written ("sqsonce is
// not published: …"), in a module outside the repository next to a folder
// named sqsonce that is this checkout, with main.go the README's function:
// it must build the bootstrap with no replace and no file the README does
// not name. sqsonce's modules come from the checkout (they are not
// published); the rest from the Go proxy, as a user's would on a fresh
// machine (with GOPROXY=off a cold module cache failed it in CI).
func TestREADMESetup(t *testing.T) {
	if testing.Short() {
		t.Skip("builds the function for Lambda in a module outside the repository (about 10 s)")
	}
	root := workspace.Root(t)
	readme, err := os.ReadFile(filepath.Join(root, "README.md"))
	if err != nil {
		t.Fatal(err)
	}
	_, section, ok := strings.Cut(string(readme), "sqsonce is not published: take it from a checkout")
	if !ok {
		t.Fatal(`README.md has no "sqsonce is not published" paragraph`)
	}
	_, block, ok := strings.Cut(section, "```sh\n")
	if !ok {
		t.Fatal("the paragraph has no sh block")
	}
	block, _, _ = strings.Cut(block, "```")
	if !strings.Contains(block, "go work use -r ../sqsonce") {
		t.Fatalf("the block does not join the checkout to the workspace:\n%s", block)
	}
	parent := t.TempDir()
	if err := os.Symlink(root, filepath.Join(parent, "sqsonce")); err != nil {
		t.Fatal(err)
	}
	app := filepath.Join(parent, "orders")
	if err := os.Mkdir(app, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(app, "main.go"), []byte(workspace.READMEMain(t)), 0o644); err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command("bash", "-c", "set -e\n"+block)
	cmd.Dir = app
	env := []string{"GOFLAGS=", "GOTOOLCHAIN=local"}
	for _, kv := range os.Environ() {
		if !strings.HasPrefix(kv, "GOWORK=") {
			env = append(env, kv)
		}
	}
	cmd.Env = env
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("%s: %v\n%s", block, err, out)
	}
	if fi, err := os.Stat(filepath.Join(app, "build", "bootstrap")); err != nil || fi.Size() == 0 {
		t.Fatalf("no build/bootstrap: %v", err)
	}
	mod, err := os.ReadFile(filepath.Join(app, "go.mod"))
	if err != nil {
		t.Fatal(err)
	}
	if strings.Contains(string(mod), "replace") {
		t.Errorf("go.mod has a replace:\n%s", mod)
	}
}
