package jmespath

// Evaluate evaluates e on the JSON document doc, as SelectJSON does, and
// returns the result as JSON, whatever it is (null, false, [] included):
// for the compliance suite.
func Evaluate(e *Expression, doc string) (string, error) {
	ev := newEvaluator(int64(len(doc)))
	if err := ev.checkJSON(doc); err != nil {
		return "", err
	}
	r, err := ev.visit(e.ast, rawValue(trimJSONSpace(doc)))
	if err != nil {
		return "", err
	}
	if r.k == kUndef {
		return "", refuse(errUndef)
	}
	b, err := ev.keyJSON(nil, r)
	return string(b), err
}
