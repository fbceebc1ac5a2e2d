package main

import (
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestPlantedChange records a module's API, plants an incompatible change
// to an exported signature, and shows the gate fails until CHANGELOG.md's
// Unreleased section names the changed function, and that a name under a
// released version does not count.
func TestPlantedChange(t *testing.T) {
	dir := t.TempDir()
	write := func(name, text string) {
		t.Helper()
		p := filepath.Join(dir, name)
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, []byte(text), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	t.Setenv("GOWORK", "off")
	t.Setenv("GOFLAGS", "-mod=mod")
	write("go.mod", "module example.com/lib\n\ngo 1.26\n")
	write("middleware/p/p.go", "package p\n\n// F is the API.\nfunc F(n int) error { return nil }\n\n// T is a type.\ntype T struct{ A, B int }\n")
	write("middleware/p/internal/q/q.go", "package q\n\n// G is internal.\nfunc G() {}\n")
	patterns := []string{"example.com/lib/middleware/..."}
	gate := func() error {
		return run(io.Discard, dir, "api/baseline.txt", "CHANGELOG.md", false, patterns)
	}
	if err := run(io.Discard, dir, "api/baseline.txt", "CHANGELOG.md", true, patterns); err != nil {
		t.Fatal(err)
	}
	b, err := os.ReadFile(filepath.Join(dir, "api/baseline.txt"))
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(string(b), "example.com/lib/middleware/p.F\tfunc F(n int) error") || strings.Contains(string(b), "internal") {
		t.Fatalf("baseline:\n%s", b)
	}
	if err := gate(); err != nil {
		t.Fatalf("unchanged API fails the gate: %v", err)
	}

	// A compatible change (a new name) passes.
	write("middleware/p/p2.go", "package p\n\n// H is new.\nfunc H() {}\n")
	if err := gate(); err != nil {
		t.Fatalf("an added function fails the gate: %v", err)
	}

	// The planted incompatible change: F's parameter changes type.
	write("middleware/p/p.go", "package p\n\n// F is the API.\nfunc F(s string) error { return nil }\n\n// T is a type.\ntype T struct{ A, B int }\n")
	if err := gate(); err == nil {
		t.Fatal("a changed signature passes the gate")
	}
	write("CHANGELOG.md", "# Changelog\n\n## Unreleased\n\n## v0.9.0\n\n- `p.F` takes a string.\n")
	if err := gate(); err == nil {
		t.Fatal("a change named under a released version passes the gate")
	}
	write("CHANGELOG.md", "# Changelog\n\n## Unreleased\n\n- `p.F` takes a string.\n\n## v0.9.0\n\n- First release.\n")
	if err := gate(); err != nil {
		t.Fatalf("a change named in Unreleased fails the gate: %v", err)
	}

	// A removed field is incompatible; naming its type accepts it.
	write("middleware/p/p.go", "package p\n\n// F is the API.\nfunc F(s string) error { return nil }\n\n// T is a type.\ntype T struct{ A int }\n")
	if err := gate(); err == nil {
		t.Fatal("a removed field passes the gate")
	}
	write("CHANGELOG.md", "# Changelog\n\n## Unreleased\n\n- `p.F` takes a string; `p.T.B` is gone.\n")
	if err := gate(); err != nil {
		t.Fatalf("a removed field named in Unreleased fails the gate: %v", err)
	}
}

func TestNamed(t *testing.T) {
	for _, c := range []struct {
		text, key string
		want      bool
	}{
		{"`idempotency.Scope` is gone", "x/middleware/idempotency.Scope", true},
		{"`idempotency.ScopeX` is new", "x/middleware/idempotency.Scope", false},
		{"`myidempotency.Scope`", "x/middleware/idempotency.Scope", false},
		{"`idempotency.Config` loses Lease", "x/middleware/idempotency.Config.Lease", true},
		{"`idempotency.Config.Lease` goes", "x/middleware/idempotency.Config", false},
	} {
		if got := named(c.text, c.key); got != c.want {
			t.Errorf("named(%q, %q) = %v, want %v", c.text, c.key, got, c.want)
		}
	}
}
