package docs_test

import (
	"fmt"
	"go/scanner"
	"go/token"
	"os"
	"path"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"testing"
	"unicode"
)

// root is the repository's root, from this package's folder.
const root = "../.."

// manual returns the README and the pages of docs/, by path from the root.
func manual(t *testing.T) []string {
	t.Helper()
	pages, err := filepath.Glob(filepath.Join(root, "docs", "*.md"))
	if err != nil {
		t.Fatal(err)
	}
	files := []string{"README.md"}
	for _, p := range pages {
		rel, _ := filepath.Rel(root, p)
		files = append(files, filepath.ToSlash(rel))
	}
	if len(files) < 10 {
		t.Fatalf("the manual has %d files (%v): not the repository's root?", len(files), files)
	}
	return files
}

// checked returns the files whose links and shell blocks the tests check:
// the manual, and infra/README.md, the CDK app's and the construct's page,
// which is not in the manual's word budget.
func checked(t *testing.T) []string {
	t.Helper()
	return append(manual(t), "infra/README.md")
}

func read(t *testing.T, file string) string {
	t.Helper()
	b, err := os.ReadFile(filepath.Join(root, filepath.FromSlash(file)))
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

// block is a fenced code block of a Markdown file.
type block struct {
	file string
	line int    // the line of the block's first line of code, from 1
	info string // the fence's info string: "go", "go fragment", "sh", ...
	code string
}

// lang is the block's language, the info string's first word.
func (b block) lang() string {
	f := strings.Fields(b.info)
	if len(f) == 0 {
		return ""
	}
	return f[0]
}

// blocks returns the fenced code blocks of a Markdown text, dedented by
// their fence's indentation (a block inside a list item).
func blocks(file, text string) []block {
	var (
		out    []block
		cur    *block
		indent string
		lines  []string
	)
	for i, l := range strings.Split(text, "\n") {
		trimmed := strings.TrimLeft(l, " ")
		if cur == nil {
			if strings.HasPrefix(trimmed, "```") {
				indent = l[:len(l)-len(trimmed)]
				cur = &block{file: file, line: i + 2, info: strings.TrimSpace(strings.TrimPrefix(trimmed, "```"))}
				lines = nil
			}
			continue
		}
		if strings.TrimSpace(l) == "```" {
			cur.code = strings.Join(lines, "\n")
			out = append(out, *cur)
			cur = nil
			continue
		}
		lines = append(lines, strings.TrimPrefix(l, indent))
	}
	return out
}

// prose returns text with its fenced code blocks blanked, line for line,
// so that what is found in it keeps its line number.
func prose(text string) string {
	lines := strings.Split(text, "\n")
	in := false
	for i, l := range lines {
		fence := strings.HasPrefix(strings.TrimLeft(l, " "), "```")
		if in || fence {
			lines[i] = ""
		}
		if fence {
			in = !in
		}
	}
	return strings.Join(lines, "\n")
}

var (
	headingLine = regexp.MustCompile(`(?m)^#{1,6} +(.+?) *#* *$`)
	htmlAnchor  = regexp.MustCompile(`<a (?:id|name)="([^"]+)"`)
	inlineLink  = regexp.MustCompile(`\[([^\]]*)\]\([^)]*\)`)
)

// anchors returns the anchors of a Markdown text as GitHub renders it: one
// per heading, its slug (lower case; letters, marks, numbers, "_", "-" and
// spaces kept, spaces as "-"; a repeated slug gets "-1", "-2", ...), and
// one per <a id> or <a name>.
func anchors(text string) map[string]bool {
	p := prose(text)
	out := map[string]bool{}
	seen := map[string]int{}
	for _, m := range headingLine.FindAllStringSubmatch(p, -1) {
		s := slug(m[1])
		if n := seen[s]; n > 0 {
			out[s+"-"+strconv.Itoa(n)] = true
		} else {
			out[s] = true
		}
		seen[s]++
	}
	for _, m := range htmlAnchor.FindAllStringSubmatch(p, -1) {
		out[m[1]] = true
	}
	return out
}

func slug(heading string) string {
	heading = inlineLink.ReplaceAllString(heading, "$1")
	var b strings.Builder
	for _, r := range strings.ToLower(heading) {
		switch {
		case r == ' ':
			b.WriteRune('-')
		case r == '-' || unicode.In(r, unicode.L, unicode.M, unicode.N, unicode.Pc):
			b.WriteRune(r)
		}
	}
	return b.String()
}

func TestBlocksAndAnchors(t *testing.T) {
	text := "# Title\n\n## Other events: API Gateway, `EventBridge`\n\n```go fragment\nx := 1\n```\n\n" +
		"- item\n\n  ```sh\n  make demo\n  ```\n\n## On moto_server: make deploy-local\n\n## Title\n\n## Title\n"
	bs := blocks("x.md", text)
	want := []block{{"x.md", 6, "go fragment", "x := 1"}, {"x.md", 12, "sh", "make demo"}}
	if !slices.Equal(bs, want) {
		t.Errorf("blocks %+v, want %+v", bs, want)
	}
	got := anchors(text)
	for _, a := range []string{"title", "other-events-api-gateway-eventbridge", "on-moto_server-make-deploy-local", "title-1", "title-2"} {
		if !got[a] {
			t.Errorf("anchor %q missing from %v", a, got)
		}
	}
	if len(got) != 5 {
		t.Errorf("anchors %v, want 5", got)
	}
}

var (
	// codeSpan is an inline code span: a link inside one is no link.
	codeSpan = regexp.MustCompile("`[^`\n]*`")
	// linkTarget is an inline link or image's target, after "](", up to
	// a space (a title) or the closing parenthesis.
	linkTarget = regexp.MustCompile(`\]\(\s*<?([^)\s>]+)>?(?:\s+"[^"]*")?\s*\)`)
	// refTarget is a reference definition's target: [name]: target.
	refTarget = regexp.MustCompile(`(?m)^ {0,3}\[[^\]]+\]:\s+<?(\S+?)>?(?:\s.*)?$`)
	// hrefTarget is an HTML link's target.
	hrefTarget = regexp.MustCompile(`<a [^>]*href="([^"]+)"`)
)

// link is a relative link of a Markdown file.
type link struct {
	file   string // the file it is in, from the root
	line   int
	target string // as written
}

// links returns the links of a Markdown text that point inside the
// repository (no scheme, not mailto): inline, reference and HTML ones,
// outside code blocks and code spans.
func links(file, text string) []link {
	var out []link
	for i, l := range strings.Split(prose(text), "\n") {
		l = codeSpan.ReplaceAllString(l, "")
		var targets []string
		for _, re := range []*regexp.Regexp{linkTarget, refTarget, hrefTarget} {
			for _, m := range re.FindAllStringSubmatch(l, -1) {
				targets = append(targets, m[1])
			}
		}
		for _, tg := range targets {
			if strings.Contains(tg, "://") || strings.HasPrefix(tg, "mailto:") {
				continue
			}
			out = append(out, link{file: file, line: i + 1, target: tg})
		}
	}
	return out
}

// resolve checks one link: its file (or folder) exists in the checkout,
// and its #anchor, if any, is one its Markdown target renders. It returns
// what is wrong, or "".
func resolve(l link, anchorsOf func(file string) (map[string]bool, error)) string {
	path, anchor, _ := strings.Cut(l.target, "#")
	target := l.file
	if path != "" {
		if strings.HasPrefix(path, "/") {
			return "an absolute path: GitHub resolves it against the site, not the repository"
		}
		target = filepath.ToSlash(filepath.Clean(filepath.Join(filepath.Dir(l.file), filepath.FromSlash(path))))
		if target == ".." || strings.HasPrefix(target, "../") {
			return "it leaves the repository"
		}
		if _, err := os.Stat(filepath.Join(root, filepath.FromSlash(target))); err != nil {
			return fmt.Sprintf("%s does not exist", target)
		}
	}
	if anchor == "" {
		return ""
	}
	if !strings.HasSuffix(target, ".md") {
		return fmt.Sprintf("an anchor on %s, which is not Markdown", target)
	}
	as, err := anchorsOf(target)
	if err != nil {
		return err.Error()
	}
	if !as[anchor] {
		return fmt.Sprintf("%s has no anchor #%s", target, anchor)
	}
	return ""
}

// TestLinks resolves every relative link of the README, of docs/ and of
// infra/README.md: the file or folder exists, and the #anchor is a heading
// (or <a id>) of its page as GitHub renders it.
func TestLinks(t *testing.T) {
	cache := map[string]map[string]bool{}
	anchorsOf := func(file string) (map[string]bool, error) {
		if as, ok := cache[file]; ok {
			return as, nil
		}
		b, err := os.ReadFile(filepath.Join(root, filepath.FromSlash(file)))
		if err != nil {
			return nil, err
		}
		cache[file] = anchors(string(b))
		return cache[file], nil
	}
	n, anchored := 0, 0
	perFile := map[string]int{}
	for _, file := range checked(t) {
		for _, l := range links(file, read(t, file)) {
			n++
			perFile[file]++
			if strings.Contains(l.target, "#") {
				anchored++
			}
			if msg := resolve(l, anchorsOf); msg != "" {
				t.Errorf("%s:%d: link %s: %s", l.file, l.line, l.target, msg)
			}
		}
	}
	if n == 0 || perFile["infra/README.md"] == 0 {
		t.Fatalf("%d relative links, %d of them in infra/README.md: the test would check nothing", n, perFile["infra/README.md"])
	}
	t.Logf("%d relative links (%d with an anchor) resolve", n, anchored)
}

// TestLinkCheckerFails holds the link checker to what it is for: a missing
// file, a missing anchor and a link out of the repository fail; a good
// file, folder and anchor pass; code is no link.
func TestLinkCheckerFails(t *testing.T) {
	text := "See [keys](keys.md#record-ids), [x](nosuch.md), [y](keys.md#no-such-anchor),\n" +
		"[z](../../etc/passwd), [here](#local), [pkg](../middleware/idempotency), `[no](link.md)`.\n\n" +
		"## Local\n\n```md\n[no](nosuch-either.md)\n```\n\n[ref]: stores.md#nosuch\n"
	ls := links("docs/x.md", text)
	if len(ls) != 7 {
		t.Fatalf("links %+v, want 7 (code is no link)", ls)
	}
	anchorsOf := func(file string) (map[string]bool, error) {
		switch file {
		case "docs/x.md":
			return anchors(text), nil
		case "docs/keys.md":
			return map[string]bool{"record-ids": true}, nil
		}
		return map[string]bool{}, nil
	}
	for _, c := range []struct {
		target string
		ok     bool
	}{
		{"keys.md#record-ids", true}, {"nosuch.md", false}, {"keys.md#no-such-anchor", false},
		{"../../etc/passwd", false}, {"#local", true}, {"../middleware/idempotency", true}, {"stores.md#nosuch", false},
	} {
		msg := resolve(link{file: "docs/x.md", line: 1, target: c.target}, anchorsOf)
		if (msg == "") != c.ok {
			t.Errorf("link %s: %q, want ok=%v", c.target, msg, c.ok)
		}
	}
}

// TestEveryPageLinked checks that the README (the tour) and docs/README.md
// (the index) each link every page of docs/, so that no page of the
// manual is reachable only by a search.
func TestEveryPageLinked(t *testing.T) {
	pages := manual(t)[1:]
	for _, from := range []string{"README.md", "docs/README.md"} {
		linked := map[string]bool{}
		for _, l := range links(from, read(t, from)) {
			path, _, _ := strings.Cut(l.target, "#")
			if path != "" {
				linked[filepath.ToSlash(filepath.Join(filepath.Dir(from), path))] = true
			}
		}
		for _, p := range pages {
			if p != from && !linked[p] {
				t.Errorf("%s does not link %s", from, p)
			}
		}
	}
	t.Logf("%d pages, each linked from README.md and docs/README.md", len(pages)-1)
}

// shMark is the line before a README shell block that says which tests run
// it, or why none can: <!-- sh: run by FILE (...); FILE ... --> or
// <!-- sh: not run here: REASON -->.
var shMark = regexp.MustCompile(`^<!-- sh: (run by|not run here:) (.+) -->$`)

// aside is a parenthesised note of a mark's list.
var aside = regexp.MustCompile(`\([^)]*\)`)

// runBy returns the files a mark's "run by" list names: the first word of
// each item of the list (separated by ";"), its notes in parentheses left
// out.
func runBy(list string) []string {
	var out []string
	for _, item := range strings.Split(aside.ReplaceAllString(list, ""), ";") {
		if f := strings.Fields(item); len(f) > 0 {
			out = append(out, f[0])
		}
	}
	return out
}

// identifies reports whether the Go source src of a file a mark names
// reads the block whose code is code, of the page named page: it names the
// page's file, and one of its string literals of at least 8 characters is
// part of the block's code (the marker or command the file finds the block
// by).
func identifies(src, page, code string) bool {
	if !strings.Contains(src, path.Base(page)) {
		return false
	}
	var sc scanner.Scanner
	fset := token.NewFileSet()
	sc.Init(fset.AddFile("src.go", -1, len(src)), []byte(src), nil, 0)
	for {
		_, tok, lit := sc.Scan()
		if tok == token.EOF {
			return false
		}
		if tok != token.STRING {
			continue
		}
		v, err := strconv.Unquote(lit)
		if err == nil && len(strings.TrimSpace(v)) >= 8 && strings.Contains(code, v) {
			return true
		}
	}
}

// TestREADMEShellBlocks checks that every shell block of the README, of
// the pages of docs/ and of infra/README.md is marked with the tests that
// run it, each of which reads that very block (it names the page, and
// finds the block by a string of its code: see identifies), or with why
// nothing here can run it; and that no shell command hides from that rule
// in a block with no language (see looksLikeShell).
func TestREADMEShellBlocks(t *testing.T) {
	n, run := 0, 0
	for _, page := range checked(t) {
		text := read(t, page)
		lines := strings.Split(text, "\n")
		for _, b := range blocks(page, text) {
			if b.lang() == "" {
				if first := firstCommand(b.code); looksLikeShell(first) {
					t.Errorf("%s:%d: a block with no language whose first line is a shell command (%q): make it ```sh, marked as the other sh blocks are", page, b.line-1, first)
				}
				continue
			}
			if b.lang() != "sh" {
				continue
			}
			n++
			fence := b.line - 2 // the fence's index in lines
			prev := ""
			if fence > 0 {
				prev = strings.TrimSpace(lines[fence-1])
			}
			m := shMark.FindStringSubmatch(prev)
			if m == nil {
				t.Errorf("%s:%d: a sh block without a <!-- sh: run by FILE --> or <!-- sh: not run here: REASON --> line before it", page, b.line-1)
				continue
			}
			if m[1] != "run by" {
				continue
			}
			run++
			for _, f := range runBy(m[2]) {
				src, err := os.ReadFile(filepath.Join(root, filepath.FromSlash(f)))
				if err != nil {
					t.Errorf("%s:%d: the block is run by %s, which cannot be read: %v", page, b.line-1, f, err)
					continue
				}
				if !identifies(string(src), page, b.code) {
					t.Errorf("%s:%d: the block is run by %s, which does not read it: it must name %s and find the block by a string of its code", page, b.line-1, f, path.Base(page))
				}
			}
		}
	}
	if n == 0 || run == 0 {
		t.Fatalf("%d sh blocks, %d run: the test would check nothing", n, run)
	}
	t.Logf("%d sh blocks in README.md, docs/ and infra/README.md, each marked; %d run by a test that reads it", n, run)
	if got := runBy("Makefile (make help-check; make lint); a/b_test.go (x)"); !slices.Equal(got, []string{"Makefile", "a/b_test.go"}) {
		t.Errorf("runBy: %v, want [Makefile a/b_test.go]", got)
	}
	src := "package x\nvar _ = [2]string{\"README.md\", \"moto_server \"} // `make help`"
	if !identifies(src, "README.md", "moto_server -p 5000 &") || identifies(src, "README.md", "make help") || identifies(src, "docs/stores.md", "moto_server -p 5000 &") {
		t.Error("identifies: a file that names the page and finds the block by its code, and only that, reads it")
	}
}

// firstCommand returns the first line of a block's code that is neither
// blank nor a # comment.
func firstCommand(code string) string {
	for _, l := range strings.Split(code, "\n") {
		if l = strings.TrimSpace(l); l != "" && !strings.HasPrefix(l, "#") {
			return l
		}
	}
	return ""
}

var (
	// assignment is a shell variable assignment before a command: VAR=value.
	assignment = regexp.MustCompile(`^[A-Za-z_][A-Za-z0-9_]*=\S*$`)
	// programName is what a command's name looks like: a lower-case word.
	programName = regexp.MustCompile(`^[a-z][a-z0-9_.+-]*$`)
	// commands are the programs the pages run, beside the repository's
	// own commands (cmd/*).
	commands = map[string]bool{
		"apt-get": true, "aws": true, "aws-lambda-rie": true, "brew": true, "cat": true, "cd": true,
		"cdk": true, "cfn-lint": true, "cp": true, "curl": true, "docker": true, "echo": true,
		"env": true, "export": true, "git": true, "go": true, "gofmt": true, "govulncheck": true,
		"initdb": true, "jq": true, "ls": true, "make": true, "mkdir": true, "moto_server": true,
		"mv": true, "node": true, "npm": true, "npx": true, "pg_ctl": true, "pip": true,
		"pip3": true, "postgres": true, "psql": true, "python3": true, "redis-cli": true,
		"redis-server": true, "rm": true, "sam": true, "staticcheck": true, "sudo": true, "zip": true,
	}
)

// looksLikeShell reports whether a line reads as a shell command: a "$ "
// prompt; one or more VAR=value followed by a program name (or VAR=$(...));
// or a program the pages run (commands, or one of cmd/), or a path to one
// (./x), first. "window = retention + …" is no command.
func looksLikeShell(line string) bool {
	f := strings.Fields(line)
	if len(f) > 1 && f[0] == "$" {
		return true
	}
	assigned := false
	for len(f) > 0 && assignment.MatchString(f[0]) {
		if _, v, _ := strings.Cut(f[0], "="); strings.HasPrefix(v, "$(") {
			return true
		}
		assigned = true
		f = f[1:]
	}
	if len(f) == 0 {
		return false
	}
	w := strings.TrimPrefix(f[0], "(") // a subshell: (cd dir && ...)
	if strings.HasPrefix(w, "./") || strings.HasPrefix(w, "../") || strings.HasPrefix(w, "~/") {
		return true
	}
	if assigned {
		return programName.MatchString(w)
	}
	if commands[w] {
		return true
	}
	_, err := os.Stat(filepath.Join(root, "cmd", w))
	return programName.MatchString(w) && err == nil
}

func TestLooksLikeShell(t *testing.T) {
	for _, c := range []struct {
		line string
		want bool
	}{
		{"SQSONCE_RIE=.tools/aws-lambda-rie go test -race ./test/concurrency/", true},
		{"CGO_ENABLED=0 GOOS=linux go build .", true},
		{"QUEUE_URL=$(aws sqs get-queue-url)", true},
		{"go test ./...", true},
		{"make tools", true},
		{"$ make demo", true},
		{"(cd tools && go test .)", true},
		{"./build/bootstrap", true},
		{"sqsonce-ops inspect --key o-1", true},
		{"window           = retention + maxReceiveCount × visibilityTimeout", false},
		{"visibilityTimeout = 6 × 180s = 1080s  (18m)", false},
		{"func handle(ctx durable.Context) (Out, error) {", false},
		{"producer  SendMessage ───┐", false},
		{"A=1", false},
		{"", false},
	} {
		if got := looksLikeShell(c.line); got != c.want {
			t.Errorf("looksLikeShell(%q) = %v, want %v", c.line, got, c.want)
		}
	}
	if got := firstCommand("# a comment\n\n  make test\n"); got != "make test" {
		t.Errorf("firstCommand: %q, want make test", got)
	}
}

// TestREADMEIsATour holds the README to a tour's length (issue 33: at
// most 250 lines, `wc -l README.md`): the manual is docs/.
func TestREADMEIsATour(t *testing.T) {
	const most = 250
	n := strings.Count(read(t, "README.md"), "\n")
	if n > most {
		t.Errorf("README.md has %d lines, want at most %d: move the detail to a page of docs/", n, most)
	}
	t.Logf("README.md: %d lines", n)
}

// TestManualWordBudget holds the pages of docs/ to issue 33's budget: at
// most 20,000 words in all, counted as `wc -w docs/*.md` counts them
// (runs of non-space characters). A page that grows takes words from
// another, or moves detail to a package doc.
func TestManualWordBudget(t *testing.T) {
	const most = 20000
	total := 0
	for _, page := range manual(t)[1:] {
		n := len(strings.Fields(read(t, page)))
		total += n
		t.Logf("%5d %s", n, page)
	}
	if total > most {
		t.Errorf("docs/*.md hold %d words, want at most %d: cut a page (its common case and example first, edge cases short)", total, most)
	}
	t.Logf("%d words in docs/*.md (at most %d)", total, most)
}
