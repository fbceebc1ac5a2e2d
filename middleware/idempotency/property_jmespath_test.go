package idempotency_test

import (
	"errors"
	"strings"

	"github.com/sqsonce/sqsonce/middleware/idempotency"
	"github.com/sqsonce/sqsonce/middleware/idempotency/jmespath"
)

// The record-id property's JMESPath sources (package jmespath): a path, a
// filter, and functions, each a row of propertySources. Their references
// are the selections the expressions make, as both Powertools runtimes
// make them (jmespath's own TestDifferential checks the evaluation itself
// against python3's jmespath and Powertools TypeScript).
func init() {
	for _, s := range []struct {
		expr, body string
		selection  func(v string) string
	}{
		{`powertools_json(body).idempotency_key`, `{"idempotency_key":%v,"sent_at":"t"}`, selectionOf(`%v`)},
		// A filter on numbers keeps the selected value as sent (10.0 stays
		// 10.0 for Python); null is dropped from the projection.
		{"powertools_json(body).items[?qty > `0`].sku", `{"items":[{"sku":%v,"qty":2},{"sku":"other","qty":0}]}`, selectionOf(`[%v]`)},
		{`to_array(powertools_json(body).k)`, `{"k":%v}`, func(v string) string {
			if strings.HasPrefix(strings.TrimSpace(v), "[") {
				return v
			}
			return "[" + v + "]"
		}},
		{`[powertools_json(body).k, length(powertools_json(body).items)]`, `{"items":[1,2],"k":%v}`, selectionOf(`[%v,2]`)},
	} {
		propertySources = append(propertySources, propSource{
			name: "jmespath " + s.expr, selector: "jmespath " + s.expr,
			message: bodyWith(s.body), selection: s.selection,
			id:        keyFuncID(jmespath.MustCompile(s.expr).Selector()),
			noKey:     []string{"null", `""`},
			mayRefuse: jmespathNoKey,
		})
	}
}

// jmespathNoKey is jmespath's documented missing key beyond null and "": an
// empty array or object, or one whose values are all null.
func jmespathNoKey(_ idempotency.Format, err error) bool {
	if !errors.Is(err, idempotency.ErrNoKey) {
		return false
	}
	for _, what := range []string{"an empty array", "an array of nulls", "an empty object", "an object of nulls"} {
		if strings.HasSuffix(err.Error(), "selects "+what) {
			return true
		}
	}
	return false
}
