package failure_test

import (
	"errors"
	"os/exec"
	"strings"
	"testing"

	"github.com/sqsonce/sqsonce/middleware/failure"
)

// TestGuardDoesNotImportBatch: the guard takes any input, so neither it
// nor a store nor any other package under middleware/idempotency depends
// on the SQS handler package; the errors both need live here.
func TestGuardDoesNotImportBatch(t *testing.T) {
	const batch = "github.com/sqsonce/sqsonce/middleware/batch"
	out, err := exec.Command("go", "list", "-deps", "-f", `{{.ImportPath}}{{range .Imports}} {{.}}{{end}}`,
		"github.com/sqsonce/sqsonce/middleware/idempotency/...").Output()
	if err != nil {
		t.Fatalf("go list: %v", err)
	}
	var guard bool
	for line := range strings.Lines(string(out)) {
		fields := strings.Fields(line)
		if fields[0] == "github.com/sqsonce/sqsonce/middleware/idempotency" {
			guard = true
		}
		if fields[0] == batch {
			t.Errorf("%s is among the dependencies of middleware/idempotency/...", batch)
		}
		for _, imp := range fields[1:] {
			if imp == batch {
				t.Errorf("%s imports %s", fields[0], batch)
			}
		}
	}
	if !guard {
		t.Fatalf("go list did not list the guard's package:\n%s", out)
	}
}

func TestPermanent(t *testing.T) {
	if failure.Permanent(nil) != nil {
		t.Fatal("Permanent(nil) != nil")
	}
	base := errors.New("bad input")
	err := failure.Permanent(base)
	p, ok := errors.AsType[failure.PermanentError](err)
	if !ok || !p.Permanent() || !errors.Is(err, base) || err.Error() != base.Error() {
		t.Fatalf("Permanent(%v) = %v: want a PermanentError reporting true, wrapping it, with its message", base, err)
	}
}

func TestPanicError(t *testing.T) {
	inner := errors.New("wrapped")
	e := &failure.PanicError{Value: inner}
	if !errors.Is(e, inner) {
		t.Error("a PanicError does not unwrap to its error value")
	}
	s := (&failure.PanicError{Value: "secret message body"}).Error()
	if strings.Contains(s, "secret") || !strings.Contains(s, "a string (sha256:") {
		t.Errorf("Error() = %q: want the value's type and digest, not its text", s)
	}
}
