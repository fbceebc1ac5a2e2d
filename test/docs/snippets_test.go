package docs_test

import (
	"bytes"
	"context"
	"fmt"
	"go/ast"
	"go/parser"
	"go/token"
	"os"
	"os/exec"
	"path/filepath"

	"github.com/sqsonce/sqsonce/internal/testenv/workspace"
	"slices"
	"sort"
	"strings"
	"testing"
	"time"
)

// imports maps the package names snippets use to their import paths.
var imports = map[string]string{
	"context": "context", "errors": "errors", "fmt": "fmt", "log": "log", "os": "os",
	"slog": "log/slog", "time": "time", "strings": "strings", "json": "encoding/json",
	"http": "net/http", "sha256": "crypto/sha256", "hex": "encoding/hex",

	"events":   "github.com/aws/aws-lambda-go/events",
	"lambda":   "github.com/aws/aws-lambda-go/lambda",
	"aws":      "github.com/aws/aws-sdk-go-v2/aws",
	"config":   "github.com/aws/aws-sdk-go-v2/config",
	"dynamodb": "github.com/aws/aws-sdk-go-v2/service/dynamodb",
	"kms":      "github.com/aws/aws-sdk-go-v2/service/kms",
	"sqs":      "github.com/aws/aws-sdk-go-v2/service/sqs",
	"redis":    "github.com/redis/go-redis/v9",
	"pgxpool":  "github.com/jackc/pgx/v5/pgxpool",

	"idempotency":   "github.com/sqsonce/sqsonce/middleware/idempotency",
	"driver":        "github.com/sqsonce/sqsonce/middleware/idempotency/driver",
	"dynamostore":   "github.com/sqsonce/sqsonce/middleware/idempotency/dynamostore",
	"redisstore":    "github.com/sqsonce/sqsonce/middleware/idempotency/redisstore",
	"pgstore":       "github.com/sqsonce/sqsonce/middleware/idempotency/pgstore",
	"memstore":      "github.com/sqsonce/sqsonce/middleware/idempotency/memstore",
	"kmsseal":       "github.com/sqsonce/sqsonce/middleware/idempotency/kmsseal",
	"jmespath":      "github.com/sqsonce/sqsonce/middleware/idempotency/jmespath",
	"batch":         "github.com/sqsonce/sqsonce/middleware/batch",
	"sqsvisibility": "github.com/sqsonce/sqsonce/middleware/batch/sqsvisibility",
	"sqsdlq":        "github.com/sqsonce/sqsonce/middleware/batch/sqsdlq",
	"lambdaenv":     "github.com/sqsonce/sqsonce/middleware/lambdaenv",
	"metrics":       "github.com/sqsonce/sqsonce/middleware/metrics",
	"oteltrace":     "github.com/sqsonce/sqsonce/middleware/oteltrace",

	"awscdk":             "github.com/aws/aws-cdk-go/awscdk/v2",
	"awslambda":          "github.com/aws/aws-cdk-go/awscdk/v2/awslambda",
	"jsii":               "github.com/aws/jsii-runtime-go",
	"idempotentconsumer": "github.com/sqsonce/sqsonce/infra/idempotentconsumer",
}

// inInfra reports whether an import path is only in infra's module.
func inInfra(path string) bool {
	return strings.HasPrefix(path, "github.com/aws/aws-cdk-go/") || strings.HasPrefix(path, "github.com/aws/jsii-runtime-go") ||
		strings.HasPrefix(path, "github.com/sqsonce/sqsonce/infra")
}

// inOteltrace reports whether an import path is only in oteltrace's module.
func inOteltrace(path string) bool {
	return strings.HasPrefix(path, "github.com/sqsonce/sqsonce/middleware/oteltrace") || strings.HasPrefix(path, "go.opentelemetry.io/")
}

// snippet is a Go block made into a file of a package of its own.
type snippet struct {
	block
	fragment bool
	infra    bool              // it needs infra's module (the CDK)
	otel     bool              // it needs oteltrace's module (OpenTelemetry)
	src      string            // the file, with //line directives pointing at the Markdown
	stubs    map[string]string // the stub files of its package, by name
}

