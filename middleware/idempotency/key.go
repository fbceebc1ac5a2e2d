package idempotency

import (
	"bytes"
	"crypto/md5"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"math/big"
	"slices"
	"strconv"
	"strings"

	"github.com/aws/aws-lambda-go/events"
	"github.com/gowebpki/jcs"

	"github.com/sqsonce/sqsonce/internal/redact"
)

// KeyFunc returns the key material of a message: the bytes that identify the
// work it asks for. The material is hashed into the record id, so it must be
// the same for every delivery and every re-send of one request, and must
// never be the broker's message id. A KeyFunc returns an error wrapping
// [ErrNoKey] when the message carries no key.
type KeyFunc func(events.SQSMessage) ([]byte, error)

// BodyField returns a KeyFunc that takes the key from one top-level field of
// a JSON message body, such as "idempotency_key". The field's value is the
// material, as canonical JSON (RFC 8785), so "abc" and 123 are keys while
// null, "" and an absent field are not.
func BodyField(name string) KeyFunc {
	if name == "" {
		panic("idempotency: BodyField: empty field name")
	}
	source := fmt.Sprintf("body field %q", name)
	return func(m events.SQSMessage) ([]byte, error) {
		values, err := bodyFields(m, source, name)
		if err != nil {
			return nil, err
		}
		raw := values[0]
		if raw == nil || isNull(raw) || bytes.Equal(bytes.TrimSpace(raw), []byte(`""`)) {
			return nil, &KeyError{MessageID: m.MessageId, Source: source, Err: ErrNoKey}
		}
		return canonical(m, source, raw)
	}
}

// BodyFields returns a KeyFunc whose material is the canonical JSON (RFC
// 8785) object of the named top-level fields of a JSON message body: a
// canonical subset of the fields that define the work. Field order,
// whitespace and number spelling (0.7, 0.70, 7e-1) do not change it; fields
// not named (timestamps, request ids) are left out. Every named field must be
// present and not null.
//
// BodyFields panics when given no names: a configuration error.
func BodyFields(names ...string) KeyFunc {
	if len(names) == 0 {
		panic("idempotency: BodyFields: no field names")
	}
	source := fmt.Sprintf("body fields %s", strings.Join(names, ", "))
	return func(m events.SQSMessage) ([]byte, error) {
		values, err := bodyFields(m, source, names...)
		if err != nil {
			return nil, err
		}
		subset := make(map[string]json.RawMessage, len(names))
		for n, name := range names {
			raw := values[n]
			if raw == nil || isNull(raw) {
				return nil, &KeyError{MessageID: m.MessageId, Source: source,
					Err: fmt.Errorf("%w: field %q is missing", ErrNoKey, name)}
			}
			subset[name] = raw
		}
		b, err := json.Marshal(subset)
		if err != nil {
			return nil, &KeyError{MessageID: m.MessageId, Source: source, Err: err}
		}
		return canonical(m, source, b)
	}
}

// FirstOf returns a KeyFunc that tries each of fns in order and returns the
// first key found. A function that finds no key (its error wraps [ErrNoKey])
// passes to the next; any other error, such as a body that is not JSON, is
// returned at once. FirstOf panics when given no functions or a nil one.
func FirstOf(fns ...KeyFunc) KeyFunc {
	if len(fns) == 0 || slices.ContainsFunc(fns, func(f KeyFunc) bool { return f == nil }) {
		panic("idempotency: FirstOf: no key functions, or a nil one")
	}
	return func(m events.SQSMessage) ([]byte, error) {
		var why []string
		for _, fn := range fns {
			k, err := fn(m)
			if err == nil {
				return k, nil
			}
			if !errors.Is(err, ErrNoKey) {
				return nil, err
			}
			source, detail := "", err.Error()
			var ke *KeyError
			if errors.As(err, &ke) {
				source, detail = ke.Source+": ", ke.Err.Error()
			}
			if detail = strings.TrimPrefix(strings.TrimPrefix(detail, ErrNoKey.Error()), ": "); detail == "" {
				detail = "missing"
			}
			why = append(why, source+detail)
		}
		return nil, &KeyError{MessageID: m.MessageId, Source: fmt.Sprintf("any of %d key sources", len(fns)),
			Err: fmt.Errorf("%w (%s)", ErrNoKey, strings.Join(why, "; "))}
	}
}

