package idempotency

import "strings"

// PowertoolsTypeScriptPrefix returns the prefix Powertools for AWS Lambda
// (TypeScript) writes before the "#" of its record ids: keyPrefix without
// surrounding white space, or, when that is empty, the function's name
// (AWS_LAMBDA_FUNCTION_NAME), as makeIdempotent, the idempotent decorator
// and the Middy middleware of version 2 do. Use it as [Config.Namespace],
// with [FormatPowertoolsTypeScript], to share records with such a function;
// pass the name the function has (the library reads no environment).
func PowertoolsTypeScriptPrefix(keyPrefix, functionName string) string {
	if p := strings.TrimFunc(keyPrefix, jsSpace); p != "" {
		return p
	}
	return functionName
}

// PowertoolsPythonPrefix returns the prefix Powertools for AWS Lambda
// (Python) writes before the "#" of its record ids: keyPrefix when it is
// not empty, else "{functionName}.{handler}", where functionName is the
// function's name (AWS_LAMBDA_FUNCTION_NAME; "test-func" when empty, as
// Powertools has it) and handler is the decorated function's module and
// qualified name: "app.lambda_handler" for @idempotent on lambda_handler in
// app.py, the function's handler setting. Use it as [Config.Namespace],
// with [FormatPowertoolsPython], to share records with such a function.
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
