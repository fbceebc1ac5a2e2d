// Command apigate fails when the library's exported API changes
// incompatibly since the last release, unless CHANGELOG.md's Unreleased
// section names each changed identifier.
//
//	go run ./tools/apigate          # check against api/baseline.txt
//	go run ./tools/apigate -record  # after a release: re-record the baseline
//
// The API is read with go/types from the packages' export data (`go list
// -export`): one line per exported constant, variable, function, type,
// struct field and method of the library's packages (those under
// middleware/ and events/, internal packages left out). A line of the
// baseline that is missing from the current API, or differs from it, is an
// incompatible change (a removed name, a changed signature, a removed
// field or method, any change to an interface or a constant's value);
// a new line is compatible. A change is accepted when the Unreleased
// section names it as package.Name or package.Type.Member, e.g.
// `idempotency.Config.Lease` (a type's name covers its fields and methods).
package main

import (
	"bufio"
	"bytes"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"go/importer"
	"go/token"
	"go/types"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"sort"
	"strings"
)

// defaultPatterns are the library's packages.
var defaultPatterns = []string{
	"github.com/sqsonce/sqsonce/middleware/...",
	"github.com/sqsonce/sqsonce/events/...",
}

func main() {
	record := flag.Bool("record", false, "write the current API to the baseline instead of checking it")
	dir := flag.String("C", ".", "the repository's root: go list runs there and the files below are relative to it")
	baseline := flag.String("baseline", "api/baseline.txt", "the API of the last release")
	changelog := flag.String("changelog", "CHANGELOG.md", "the changelog whose Unreleased section names accepted changes")
	flag.Parse()
	patterns := flag.Args()
	if len(patterns) == 0 {
		patterns = defaultPatterns
	}
	if err := run(os.Stdout, *dir, *baseline, *changelog, *record, patterns); err != nil {
		fmt.Fprintln(os.Stderr, "apigate:", err)
		os.Exit(1)
	}
}

func run(out io.Writer, dir, baseline, changelog string, record bool, patterns []string) error {
	api, err := Load(dir, patterns)
	if err != nil {
		return err
	}
	path := filepath.Join(dir, baseline)
	if record {
		if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
			return err
		}
		if err := os.WriteFile(path, []byte(Format(api)), 0o644); err != nil {
			return err
		}
		fmt.Fprintf(out, "apigate: recorded %d API lines in %s\n", len(api), baseline)
		return nil
	}
	b, err := os.ReadFile(path)
	if err != nil {
		return fmt.Errorf("%w (record one with -record)", err)
	}
	old, err := Parse(string(b))
	if err != nil {
		return fmt.Errorf("%s: %w", baseline, err)
	}
	cl, err := os.ReadFile(filepath.Join(dir, changelog))
	if err != nil && !errors.Is(err, os.ErrNotExist) {
		return err
	}
	problems := Check(old, api, Unreleased(string(cl)))
	for _, p := range problems {
		fmt.Fprintln(out, p)
	}
	if len(problems) > 0 {
		return fmt.Errorf("%d incompatible API change(s) not named in %s's Unreleased section", len(problems), changelog)
	}
	fmt.Fprintf(out, "apigate: the API is compatible with %s (or its changes are in %s)\n", baseline, changelog)
	return nil
}

// API maps an identifier (package.Name or package.Type.Member, package
// being the import path) to its declaration.
type API map[string]string