// goSnippets returns the Go blocks of the manual as files.
func goSnippets(t *testing.T) []snippet {
	t.Helper()
	var out []snippet
	for _, file := range manual(t) {
		for _, b := range blocks(file, read(t, file)) {
			if b.lang() != "go" {
				continue
			}
			s, err := makeSnippet(b)
			if err != nil {
				t.Errorf("%s:%d: %v", b.file, b.line, err)
				continue
			}
			out = append(out, s)
		}
	}
	return out
}

// stubName is the file in testdata/stubs that declares what a page's
// fragments use without declaring it.
func stubName(file string) string {
	switch file {
	case "README.md":
		return "README.go"
	case "docs/README.md":
		return "index.go"
	}
	return strings.TrimSuffix(filepath.Base(file), ".md") + ".go"
}

// makeSnippet makes a Go block into a file: a whole file as it is; a
// fragment as declarations or, when it does not parse as those, as the body
// of a function that also uses every name the fragment declares (a
// fragment shows a step, not what comes after it), with the imports of the
// package names it uses and its page's stub.
func makeSnippet(b block) (snippet, error) {
	fields := strings.Fields(b.info)
	s := snippet{block: b}
	names := map[string]string{}
	for k, v := range imports {
		names[k] = v
	}
	for _, f := range fields[1:] {
		if f == "fragment" {
			s.fragment = true
			continue
		}
		name, path, ok := strings.Cut(f, "=")
		if !ok || !s.fragment {
			return s, fmt.Errorf("info string %q: want \"go\" or \"go fragment [name=import/path ...]\"", b.info)
		}
		names[name] = path
	}
	// A relative //line file name is taken relative to the generated
	// file's folder: name the Markdown by its absolute path.
	abs, err := filepath.Abs(filepath.Join(root, filepath.FromSlash(b.file)))
	if err != nil {
		return s, err
	}
	line := fmt.Sprintf("//line %s:%d\n", abs, b.line)
	if !s.fragment {
		f, err := parser.ParseFile(token.NewFileSet(), b.file, line+b.code, parser.ImportsOnly)
		if err != nil {
			return s, fmt.Errorf("a go block is a whole file (mark a part of one ```go fragment): %v", err)
		}
		for _, im := range f.Imports {
			s.infra = s.infra || inInfra(strings.Trim(im.Path.Value, `"`))
			s.otel = s.otel || inOteltrace(strings.Trim(im.Path.Value, `"`))
		}
		s.src = line + b.code + "\n"
		return s, nil
	}

	// The names a fragment may use undeclared: common.go's and its page's,
	// or, for the CDK, infra.go's. Which one it is shows in its imports.
	pageStubs, pageNames, err := readStubs("common.go", stubName(b.file))
	if err != nil {
		return s, err
	}
	infraStubs, infraNames, err := readStubs("infra.go")
	if err != nil {
		return s, err
	}
	stubNames := map[string]bool{}
	for n := range pageNames {
		stubNames[n] = true
	}
	for n := range infraNames {
		stubNames[n] = true
	}
	fset := token.NewFileSet()
	head := "package snippet\n\n"
	src := head + line + b.code + "\n"
	f, err := parser.ParseFile(fset, b.file, src, 0)
	if err != nil {
		src = head + "func snippet() {\n" + line + b.code + "\n"
		f, err = parser.ParseFile(fset, b.file, src+"}\n", 0)
		if err != nil {
			return s, fmt.Errorf("a fragment parses neither as declarations nor as statements: %v", err)
		}
		body := f.Decls[0].(*ast.FuncDecl).Body
		var uses []string
		for _, name := range declared(body.List) {
			uses = append(uses, "\t_ = "+name+"\n")
		}
		src += strings.Join(uses, "") + "}\n"
	}
	// The package names it uses: selectors on names declared nowhere in the
	// fragment nor in its stub.
	used := map[string]bool{}
	ast.Inspect(f, func(n ast.Node) bool {
		if sel, ok := n.(*ast.SelectorExpr); ok {
			if id, ok := sel.X.(*ast.Ident); ok && id.Obj == nil && !stubNames[id.Name] {
				used[id.Name] = true
			}
		}
		return true
	})
	var paths []string
	for name := range used {
		path, ok := names[name]
		if !ok {
			return s, fmt.Errorf("the fragment uses %s., which is no package the test knows (add it to imports, or name=path to the info string)", name)
		}
		s.infra = s.infra || inInfra(path)
		s.otel = s.otel || inOteltrace(path)
		if filepath.Base(path) == name {
			paths = append(paths, fmt.Sprintf("\t%q\n", path))
		} else {
			paths = append(paths, fmt.Sprintf("\t%s %q\n", name, path))
		}
	}
	sort.Strings(paths)
	if len(paths) > 0 {
		src = head + "import (\n" + strings.Join(paths, "") + ")\n\n" + strings.TrimPrefix(src, head)
	}
	s.src = src
	s.stubs = pageStubs
	if s.infra {
		s.stubs = infraStubs
	}
	return s, nil
}

