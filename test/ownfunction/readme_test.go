package main

import (
	"bytes"
	"os"
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
