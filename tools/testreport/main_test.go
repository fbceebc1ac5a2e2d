package main

import (
	"bytes"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"sync"
	"testing"
)

// hint is what the sample's server-needing test says to install, in the
// form the project's server helpers (testproc.Unavailable) use.
const hint = "install sample-server (apt-get install sample-server)"

// sample is a small module: a package with a passing, a failing, two
// skipped tests and subtests of each kind; one that passes; one without
// tests; and one that does not build.
var sample = map[string]string{
	"go.mod": "module example.com/sample\n\ngo 1.22\n",
	"a/a_test.go": `package a

import (
	"fmt"
	"testing"
)

func TestMain(m *testing.M) {
	fmt.Println("printed by TestMain")
	m.Run()
}

func TestPass(t *testing.T) { t.Log("a passing test's log") }

func TestFail(t *testing.T) {
	t.Log("a failing test's log")
	t.Error("boom")
}

func TestNeedsServer(t *testing.T) {
	t.Skipf("sampleserver: sample-server not found\nskipping: ` + hint + `")
}

func TestLong(t *testing.T) { t.Skip("only with -long") }

func TestSub(t *testing.T) {
	t.Run("pass", func(t *testing.T) {})
	t.Run("fail", func(t *testing.T) { t.Fatal("the subtest failed") })
	t.Run("skip", func(t *testing.T) { t.Skip("a skipped subtest") })
	t.Log("the parent's log, after its subtests")
}

func TestPartialLine(t *testing.T) { fmt.Print("a line written in two parts, ") ; fmt.Println("by a passing test") }
`,
	"b/b_test.go": "package b\n\nimport \"testing\"\n\nfunc TestOK(t *testing.T) {}\n",
	"c/c.go":      "package c\n",
	"d/d_test.go": "package d\n\nimport \"testing\"\n\nfunc TestBroken(t *testing.T) { undefined() }\n",
}

// goTest runs go test with args in dir and returns its standard output,
// its standard error and whether it failed.
func goTest(t *testing.T, dir string, args ...string) (string, string, bool) {
	t.Helper()
	cmd := exec.Command("go", append([]string{"test", "-count=1", "-p", "1"}, args...)...)
	cmd.Dir = dir
	cmd.Env = append(os.Environ(), "GOWORK=off", "GOFLAGS=", "GOTOOLCHAIN=local", "CI=")
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	err := cmd.Run()
	var exit *exec.ExitError
	if err != nil && !errors.As(err, &exit) {
		t.Fatalf("go test %v: %v\n%s", args, err, stderr.String())
	}
	return stdout.String(), stderr.String(), err != nil
}

var (
	sampleOnce sync.Once
	sampleDir  string
	sampleErr  error
)

// writeSample writes the sample module once for the tests (one directory,
// so that go's build cache serves the later builds), removed at the end.
func writeSample(t *testing.T) string {
	t.Helper()
	sampleOnce.Do(func() {
		if sampleDir, sampleErr = os.MkdirTemp("", "testreport-sample-"); sampleErr != nil {
			return
		}
		for name, text := range sample {
			path := filepath.Join(sampleDir, name)
			if sampleErr = os.MkdirAll(filepath.Dir(path), 0o755); sampleErr != nil {
				return
			}
			if sampleErr = os.WriteFile(path, []byte(text), 0o644); sampleErr != nil {
				return
			}
		}
	})
	if sampleErr != nil {
		t.Fatal(sampleErr)
	}
	return sampleDir
}

func TestMain(m *testing.M) {
	code := m.Run()
	if sampleDir != "" {
		os.RemoveAll(sampleDir)
	}
	os.Exit(code)
}

var durations = regexp.MustCompile(`\(\d+\.\d+s\)|\t\d+\.\d+s`)

// normal is output with its durations blanked.
func normal(s string) string { return durations.ReplaceAllString(s, "(T)") }

func runReport(t *testing.T, recorded string, args ...string) (string, int) {
	t.Helper()
	var stdout, stderr bytes.Buffer
	code := run(args, strings.NewReader(recorded), &stdout, &stderr)
	if stderr.Len() > 0 {
		t.Errorf("testreport %v wrote to stderr: %s", args, stderr.String())
	}
	return stdout.String(), code
}

// skippedOf returns the names in the "--- SKIP: NAME" lines of go test
// -v output.
func skippedOf(verbose string) []string {
	var names []string
	for _, l := range strings.Split(verbose, "\n") {
		if rest, ok := strings.CutPrefix(strings.TrimSpace(l), "--- SKIP: "); ok {
			names = append(names, strings.Fields(rest)[0])
		}
	}
	slices.Sort(names)
	return names
}