// declared returns the names a function body's top-level statements
// declare (with := or var), but _.
func declared(stmts []ast.Stmt) []string {
	var out []string
	add := func(id *ast.Ident) {
		if id.Name != "_" && !slices.Contains(out, id.Name) {
			out = append(out, id.Name)
		}
	}
	for _, st := range stmts {
		switch st := st.(type) {
		case *ast.AssignStmt:
			if st.Tok == token.DEFINE {
				for _, e := range st.Lhs {
					if id, ok := e.(*ast.Ident); ok {
						add(id)
					}
				}
			}
		case *ast.DeclStmt:
			if g, ok := st.Decl.(*ast.GenDecl); ok && g.Tok == token.VAR {
				for _, sp := range g.Specs {
					for _, id := range sp.(*ast.ValueSpec).Names {
						add(id)
					}
				}
			}
		}
	}
	return out
}

// readStubs returns the files of testdata/stubs named that exist (a page
// may have none), and the names they declare.
func readStubs(files ...string) (map[string]string, map[string]bool, error) {
	out := map[string]string{}
	names := map[string]bool{}
	for _, name := range files {
		b, err := os.ReadFile(filepath.Join("testdata", "stubs", name))
		if os.IsNotExist(err) {
			continue
		}
		if err != nil {
			return nil, nil, err
		}
		f, err := parser.ParseFile(token.NewFileSet(), name, b, 0)
		if err != nil {
			return nil, nil, err
		}
		out[name] = string(b)
		for _, d := range f.Decls {
			switch d := d.(type) {
			case *ast.FuncDecl:
				names[d.Name.Name] = true
			case *ast.GenDecl:
				for _, sp := range d.Specs {
					switch sp := sp.(type) {
					case *ast.ValueSpec:
						for _, id := range sp.Names {
							names[id.Name] = true
						}
					case *ast.TypeSpec:
						names[sp.Name.Name] = true
					}
				}
			}
		}
	}
	return out, names, nil
}

// module writes a module in dir that may import every module of the
// workspace, each replaced by its directory in the checkout, with every
// module's requirements and go.sum lines, so that nothing is downloaded.
func module(t *testing.T, dir string) {
	t.Helper()
	if err := os.WriteFile(filepath.Join(dir, "go.mod"), []byte(workspace.GoMod(t, "snippets.test")), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, "go.sum"), workspace.Sums(t), 0o644); err != nil {
		t.Fatal(err)
	}
}

