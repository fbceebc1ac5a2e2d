// Command apicount measures the exported surface of Go packages: the lines
// of `go doc -all`, the exported top-level names (functions, types,
// constants and variables) and the exported identifiers (those, with the
// exported methods and struct fields of exported types and the methods of
// exported interfaces). Test files are left out.
//
//	go run ./tools/apicount ./middleware/idempotency ./middleware/idempotency/driver
//
// An argument is a directory, or the import path of a standard library
// package (database/sql), read from GOROOT. The output is one Markdown
// table row per package.
package main

import (
	"bytes"
	"fmt"
	"go/ast"
	"go/parser"
	"go/token"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
)

func main() {
	if len(os.Args) < 2 {
		fmt.Fprintln(os.Stderr, "usage: apicount dir-or-std-package...")
		os.Exit(2)
	}
	fmt.Println("| package | go doc -all lines | top-level names | identifiers |")
	fmt.Println("|---|---:|---:|---:|")
	for _, arg := range os.Args[1:] {
		c, err := count(arg)
		if err != nil {
			fmt.Fprintf(os.Stderr, "apicount: %s: %v\n", arg, err)
			os.Exit(1)
		}
		fmt.Printf("| %s | %d | %d | %d |\n", arg, c.docLines, c.topLevel, c.idents)
	}
}

type counts struct{ docLines, topLevel, idents int }

// dir is arg's directory: arg itself when it exists, else the standard
// library package of that import path.
func dir(arg string) string {
	if fi, err := os.Stat(arg); err == nil && fi.IsDir() {
		return arg
	}
	root, err := exec.Command("go", "env", "GOROOT").Output()
	if err != nil {
		return arg
	}
	return filepath.Join(strings.TrimSpace(string(root)), "src", filepath.FromSlash(arg))
}

func count(arg string) (counts, error) {
	var c counts
	out, err := exec.Command("go", "doc", "-all", arg).Output()
	if err != nil {
		return c, fmt.Errorf("go doc -all: %w", err)
	}
	c.docLines = bytes.Count(out, []byte("\n"))
	d := dir(arg)
	names, err := filepath.Glob(filepath.Join(d, "*.go"))
	if err != nil {
		return c, err
	}
	fset := token.NewFileSet()
	var files []*ast.File
	for _, name := range names {
		if strings.HasSuffix(name, "_test.go") {
			continue
		}
		f, err := parser.ParseFile(fset, name, nil, parser.SkipObjectResolution)
		if err != nil {
			return c, err
		}
		if f.Name.Name != "main" {
			files = append(files, f)
		}
	}
	c.topLevel, c.idents = surface(files)
	return c, nil
}

// surface counts the exported top-level names and identifiers of a
// package's files. Files with build constraints for other systems count
// too; a name they declare again is counted once, since names are
// collected in sets.
func surface(files []*ast.File) (top, idents int) {
	topNames := map[string]bool{}
	members := map[string]bool{} // "Type.Member"
	exportedTypes := map[string]bool{}
	for _, f := range files {
		for _, d := range f.Decls {
			if g, ok := d.(*ast.GenDecl); ok && g.Tok == token.TYPE {
				for _, s := range g.Specs {
					if ts := s.(*ast.TypeSpec); ts.Name.IsExported() {
						exportedTypes[ts.Name.Name] = true
					}
				}
			}
		}
	}
	for _, f := range files {
		for _, d := range f.Decls {
			switch d := d.(type) {
			case *ast.FuncDecl:
				if !d.Name.IsExported() {
					continue
				}
				if d.Recv == nil {
					topNames[d.Name.Name] = true
				} else if recv := recvType(d.Recv.List[0].Type); exportedTypes[recv] {
					members[recv+"."+d.Name.Name] = true
				}
			case *ast.GenDecl:
				for _, s := range d.Specs {
					switch s := s.(type) {
					case *ast.ValueSpec:
						for _, n := range s.Names {
							if n.IsExported() {
								topNames[n.Name] = true
							}
						}
					case *ast.TypeSpec:
						if !s.Name.IsExported() {
							continue
						}
						topNames[s.Name.Name] = true
						for _, m := range typeMembers(s.Type) {
							members[s.Name.Name+"."+m] = true
						}
					}
				}
			}
		}
	}
	return len(topNames), len(topNames) + len(members)
}

// typeMembers are the exported fields of a struct type and the exported
// methods (and embedded interfaces) of an interface type.
func typeMembers(t ast.Expr) []string {
	var out []string
	var fields *ast.FieldList
	switch t := t.(type) {
	case *ast.StructType:
		fields = t.Fields
	case *ast.InterfaceType:
		fields = t.Methods
	default:
		return nil
	}
	for _, f := range fields.List {
		if len(f.Names) == 0 { // embedded
			if n := recvType(f.Type); n != "" && ast.IsExported(n) {
				out = append(out, n)
			}
			continue
		}
		for _, n := range f.Names {
			if n.IsExported() {
				out = append(out, n.Name)
			}
		}
	}
	return out
}

// recvType is the name of a receiver or embedded type: T, *T, T[P], pkg.T.
func recvType(e ast.Expr) string {
	switch e := e.(type) {
	case *ast.StarExpr:
		return recvType(e.X)
	case *ast.IndexExpr:
		return recvType(e.X)
	case *ast.IndexListExpr:
		return recvType(e.X)
	case *ast.SelectorExpr:
		return e.Sel.Name
	case *ast.Ident:
		return e.Name
	}
	return ""
}
