package jmespath

import (
	"reflect"
	"testing"
)

// TestPruneKeepsWhatIsRead: an expression evaluated on the document decoded
// for it (prune) selects exactly what it selects on the whole document,
// for every kind of expression the walk knows and some it does not, on
// documents with duplicated and escaped member names, nested arrays and
// objects, and values of every type. (keys, values and * follow Go's map
// order in go-jmespath, so they are compared through length and contains.)
func TestPruneKeepsWhatIsRead(t *testing.T) {
	docs := []string{
		`{"a":{"b":1,"c":[1,2,{"d":"x"}],"e":null},"f":[{"g":1,"h":"y"},{"g":2,"h":"z"},[3,[4]]],"i":"s","j":true}`,
		`{"a":{"b":"first","b":"last"},"k\u0065y":"escaped","f":[],"i":{"x":1}}`,
		`{"headers":{"idempotency-key":"k"},"body":"{\"order_id\":\"o-1\",\"n\":10.0}","requestContext":{"requestId":"r"}}`,
		`[{"a":1},{"a":2},{"a":3}]`,
		`{"f":[{"g":[1,2]},{"g":[3]}],"a":[[1,2],[3,[4,5]]]}`,
		`"just a string"`,
		`{"detail":{"amount":10.50,"items":[{"sku":"a","qty":2},{"sku":"b","qty":0}]}}`,
	}
	exprs := []string{
		`a`, `a.b`, `a.c[2].d`, `a.c[-1]`, `a.c[0]`, `a.c[5]`, `a.c[1:]`, `a.c[::-1]`, `f[*].g`, `f[*]`, `f[].g`, `f[]`,
		`f[?g > ` + "`1`" + `].h`, `f[?h == 'y']`, `length(a.*)`, `a.* | length(@)`, `length(keys(a))`, `length(f)`, `f | [1]`, `f[*].g | [0]`,
		`[a.b, i]`, `{x: a.b, y: j}`, `a.b || i`, `!j`, `a && i`, `@`, `$.a.b`, `[0].a`, `[-1]`, `[*].a`, `key`,
		`headers."idempotency-key"`, `powertools_json(body).order_id`, `powertools_json(body).n`, `requestContext.requestId`,
		`sort_by(f, &g)[0].h`, `max_by(f, &g)`, `detail.items[?qty > ` + "`0`" + `].sku`, `detail.amount`, `detail`, `length(detail.items)`,
		`let $x = a in $x.b`, `a.b + ` + "`1`", `not_null(a.e, i)`, `to_string(a)`, `a.c[0:2].d`, `f[*].g[0]`, `a[0]`, `i[0]`, `j.k`,
		`f[0].g`, `f[1].h`, `f[2][1][0]`, `a.{b: b, c: c[0]}`, `a.[b, e]`, `f[*].[g, h]`, `merge(a, i).b`, `length(values(a))`, `contains(keys(a), 'b')`,
	}
	for _, expr := range exprs {
		e, err := Compile(expr)
		if err != nil {
			t.Fatalf("%s: %v", expr, err)
		}
		for _, doc := range docs {
			for _, numbers := range []bool{false, true} {
				budget := maxWholeValues
				full, err := prune([]byte(doc), nil, numbers, &budget)
				if err != nil {
					t.Fatal(err)
				}
				budget = maxWholeValues
				part, err := prune([]byte(doc), e.need, numbers, &budget)
				if err != nil {
					t.Fatalf("%s on %s: %v", expr, doc, err)
				}
				eval := e.valued
				if numbers {
					eval = e.spelled
				}
				want, werr := eval.Search(full)
				got, gerr := eval.Search(part)
				if (werr == nil) != (gerr == nil) || !reflect.DeepEqual(got, want) {
					t.Errorf("%s on %s (numbers %v): pruned %#v (%v), whole %#v (%v)", expr, doc, numbers, got, gerr, want, werr)
				}
			}
		}
	}
}

// TestNeedsPrunes: the expressions users write for events read a few
// values, so the rest of the event is never decoded; what the walk cannot
// follow reads everything.
func TestNeedsPrunes(t *testing.T) {
	for expr, pruned := range map[string]bool{
		`headers."idempotency-key"`:           true,
		`powertools_json(body).order_id`:      true,
		`detail.items[0].sku`:                 true,
		`[requestContext.requestId, rawPath]`: true,
		`sort_by(detail.items, &sku)`:         false,
		`let $k = id in $k`:                   false,
	} {
		n := needs(expr)
		if (n != nil) != pruned {
			t.Errorf("%s: needs %+v, want pruned %v", expr, n, pruned)
		}
		if n != nil && n.whole {
			t.Errorf("%s: reads the whole event", expr)
		}
	}
}
