package idempotency

import "strings"

// PowertoolsTypeScriptPrefix returns the prefix Powertools for AWS Lambda
// (TypeScript) 2 writes before the "#" of its record ids: keyPrefix without
// surrounding white space, else the function's name
// (AWS_LAMBDA_FUNCTION_NAME): the [Config.Namespace] that shares records
// with such a function, with [FormatPowertoolsTypeScript].
func PowertoolsTypeScriptPrefix(keyPrefix, functionName string) string {
	if p := strings.TrimFunc(keyPrefix, jsSpace); p != "" {
		return p
	}
	return functionName
}

// PowertoolsPythonPrefix returns the prefix Powertools for AWS Lambda
// (Python) writes before the "#" of its record ids: keyPrefix when not
// empty, else "{functionName}.{handler}" (functionName "test-func" when
// empty, as Powertools has it; handler the decorated function's module and
// name, "app.lambda_handler" for lambda_handler in app.py): the
// [Config.Namespace] that shares records with such a function, with
// [FormatPowertoolsPython].
func PowertoolsPythonPrefix(keyPrefix, functionName, handler string) string {
	if keyPrefix != "" {
		return keyPrefix
	}
	if functionName == "" {
		functionName = "test-func"
	}
	return functionName + "." + handler
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
