// Command testreport reads `go test -json` output and writes it as plain
// `go test` (without -v) writes it, then the list of the tests that were
// skipped, each with its reason and, when the test says it (the
// "skipping: HINT" line of the project's server helpers), what to install
// to run it. make test pipes its Go tests through it:
//
//	set -o pipefail; go test -json ./... | tee build/test-go.json | go run ./tools/testreport
//	go run ./tools/testreport -skipped build/test-go.json   # the list again, alone
//
// As plain go test does, it shows a package's summary line ("ok", "FAIL",
// "?"), what the test binary printed itself (outside any test, or from a
// passed or skipped test: what is not a t.Log line), and every failed
// test's output under its "--- FAIL" line (subtests indented under their
// parent); a passed or skipped test's t.Log lines are not shown. Build errors
// are shown as they arrive; a line that is not JSON is copied as it is.
//
// It exits 1 if a test, a package or a build failed, else 0 (with
// pipefail, a go test that failed in a way its output does not show still
// fails the pipeline).
package main

import (
	"bufio"
	"encoding/json"
	"flag"
	"fmt"
	"io"
	"os"
	"regexp"
	"strings"
)

// event is one line of `go test -json` (cmd/test2json's TestEvent, and
// the go command's build events).
type event struct {
	Action     string
	Package    string
	Test       string
	Output     string
	ImportPath string // build-output and build-fail events
}

// skip is a skipped test.
type skip struct {
	Package, Test string
	Reason        string // what the test said, without its file:line prefix
	Hint          string // after "skipping: ", if the test said it
}

// pkg is what one package's events left so far.
type pkg struct {
	lines  []line          // its output, in order
	failed map[string]bool // failed tests
}

type line struct{ test, text string }

// report turns events into plain output.
type report struct {
	out    io.Writer
	pkgs   map[string]*pkg
	skips  []skip
	failed bool
}

func newReport(out io.Writer) *report {
	return &report{out: out, pkgs: map[string]*pkg{}}
}

// read consumes r to its end.
func (r *report) read(in io.Reader) error {
	sc := bufio.NewScanner(in)
	sc.Buffer(make([]byte, 64*1024), 16*1024*1024)
	for sc.Scan() {
		b := sc.Bytes()
		var e event
		if len(b) == 0 || b[0] != '{' || json.Unmarshal(b, &e) != nil || e.Action == "" {
			fmt.Fprintf(r.out, "%s\n", b)
			continue
		}
		r.event(e)
	}
	return sc.Err()
}

func (r *report) pkg(name string) *pkg {
	p := r.pkgs[name]
	if p == nil {
		p = &pkg{failed: map[string]bool{}}
		r.pkgs[name] = p
	}
	return p
}

func (r *report) event(e event) {
	switch e.Action {
	case "build-output":
		fmt.Fprint(r.out, e.Output)
		return
	case "build-fail":
		r.failed = true
		return
	}
	p := r.pkg(e.Package)
	switch e.Action {
	case "output":
		// An event is a line or part of one (a test's write without a
		// newline): kept as it is, the events concatenate to the stream.
		p.lines = append(p.lines, line{e.Test, e.Output})
	case "fail":
		r.failed = true
		if e.Test != "" {
			p.failed[e.Test] = true
		}
	case "skip":
		if e.Test != "" {
			r.skips = append(r.skips, skipOf(e.Package, e.Test, p.lines))
		}
	}
	if e.Test == "" && (e.Action == "pass" || e.Action == "fail" || e.Action == "skip") {
		r.flush(p)
		delete(r.pkgs, e.Package)
	}
}

// framing reports whether s is a line -v adds that plain go test does not
// show for a failed test ("=== RUN" and friends).
func framing(s string) bool {
	return strings.HasPrefix(s, "=== ")
}

// flush writes a finished package as plain go test does: what the test
// binary printed outside a test where it printed it, and each failed test
// where it ended.
func (r *report) flush(p *pkg) {
	inLog := map[string]bool{} // the test's last line was a t.Log line
	for i, l := range p.lines {
		switch {
		case l.test == "":
			if l.text != "PASS\n" {
				fmt.Fprint(r.out, l.text)
			}
		case p.failed[l.test]:
			if !strings.Contains(l.test, "/") && header(l.text) {
				r.block(p, l.test, i)
			}
		case framing(l.text) || header(l.text):
			inLog[l.test] = false
		case logLine.MatchString(l.text) || inLog[l.test] && strings.HasPrefix(l.text, "        "):
			inLog[l.test] = true // a passed or skipped test's log: not shown
		default:
			// What a passed or skipped test wrote to standard output or
			// error itself: plain go test shows it.
			inLog[l.test] = false
			fmt.Fprint(r.out, l.text)
		}
	}
}