// JSONKey returns the canonical JSON (RFC 8785) encoding of v, for use as key
// material with [Do]: two values that encode to equal JSON give equal keys,
// whatever their field order or number spelling. Like every key, it refuses
// integers beyond ±2^53 (see the package doc): encode such fields as strings,
// for example with the `json:",string"` tag option.
func JSONKey(v any) ([]byte, error) {
	b, err := json.Marshal(v)
	if err != nil {
		return nil, fmt.Errorf("idempotency: key material: %w", err)
	}
	c, err := canonicalJSON(b)
	if err != nil {
		return nil, fmt.Errorf("idempotency: key material: %w", err)
	}
	return c, nil
}

func canonical(m events.SQSMessage, source string, raw []byte) ([]byte, error) {
	c, err := canonicalJSON(raw)
	if err != nil {
		return nil, &KeyError{MessageID: m.MessageId, Source: source, Err: err}
	}
	return c, nil
}

// canonicalJSON is RFC 8785's canonical form of raw. RFC 8785 writes every
// number as the nearest IEEE 754 double, so two numbers that differ beyond a
// double's precision (9007199254740993 and 9007199254740992, say) would give
// one key to two requests: canonicalJSON refuses such numbers instead (see
// exactNumbers).
func canonicalJSON(raw []byte) ([]byte, error) {
	if err := exactNumbers(raw); err != nil {
		return nil, err
	}
	return jcs.Transform(raw)
}

// maxExactInt is 2^53: every integer up to it in magnitude is a double.
const maxExactInt = 1 << 53

// exactNumbers returns an error for the first number in raw that a key could
// confuse with another, by a rule that depends on how the number is written,
// not on its value's luck: an integer (no fraction, no exponent) beyond
// ±2^53, or any other number whose shortest double spelling is a different
// number (a decimal with more than about 17 significant digits, or one out of
// a double's range).
func exactNumbers(raw []byte) error {
	if !json.Valid(raw) {
		return errors.New("invalid JSON")
	}
	for i := 0; i < len(raw); {
		switch c := raw[i]; {
		case c == '"':
			i = skipString(raw, i)
		case c == '-' || (c >= '0' && c <= '9'):
			end := skipValue(raw, i)
			if err := exactNumber(string(raw[i:end])); err != nil {
				return err
			}
			i = end
		default:
			i++
		}
	}
	return nil
}

func exactNumber(n string) error {
	shown := redact.String(n)
	if !strings.ContainsAny(n, ".eE") {
		i, ok := new(big.Int).SetString(n, 10)
		if !ok || i.CmpAbs(big.NewInt(maxExactInt)) > 0 {
			return fmt.Errorf("integer %s is beyond ±2^53, which a key cannot tell from its neighbours: send it as a string", shown)
		}
		return nil
	}
	f, err := strconv.ParseFloat(n, 64)
	if err != nil {
		return fmt.Errorf("number %s is out of range for a key: send it as a string", shown)
	}
	nearest := strconv.FormatFloat(f, 'g', -1, 64)
	exact, ok1 := new(big.Rat).SetString(n)
	near, ok2 := new(big.Rat).SetString(nearest)
	if !ok1 || !ok2 || exact.Cmp(near) != 0 {
		return fmt.Errorf("number %s has more precision than a key keeps (it would equal %s): send it as a string", shown, nearest)
	}
	return nil
}

func isNull(raw json.RawMessage) bool {
	return bytes.Equal(bytes.TrimSpace(raw), []byte("null"))
}

// sum returns the hex digest of b.
func (d Digest) sum(b []byte) string {
	return string(d.appendHex(nil, b))
}

// appendHex appends the hex digest of b to dst.
func (d Digest) appendHex(dst, b []byte) []byte {
	if d == MD5 {
		s := md5.Sum(b)
		return hex.AppendEncode(dst, s[:])
	}
	s := sha256.Sum256(b)
	return hex.AppendEncode(dst, s[:])
}