// The report of a recorded go test -json run of the sample's packages that
// build is what plain go test printed for the same packages, durations
// aside, then the skipped tests: the ones go test -v reports skipped,
// with the hint of the one that gave one. It exits 1, as go test does.
func TestReportIsPlainOutputThenSkips(t *testing.T) {
	dir := writeSample(t)
	pkgs := []string{"./a", "./b", "./c"}
	plain, _, plainFailed := goTest(t, dir, pkgs...)
	recorded, _, _ := goTest(t, dir, append([]string{"-json"}, pkgs...)...)
	verbose, _, _ := goTest(t, dir, append([]string{"-v"}, pkgs...)...)
	if !plainFailed {
		t.Fatal("the sample's plain go test passed; it has failing tests")
	}

	got, code := runReport(t, recorded)
	before, list, ok := strings.Cut(got, "skipped tests (")
	if !ok {
		t.Fatalf("no list of skipped tests in:\n%s", got)
	}
	if normal(before) != normal(plain) {
		t.Errorf("report before the list:\n%s\nplain go test:\n%s", before, plain)
	}
	if code != 1 {
		t.Errorf("exit %d, want 1 (go test failed)", code)
	}
	for _, s := range []string{"=== RUN", "a passing test's log", "a skipped subtest\n    ---"} {
		if strings.Contains(before, s) {
			t.Errorf("the report shows %q, which plain go test does not", s)
		}
	}

	r := newReport(&bytes.Buffer{})
	if err := r.read(strings.NewReader(recorded)); err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, s := range r.skips {
		names = append(names, s.Test)
		if !strings.Contains(list, s.Package+" "+s.Test+": "+s.Reason+"\n") {
			t.Errorf("the list does not name %s %s with its reason %q:\n%s", s.Package, s.Test, s.Reason, list)
		}
		if s.Test == "TestNeedsServer" && (s.Hint != hint || !strings.Contains(list, "to run it: "+hint+"\n")) {
			t.Errorf("TestNeedsServer's hint %q, want %q in the list:\n%s", s.Hint, hint, list)
		}
		if s.Test != "TestNeedsServer" && s.Hint != "" {
			t.Errorf("%s has a hint %q; it gave none", s.Test, s.Hint)
		}
		if s.Reason == "" || strings.Contains(s.Reason, "_test.go:") {
			t.Errorf("%s's reason %q: want the message without its file:line", s.Test, s.Reason)
		}
	}
	slices.Sort(names)
	if want := skippedOf(verbose); !slices.Equal(names, want) || len(want) == 0 {
		t.Errorf("skipped %q, want %q (go test -v's --- SKIP lines)", names, want)
	}

	// -skipped prints the same list from the recorded file.
	file := filepath.Join(t.TempDir(), "run.json")
	if err := os.WriteFile(file, []byte(recorded), 0o644); err != nil {
		t.Fatal(err)
	}
	again, code := runReport(t, "", "-skipped", file)
	if code != 0 || again != "skipped tests ("+list {
		t.Errorf("-skipped: exit %d,\n%s\nwant 0 and\nskipped tests (%s", code, again, list)
	}
}

// A passing run is go test's "ok" line, an empty list and exit 0.
func TestPassingRun(t *testing.T) {
	dir := writeSample(t)
	plain, _, failed := goTest(t, dir, "./b")
	recorded, _, _ := goTest(t, dir, "-json", "./b")
	if failed {
		t.Fatalf("package b failed:\n%s", plain)
	}
	got, code := runReport(t, recorded)
	if code != 0 || normal(got) != normal(plain)+"skipped tests: none\n" {
		t.Errorf("exit %d, report:\n%s\nwant 0 and plain go test's\n%s", code, got, plain)
	}
}

// A package that does not build shows what plain go test prints for it
// (the compiler's error on its standard error, the FAIL line on its
// standard output), and exits 1.
func TestBuildFailure(t *testing.T) {
	dir := writeSample(t)
	plainOut, plainErr, failed := goTest(t, dir, "./d")
	recorded, _, _ := goTest(t, dir, "-json", "./d")
	if !failed {
		t.Fatal("package d built")
	}
	got, code := runReport(t, recorded)
	if code != 1 {
		t.Errorf("exit %d, want 1", code)
	}
	for _, l := range strings.Split(strings.TrimSpace(plainErr+plainOut), "\n") {
		if l != "" && !strings.Contains(normal(got), normal(l)) {
			t.Errorf("the report lacks plain go test's line %q:\n%s", l, got)
		}
	}
}

// Bad arguments are exit 2 with a reason.
func TestArguments(t *testing.T) {
	for _, args := range [][]string{{"file.json"}, {"-skipped"}, {"-nosuchflag"}} {
		var stdout, stderr bytes.Buffer
		if code := run(args, strings.NewReader(""), &stdout, &stderr); code != 2 || stderr.Len() == 0 {
			t.Errorf("%q: exit %d, stderr %q; want 2 and a reason", args, code, stderr.String())
		}
	}
}
