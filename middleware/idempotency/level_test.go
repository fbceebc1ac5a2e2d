package idempotency

import (
	"go/ast"
	"go/parser"
	"go/token"
	"log/slog"
	"regexp"
	"testing"
)

// TestOutcomeLevelsAsDocumented: each Outcome constant's doc comment names,
// in parentheses, the level its line is logged at, and the guard logs it
// there.
func TestOutcomeLevelsAsDocumented(t *testing.T) {
	f, err := parser.ParseFile(token.NewFileSet(), "report.go", nil, parser.ParseComments)
	if err != nil {
		t.Fatal(err)
	}
	documented := regexp.MustCompile(`^Outcome\w+ \((DEBUG|INFO|WARN|ERROR)\):`)
	n := 0
	for _, d := range f.Decls {
		g, ok := d.(*ast.GenDecl)
		if !ok || g.Tok != token.CONST {
			continue
		}
		for _, s := range g.Specs {
			v := s.(*ast.ValueSpec)
			if id, ok := v.Type.(*ast.Ident); !ok || id.Name != "Outcome" {
				continue
			}
			name := v.Names[0].Name
			m := documented.FindStringSubmatch(v.Doc.Text())
			if m == nil {
				t.Errorf("%s: its doc does not begin with its level in parentheses", name)
				continue
			}
			var want slog.Level
			if err := want.UnmarshalText([]byte(m[1])); err != nil {
				t.Fatal(err)
			}
			o := Outcome(v.Values[0].(*ast.BasicLit).Value[1 : len(v.Values[0].(*ast.BasicLit).Value)-1])
			if got := level(o); got != want {
				t.Errorf("%s is logged at %v, its doc says %v", name, got, want)
			}
			n++
		}
	}
	if n != 9 {
		t.Errorf("%d outcomes checked, want the 9 of the package", n)
	}
}
