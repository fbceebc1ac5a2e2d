package main

import (
	"bytes"
	"os"
	"testing"
)

// TestMainIsTheREADMEs: main.go, the function TestOwnFunction deploys, is
// byte for byte the Go block of the README's "Use it in your own
// function", so that the acceptance test runs what a new user copies.
func TestMainIsTheREADMEs(t *testing.T) {
	readme, err := os.ReadFile("../../README.md")
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
	main, err := os.ReadFile("main.go")
	if err != nil {
		t.Fatal(err)
	}
	if want := append(block, '\n'); !bytes.Equal(main, want) {
		t.Errorf("main.go is not the README's block: copy it again (awk '/^## Use it in your own function/{f=1} f&&/^```go$/{g=1;next} g&&/^```$/{exit} g' README.md > test/ownfunction/main.go): %d bytes, the block %d", len(main), len(want))
	}
}
