package jmespath

import "fmt"

// refusal is a reason an evaluation is refused. Each names what the
// expression met and, where the runtimes differ, how; none shows message
// content (values, member names from the message, numbers).
type refusal int

const (
	errType refusal = iota
	errJSON
	errPrecision
	errInexactSum
	errEmptyAvg
	errOverflow
	errNotANumber
	errEquality
	errReference
	errStringOrder
	errMixedOrder
	errUTF16Order
	errCollation
	errAstral
	errSpelling
	errFalsy
	errUndef
	errMutated
	errProtoName
	errOpaque
	errUnordered
	errIndexKeys
	errBase64
	errGzip
	errDecodedSize
	errUTF8
	errBOM
	errMemory
	errSteps
	numRefusals
)

var refusalText = [numRefusals]string{
	errType:        "argument of the wrong type",
	errJSON:        "not JSON that a key can be read from",
	errPrecision:   "numbers beyond ±2^53 that Python (exact) and TypeScript (doubles) compare or add differently: send them as strings",
	errInexactSum:  "a sum that doubles round, which Python 3.12+ (compensated) and TypeScript add differently",
	errEmptyAvg:    "avg of an empty array (Python: null; TypeScript: NaN)",
	errOverflow:    "a number too large here (Python raises or writes every digit, TypeScript goes on with a double)",
	errNotANumber:  "a string that is not a JSON number (Python's int()/float() and JavaScript's Number() read other strings differently)",
	errEquality:    "values that Python and TypeScript compare differently (a boolean against a number inside an array or object, or numbers beyond ±2^53)",
	errReference:   "an array or object looked for among arrays or objects (TypeScript compares them by reference, Python by value)",
	errStringOrder: "an ordering comparison of strings (Python orders strings, TypeScript answers undefined)",
	errMixedOrder:  "an ordering comparison of a number and a string (Python raises TypeError)",
	errUTF16Order:  "strings that code point order (Python) and UTF-16 order (TypeScript) sort differently",
	errCollation:   "sort() of strings other than ASCII digits with lower-case letters (or with upper-case letters): TypeScript sorts with localeCompare, Python by code point",
	errAstral:      "a string with a character beyond U+FFFF (Python counts and reverses code points, TypeScript UTF-16 units)",
	errSpelling:    "to_string of a value that Python and TypeScript spell differently (non-ASCII, floats, integers beyond 2^53, key order)",
	errFalsy:       "a result of 0, \"\" or false that TypeScript's map and not_null replace with null",
	errUndef:       "the result of an ordering comparison of non-numbers used as a value (Python: null or false; TypeScript: undefined)",
	errMutated:     "an array read again after sort() or reverse() (TypeScript reorders it in place, Python copies it)",
	errProtoName:   "a member name that every JavaScript object inherits (constructor, toString, …), absent from the object",
	errOpaque:      "the record or a message attribute as a whole (only its members can be selected)",
	errUnordered:   "the order of the record's attributes or messageAttributes, which Lambda does not fix",
	errIndexKeys:   "the order of an object with member names such as \"7\" (JavaScript lists them first, Python in the order sent)",
	errBase64:      "not base64 as Powertools TypeScript accepts it (the standard alphabet, padded, no line breaks)",
	errGzip:        "not a single gzip member with nothing after it",
	errDecodedSize: fmt.Sprintf("more than %d bytes decoded by powertools_base64 and powertools_base64_gzip", maxDecoded),
	errUTF8:        "decoded bytes that are not valid UTF-8 (Python raises, TypeScript writes U+FFFD)",
	errBOM:         "decoded text that begins with a byte order mark (TypeScript's TextDecoder drops it, Python keeps it)",
	errMemory:      "the evaluation would allocate more than its budget for this message",
	errSteps:       "the evaluation would take more steps than its budget for this message",
}

// evalError is an evaluation refused: the function it happened in (a name
// from the expression), the reason, and a detail that holds no content.
type evalError struct {
	kind   refusal
	fn     string
	detail string
	err    error // a *jsonkey.Error, for errJSON
}

func (e *evalError) Error() string {
	msg := refusalText[e.kind]
	if e.detail != "" {
		msg += ": " + e.detail
	}
	if e.fn != "" {
		return e.fn + "(): " + msg
	}
	return msg
}

func refuse(k refusal) error { return &evalError{kind: k} }

// refuseType is a type error: want and got name JMESPath types.
func refuseType(fn, want, got string) error {
	return &evalError{kind: errType, fn: fn, detail: fmt.Sprintf("expects %s, got %s", want, got)}
}

// refuseJSON is JSON text that the rules refuse; err (a *jsonkey.Error)
// names the rule and an offset.
func refuseJSON(err error) error { return &evalError{kind: errJSON, detail: err.Error(), err: err} }

// Unwrap returns the JSON rule's error of an errJSON refusal.
func (e *evalError) Unwrap() error { return e.err }

// inFunction names the function an error happened in.
func inFunction(fn string, err error) error {
	if e, ok := err.(*evalError); ok && e.fn == "" {
		e.fn = fn
	}
	return err
}
