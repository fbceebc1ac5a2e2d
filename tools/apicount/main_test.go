package main

import (
	"os"
	"path/filepath"
	"testing"
)

// TestCount counts a package of each kind of exported name: a function,
// a method of an exported type and one of an unexported type, a generic
// type's method, struct fields (exported, unexported, embedded),
// interface methods, grouped constants and variables, and a test file
// that does not count.
func TestCount(t *testing.T) {
	dir := t.TempDir()
	src := `// Package p is a fixture.
package p

// F is a function.
func F() {}

func f() {}

// T is a type.
type T struct {
	A, B int
	c    int
	E
}

// E is embedded.
type E struct{}

// M is a method.
func (T) M() {}

type u struct{ X int }

// M is a method of an unexported type.
func (u) M() {}

// G is generic.
type G[P any] struct{}

// M is a generic type's method.
func (*G[P]) M() {}

// I is an interface.
type I interface {
	N()
	n()
}

// Constants.
const (
	C1 = 1
	C2 = 2
	c3 = 3
)

// V is a variable.
var V, v = 1, 2
`
	for name, text := range map[string]string{"p.go": src, "p_test.go": "package p\n\nfunc TestX() {}\n", "go.mod": "module example.com/p\n"} {
		if err := os.WriteFile(filepath.Join(dir, name), []byte(text), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	c, err := count(dir)
	if err != nil {
		t.Fatal(err)
	}
	// Top level: F, T, E, G, I, C1, C2, V. Members: T.A, T.B, T.E, T.M,
	// G.M, I.N.
	if c.topLevel != 8 || c.idents != 14 {
		t.Errorf("counted %d top-level names and %d identifiers, want 8 and 14", c.topLevel, c.idents)
	}
	if c.docLines == 0 {
		t.Error("no go doc lines counted")
	}
}
