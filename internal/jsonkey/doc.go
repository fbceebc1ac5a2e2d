// Package jsonkey reads JSON for idempotency keys and spells it as each
// record-id format hashes it. It is the one place where ids are derived
// from JSON: the rules every key's JSON must keep ([Check], and [Decode]
// and [Index] for readers that keep them), the scanner that selects body
// fields ([Select]), the number rule of the native format ([ExactNumber]),
// the test of two texts alike but for white space and escapes ([Equal]),
// and the three spellings: RFC 8785's canonical form ([WriteCanonical]),
// Python's json.dumps(sort_keys=True) ([WritePython]) and JavaScript's
// JSON.stringify of Powertools' deepSort ([WriteTypeScript]).
//
// # The rules
//
// Key material is I-JSON (RFC 7493), bounded: exactly one JSON value, in
// valid UTF-8, with no unpaired surrogate escape (\ud800 alone) and no
// object that names a member twice, nested at most [MaxDepth] levels, with
// no number longer than [MaxNumberLen] characters. Text that breaks a rule
// is refused with an [*Error] naming the rule and the byte offset, never
// the text; nothing is replaced (encoding/json would read both \ud800 and
// invalid UTF-8 as U+FFFD, and keep the last of two equal names).
package jsonkey