// logLine is the first line of a t.Log message as go test -v shows it.
var logLine = regexp.MustCompile(`^ +[^ ]+\.go:\d+: `)

// header reports whether s is a test's "--- FAIL" (PASS, SKIP) line.
func header(s string) bool { return strings.HasPrefix(strings.TrimLeft(s, " "), "--- ") }

// block writes failed test t, whose header is p.lines[end]: the header,
// then its output and its failed subtests', in the order they came, each
// subtest's indented under it as plain go test indents it. A test's
// writes to standard output come after its header here (go test -v does
// not tell them from its t.Log lines).
func (r *report) block(p *pkg, t string, end int) {
	indent := strings.Repeat("    ", strings.Count(t, "/"))
	fmt.Fprint(r.out, indent+strings.TrimLeft(p.lines[end].text, " "))
	for i, l := range p.lines[:end] {
		switch {
		case l.test == t && !framing(l.text) && !header(l.text):
			fmt.Fprint(r.out, indent+l.text)
		case p.failed[l.test] && header(l.text) && strings.HasPrefix(l.test, t+"/") && !strings.Contains(l.test[len(t)+1:], "/"):
			r.block(p, l.test, i)
		}
	}
}

// skipOf reads why test was skipped from its output lines.
func skipOf(pkgName, test string, lines []line) skip {
	s := skip{Package: pkgName, Test: test}
	var reason []string
	for _, l := range lines {
		if l.test != test || framing(l.text) || strings.HasPrefix(strings.TrimSpace(l.text), "--- SKIP") {
			continue
		}
		text := strings.TrimSpace(l.text)
		if h, ok := strings.CutPrefix(text, "skipping: "); ok {
			s.Hint = h
			continue
		}
		// "file_test.go:12: message": the message.
		if i := strings.Index(text, ": "); i > 0 && strings.Contains(text[:i], ".go:") && !strings.Contains(text[:i], " ") {
			text = text[i+2:]
		}
		reason = append(reason, text)
	}
	s.Reason = strings.Join(reason, " ")
	return s
}

// writeSkips writes the list of skipped tests.
func writeSkips(w io.Writer, skips []skip) {
	if len(skips) == 0 {
		fmt.Fprintln(w, "skipped tests: none")
		return
	}
	fmt.Fprintf(w, "skipped tests (%d):\n", len(skips))
	for _, s := range skips {
		fmt.Fprintf(w, "  %s %s: %s\n", s.Package, s.Test, s.Reason)
		if s.Hint != "" {
			fmt.Fprintf(w, "      to run it: %s\n", s.Hint)
		}
	}
}

// run is the command: it returns the exit code.
func run(args []string, stdin io.Reader, stdout, stderr io.Writer) int {
	fs := flag.NewFlagSet("testreport", flag.ContinueOnError)
	fs.SetOutput(stderr)
	skipped := fs.Bool("skipped", false, "print only the skipped tests of the go test -json files named as arguments")
	if err := fs.Parse(args); err != nil {
		return 2
	}
	if !*skipped {
		if fs.NArg() > 0 {
			fmt.Fprintln(stderr, "testreport: reads go test -json on standard input; files only with -skipped")
			return 2
		}
		r := newReport(stdout)
		if err := r.read(stdin); err != nil {
			fmt.Fprintf(stderr, "testreport: %v\n", err)
			return 1
		}
		for _, p := range r.pkgs { // packages whose end never came (go test was killed)
			r.flush(p)
		}
		if r.failed {
			fmt.Fprintln(stdout, "FAIL") // as go test ends a failed run
		}
		writeSkips(stdout, r.skips)
		if r.failed {
			return 1
		}
		return 0
	}
	if fs.NArg() == 0 {
		fmt.Fprintln(stderr, "testreport: -skipped needs go test -json files")
		return 2
	}
	var all []skip
	for _, name := range fs.Args() {
		f, err := os.Open(name)
		if err != nil {
			fmt.Fprintf(stderr, "testreport: %v\n", err)
			return 1
		}
		r := newReport(io.Discard)
		err = r.read(f)
		f.Close()
		if err != nil {
			fmt.Fprintf(stderr, "testreport: %s: %v\n", name, err)
			return 1
		}
		all = append(all, r.skips...)
	}
	writeSkips(stdout, all)
	return 0
}

func main() { os.Exit(run(os.Args[1:], os.Stdin, os.Stdout, os.Stderr)) }