// Format renders an API as the baseline file: one "identifier<TAB>declaration"
// line each, sorted.
func Format(api API) string {
	keys := make([]string, 0, len(api))
	for k := range api {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	var b strings.Builder
	b.WriteString("# The library's exported API at the last release; re-record with `go run ./tools/apigate -record`.\n")
	for _, k := range keys {
		fmt.Fprintf(&b, "%s\t%s\n", k, api[k])
	}
	return b.String()
}

// Parse reads a baseline written by Format.
func Parse(s string) (API, error) {
	api := API{}
	sc := bufio.NewScanner(strings.NewReader(s))
	sc.Buffer(nil, 1<<20)
	for n := 1; sc.Scan(); n++ {
		line := sc.Text()
		if line == "" || strings.HasPrefix(line, "#") {
			continue
		}
		k, v, ok := strings.Cut(line, "\t")
		if !ok {
			return nil, fmt.Errorf("line %d: no tab", n)
		}
		api[k] = v
	}
	return api, sc.Err()
}

// Check returns one line per incompatible change from old to cur that the
// changelog text (the Unreleased section) does not name.
func Check(old, cur API, changelog string) []string {
	var problems []string
	keys := make([]string, 0, len(old))
	for k := range old {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	for _, k := range keys {
		was := old[k]
		now, ok := cur[k]
		if ok && now == was {
			continue
		}
		if named(changelog, k) {
			continue
		}
		if !ok {
			problems = append(problems, fmt.Sprintf("removed: %s (was %s); name %s in CHANGELOG.md's Unreleased section", k, was, short(k)))
		} else {
			problems = append(problems, fmt.Sprintf("changed: %s\n\twas %s\n\tnow %s\n\tname %s in CHANGELOG.md's Unreleased section", k, was, now, short(k)))
		}
	}
	return problems
}

// short turns "github.com/x/y/pkg.Type.Member" into "pkg.Type.Member".
func short(key string) string {
	if i := strings.LastIndex(key, "/"); i >= 0 {
		return key[i+1:]
	}
	return key
}

// named reports whether the changelog names key's identifier, or (for a
// field or method) its type, as package.Name[.Member], as a whole word.
func named(changelog, key string) bool {
	s := short(key)
	parts := strings.Split(s, ".")
	for n := len(parts); n >= 2; n-- {
		id := strings.Join(parts[:n], ".")
		re := regexp.MustCompile(`(^|[^\w.])` + regexp.QuoteMeta(id) + `($|[^\w.]|\.(\s|$))`)
		if re.MatchString(changelog) {
			return true
		}
	}
	return false
}

// Unreleased returns the text of the changelog's "## Unreleased" section,
// up to the next "## " heading.
func Unreleased(changelog string) string {
	var b strings.Builder
	in := false
	for _, line := range strings.Split(changelog, "\n") {
		if strings.HasPrefix(line, "## ") {
			in = strings.HasPrefix(strings.ToLower(strings.TrimSpace(line[3:])), "unreleased")
			continue
		}
		if in {
			b.WriteString(line)
			b.WriteByte('\n')
		}
	}
	return b.String()
}

type listed struct {
	ImportPath string
	Name       string
	Export     string
	DepOnly    bool
	Standard   bool
}

// Load lists the packages the patterns match (run in dir, with the
// environment's GOWORK and GOFLAGS) and returns their exported API.
// Internal packages and commands are left out.
func Load(dir string, patterns []string) (API, error) {
	args := append([]string{"list", "-export", "-deps", "-json=ImportPath,Name,Export,DepOnly,Standard"}, patterns...)
	cmd := exec.Command("go", args...)
	cmd.Dir = dir
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	b, err := cmd.Output()
	if err != nil {
		return nil, fmt.Errorf("go list: %v: %s", err, stderr.String())
	}
	exports := map[string]string{}
	var roots []listed
	dec := json.NewDecoder(bytes.NewReader(b))
	for dec.More() {
		var p listed
		if err := dec.Decode(&p); err != nil {
			return nil, err
		}
		exports[p.ImportPath] = p.Export
		// A package of test files only (events) has no export data and no API.
		if !p.DepOnly && p.Name != "main" && p.Export != "" && !internal(p.ImportPath) {
			roots = append(roots, p)
		}
	}
	fset := token.NewFileSet()
	imp := importer.ForCompiler(fset, "gc", func(path string) (io.ReadCloser, error) {
		f, ok := exports[path]
		if !ok || f == "" {
			return nil, fmt.Errorf("no export data for %s", path)
		}
		return os.Open(f)
	})
	api := API{}
	for _, p := range roots {
		pkg, err := imp.Import(p.ImportPath)
		if err != nil {
			return nil, fmt.Errorf("%s: %w", p.ImportPath, err)
		}
		describe(api, pkg)
	}
	return api, nil
}

func internal(path string) bool {
	return strings.HasSuffix(path, "/internal") || strings.Contains(path, "/internal/")
}

// describe adds pkg's exported identifiers to api.
func describe(api API, pkg *types.Package) {
	qual := func(p *types.Package) string {
		if p == pkg {
			return ""
		}
		return p.Name()
	}
	str := func(t types.Type) string { return types.TypeString(t, qual) }
	prefix := pkg.Path() + "."
	scope := pkg.Scope()
	for _, name := range scope.Names() {
		obj := scope.Lookup(name)
		if !obj.Exported() {
			continue
		}
		key := prefix + name
		switch o := obj.(type) {
		case *types.Const:
			api[key] = fmt.Sprintf("const %s %s = %s", name, str(o.Type()), o.Val().ExactString())
		case *types.Var:
			api[key] = fmt.Sprintf("var %s %s", name, str(o.Type()))
		case *types.Func:
			sig := o.Type().(*types.Signature)
			api[key] = "func " + name + strings.TrimPrefix(str(sig), "func") // type parameters included
		case *types.TypeName:
			describeType(api, key, o, qual)
		}
	}
}

func typeParams(tps *types.TypeParamList, qual types.Qualifier) string {
	if tps == nil || tps.Len() == 0 {
		return ""
	}
	var parts []string
	for i := 0; i < tps.Len(); i++ {
		tp := tps.At(i)
		parts = append(parts, tp.Obj().Name()+" "+types.TypeString(tp.Constraint(), qual))
	}
	return "[" + strings.Join(parts, ", ") + "]"
}

func describeType(api API, key string, o *types.TypeName, qual types.Qualifier) {
	str := func(t types.Type) string { return types.TypeString(t, qual) }
	name := o.Name()
	// An alias of a named type is described as that type under the alias's
	// name, so that moving a type to another package behind an alias is
	// compatible.
	named, ok := types.Unalias(o.Type()).(*types.Named)
	if o.IsAlias() && (!ok || named.TypeParams().Len() > 0) {
		api[key] = fmt.Sprintf("type %s = %s", name, str(types.Unalias(o.Type())))
		return
	}
	if !ok {
		api[key] = "type " + name + " " + str(o.Type())
		return
	}
	tps := typeParams(named.TypeParams(), qual)
	switch u := named.Underlying().(type) {
	case *types.Struct:
		api[key] = "type " + name + tps + " struct"
		for i := 0; i < u.NumFields(); i++ {
			f := u.Field(i)
			if !f.Exported() {
				continue
			}
			embedded := ""
			if f.Embedded() {
				embedded = " (embedded)"
			}
			api[key+"."+f.Name()] = fmt.Sprintf("field %s.%s %s%s", name, f.Name(), str(f.Type()), embedded)
		}
	case *types.Interface:
		// Any change to an interface breaks its implementers or its users.
		api[key] = "type " + name + tps + " " + str(u)
	default:
		api[key] = "type " + name + tps + " " + str(u)
	}
	// The method set of *T, promoted methods included.
	ms := types.NewMethodSet(types.NewPointer(named))
	for i := 0; i < ms.Len(); i++ {
		m := ms.At(i).Obj()
		if !m.Exported() {
			continue
		}
		if _, isIface := named.Underlying().(*types.Interface); isIface {
			continue // part of the interface's line
		}
		sig := m.Type().(*types.Signature)
		recv := name
		if r := sig.Recv(); r != nil {
			if _, ptr := r.Type().(*types.Pointer); ptr {
				recv = "*" + name
			}
		}
		api[key+"."+m.Name()] = fmt.Sprintf("method (%s) %s%s", recv, m.Name(), strings.TrimPrefix(str(sig), "func"))
	}
}
