package idempotency

import (
	"bytes"
	"encoding/json"

	"github.com/sqsonce/sqsonce/internal/jsonkey"
)

// Spell returns the bytes f hashes for k, for tests that compare spellings.
func Spell(f Format, k Selection) ([]byte, error) { return f.spell(k) }

// CanonicalJSON is the canonical JSON (RFC 8785) of v, refusing numbers a
// double cannot hold exactly, as the native format does.
func CanonicalJSON(v any) ([]byte, error) {
	b, err := json.Marshal(v)
	if err != nil {
		return nil, err
	}
	var out bytes.Buffer
	err = jsonkey.WriteCanonical(&out, string(b))
	return out.Bytes(), err
}

// MaxScopeBytes and DefaultKeepAliveLimit are the unexported bounds, for
// the external tests.
const (
	MaxScopeBytes         = maxScopeBytes
	DefaultKeepAliveLimit = defaultKeepAliveLimit
)

// The defaults of Config's zero values, for tests.
const (
	DefaultExpiresAfter = defaultExpiresAfter
	DefaultLease        = defaultLease
	DefaultSkewMargin   = defaultSkewMargin
)
