package main

import (
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

// TestOwnCDKApp runs the "In your own CDK app" block of README.md as
// written, in a module outside the repository next to a folder named
// sqsonce that is this checkout, with the app of test/ownfunction/stack
// as its main, then builds it: the workspace is all such an app needs,
// with no replace.
func TestOwnCDKApp(t *testing.T) {
	b, err := os.ReadFile("README.md")
	if err != nil {
		t.Fatal(err)
	}
	text := string(b)
	i := strings.Index(text, "### In your own CDK app")
	if i < 0 {
		t.Fatal("README.md has no \"### In your own CDK app\" section")
	}
	start := strings.Index(text[i:], "```sh\n")
	if start < 0 {
		t.Fatal("the section has no sh block")
	}
	code := text[i+start+len("```sh\n"):]
	code = code[:strings.Index(code, "```")]
	if !strings.Contains(code, "go work use -r ../sqsonce") {
		t.Fatalf("the block does not join the checkout to the app's workspace:\n%s", code)
	}

	repo, err := filepath.Abs("..")
	if err != nil {
		t.Fatal(err)
	}
	parent := t.TempDir()
	if err := os.Symlink(repo, filepath.Join(parent, "sqsonce")); err != nil {
		t.Fatal(err)
	}
	app := filepath.Join(parent, "orders")
	if err := os.Mkdir(app, 0o755); err != nil {
		t.Fatal(err)
	}
	main, err := os.ReadFile("../test/ownfunction/stack/main.go")
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(app, "main.go"), main, 0o644); err != nil {
		t.Fatal(err)
	}
	for _, script := range []string{"set -e\n" + code, "go build -o app ."} {
		cmd := exec.Command("bash", "-c", script)
		cmd.Dir = app
		cmd.Env = []string{"GOFLAGS=", "GOTOOLCHAIN=local"}
		for _, kv := range os.Environ() {
			if !strings.HasPrefix(kv, "GOWORK=") {
				cmd.Env = append(cmd.Env, kv)
			}
		}
		if out, err := cmd.CombinedOutput(); err != nil {
			t.Fatalf("%s: %v\n%s", script, err, out)
		}
	}
	mod, err := os.ReadFile(filepath.Join(app, "go.mod"))
	if err != nil {
		t.Fatal(err)
	}
	if strings.Contains(string(mod), "replace") {
		t.Errorf("go.mod has a replace, which the workspace makes needless:\n%s", mod)
	}
}
