// Package redact describes a value taken from a message without showing
// it: its length and a digest, and a short prefix only of a long value.
// Errors and log lines of the module use it for every value that comes from
// a message body, so that no log holds message content (bodies carry
// customers' text), while equal values still show as equal.
//
//	redact.String("a customer's 100 KB document id ...") // "a custom"… (100000 bytes, sha256:5f1d2a0c)
//	redact.String("alice@example.com")                   // (17 bytes, sha256:…)
package redact
