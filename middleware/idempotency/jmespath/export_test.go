package jmespath

import "errors"

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

// NumRefusals is the number of reasons an evaluation is refused.
const NumRefusals = int(numRefusals)

// RefusalOf returns the reason err (an error of Select, SelectJSON or
// Evaluate) was refused for, when it is a refusal.
func RefusalOf(err error) (int, bool) {
	var e *evalError
	if errors.As(err, &e) {
		return int(e.kind), true
	}
	return 0, false
}