// vet writes each snippet as a package of a module in a temporary
// directory and runs go vet on them all; it returns vet's output and
// error. Positions in it are the Markdown's.
func vet(t *testing.T, modDir string, snippets []snippet) ([]byte, error) {
	t.Helper()
	dir := t.TempDir()
	module(t, dir)
	for i, s := range snippets {
		pkg := filepath.Join(dir, fmt.Sprintf("s%03d", i))
		if err := os.Mkdir(pkg, 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(pkg, "snippet.go"), []byte(s.src), 0o644); err != nil {
			t.Fatal(err)
		}
		for name, text := range s.stubs {
			if err := os.WriteFile(filepath.Join(pkg, "stub_"+name), []byte(text), 0o644); err != nil {
				t.Fatal(err)
			}
		}
	}
	ctx, cancel := context.WithTimeout(t.Context(), 10*time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, "go", "vet", "./...")
	cmd.Dir = dir
	// sqsonce's modules come from the checkout (replaced); the rest from
	// the module cache or, on a fresh machine, the Go proxy.
	cmd.Env = append(os.Environ(), "GOFLAGS=-mod=mod -buildvcs=false", "GOWORK=off", "GOTOOLCHAIN=local")
	return cmd.CombinedOutput()
}

// TestGoSnippets compiles every Go block of the README and of docs/: whole
// files as written, fragments inside their stub (see the package doc), with
// go vet in a module of their own that takes this checkout for sqsonce (and
// for sqsonce/infra, for the fragments that use the CDK).
func TestGoSnippets(t *testing.T) {
	t.Parallel()
	snippets := goSnippets(t)
	var inRoot, inInfra, inOtel []snippet
	perFile := map[string]int{}
	fragments := 0
	for _, s := range snippets {
		perFile[s.file]++
		if s.fragment {
			fragments++
		}
		if s.infra {
			inInfra = append(inInfra, s)
		} else if s.otel {
			inOtel = append(inOtel, s)
		} else {
			inRoot = append(inRoot, s)
		}
	}
	if perFile["README.md"] == 0 {
		t.Errorf("README.md has no Go snippet: the test would check nothing there")
	}
	t.Logf("%d Go snippets (%d whole files, %d fragments; %d need infra's module) in %d files: %v",
		len(snippets), len(snippets)-fragments, fragments, len(inInfra), len(perFile), perFile)
	for _, run := range []struct {
		name, modDir string
		snippets     []snippet
	}{{"root", root, inRoot}, {"infra", filepath.Join(root, "infra"), inInfra}, {"oteltrace", filepath.Join(root, "middleware", "oteltrace"), inOtel}} {
		if len(run.snippets) == 0 {
			continue
		}
		// The two modules' vets run at once: each is mostly waiting on
		// the go command's cache lookups.
		t.Run(run.name, func(t *testing.T) {
			t.Parallel()
			if out, err := vet(t, run.modDir, run.snippets); err != nil {
				t.Errorf("go vet of the snippets (module %s): %v\n%s", run.modDir, err, out)
			}
		})
	}
}

// TestSnippetCheckerFails holds the checker to what it is for: a fragment
// that does not type-check, or a whole file without its package, fails,
// at the Markdown's line.
func TestSnippetCheckerFails(t *testing.T) {
	t.Parallel()
	good, err := makeSnippet(block{file: "x.md", line: 7, info: "go fragment", code: "d, err := time.ParseDuration(\"1s\")"})
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(good.src, "_ = d\n") || !strings.Contains(good.src, "_ = err\n") || !strings.Contains(good.src, `"time"`) {
		t.Errorf("fragment made into\n%s\nwant its names used and time imported", good.src)
	}
	bad, err := makeSnippet(block{file: "x.md", line: 12, info: "go fragment", code: "var n int = \"one\""})
	if err != nil {
		t.Fatal(err)
	}
	out, err := vet(t, root, []snippet{good, bad})
	if err == nil || !bytes.Contains(out, []byte("x.md:12")) || bytes.Contains(out, []byte("x.md:7")) {
		t.Errorf("go vet of a good and a bad fragment: %v\n%s\nwant a failure at x.md:12 only", err, out)
	}
	if _, err := makeSnippet(block{file: "x.md", line: 3, info: "go", code: "x := 1"}); err == nil {
		t.Errorf("a go block without a package clause was accepted as a whole file")
	}
	if _, err := makeSnippet(block{file: "x.md", line: 3, info: "go fragment", code: "nosuch.Call()"}); err == nil {
		t.Errorf("a fragment using an unknown package was accepted")
	}
}
