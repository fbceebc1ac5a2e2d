package idempotency

import "strings"

// Namespace returns the [Config.Namespace] that shares records with a
// Powertools for AWS Lambda function of format f: the prefix it writes
// before the "#" of its record ids. For [FormatPowertoolsTypeScript] (2.x)
// that is keyPrefix without surrounding white space, else functionName
// (AWS_LAMBDA_FUNCTION_NAME). For [FormatPowertoolsPython] it is keyPrefix
// when not empty, else "{functionName}.{handler}" (functionName "test-func"
// when empty, as Powertools has it; handler the decorated function's module
// and name, "app.lambda_handler" for lambda_handler in app.py). For
// [FormatNative] it is keyPrefix.
func (f Format) Namespace(keyPrefix, functionName, handler string) string {
	switch f {
	case FormatPowertoolsTypeScript:
		if p := strings.TrimFunc(keyPrefix, jsSpace); p != "" {
			return p
		}
		return functionName
	case FormatPowertoolsPython:
		if keyPrefix != "" {
			return keyPrefix
		}
		if functionName == "" {
			functionName = "test-func"
		}
		return functionName + "." + handler
	}
	return keyPrefix
}

// jsSpace reports whether String.prototype.trim removes r: ECMAScript's
// WhiteSpace and LineTerminator code points.
func jsSpace(r rune) bool {
	switch r {
	case '\t', '\n', '\v', '\f', '\r', ' ', '\u00a0', '\u1680', '\u2028', '\u2029',
		'\u202f', '\u205f', '\u3000', '\ufeff':
		return true
	}
	return r >= '\u2000' && r <= '\u200a'
}
