package driver

import (
	"bytes"
	"context"
	"encoding/base64"
	"errors"
	"fmt"
)

// Sealer encrypts the stored results of a guard (idempotency.Config.Sealer)
// with a key the user owns, binding each to its record id: a result sealed
// for one record never opens for another. Package kmsseal implements it
// with AWS KMS. It must be safe for concurrent use. Only the result is
// sealed: the record id, status, expiry, lease, owner and every other
// attribute a store's conditions read stay as they are.
type Sealer interface {
	// Seal returns plaintext encrypted and authenticated, with recordID
	// bound to it as associated data. Its error never quotes plaintext.
	Seal(ctx context.Context, recordID string, plaintext []byte) ([]byte, error)

	// Open returns the plaintext of what Seal returned for recordID. It
	// fails when sealed was changed, was sealed for another record id, or
	// under a key the sealer cannot use; its error never quotes sealed
	// or the plaintext.
	Open(ctx context.Context, recordID string, sealed []byte) ([]byte, error)
}

// SealValidator is implemented by stores that hold sealed results only
// under conditions (a store shared with readers that would misread them).
// A guard with a Sealer calls ValidateSealed once, when it is created, and
// refuses the configuration when it returns an error.
type SealValidator interface {
	ValidateSealed() error
}

// SealedPrefix begins the stored result (Record.Data) of a sealed record.
// A sealed result is the JSON string "sqsonce:sealed:1:" followed by the
// [Sealer]'s output in standard base64: valid JSON, so that every store
// and data format keeps it as it keeps any result, and recognisable, so
// that a reader without the sealer fails instead of replaying it. An
// unsealed result that is a JSON string beginning with the same characters
// (an operation that echoes its input may return one) is taken for sealed
// too: its duplicates fail with [ErrUnsealed], or permanently when it is
// [WithheldData], and the operation does not run again.
const SealedPrefix = `"sqsonce:sealed:1:`

// ErrUnsealed is wrapped by the error of a call that found a sealed result
// it could not open: the guard has no Sealer, or the Sealer refused it
// (tampered, sealed for another record, another key, KMS unavailable).
// The call fails; it never replays the sealed text and never runs the
// operation.
var ErrUnsealed = errors.New("idempotency: sealed result cannot be opened")

// WithheldData is the stored result of a record whose operation ran but
// whose result the guard's Sealer could not seal (KMS unavailable, a
// panic): the record is COMPLETED, so that the operation never runs again,
// and its result is withheld, not stored in plaintext. It is sealed by
// [IsSealed]; [OpenData] fails on it, with a permanent error.
const WithheldData = SealedPrefix + `"`

// IsSealed reports whether data, a stored result, is sealed: it begins
// with [SealedPrefix].
func IsSealed(data []byte) bool {
	return bytes.HasPrefix(data, []byte(SealedPrefix))
}

// SealData returns the stored form of the result data of record id: s's
// seal of it in the form [SealedPrefix] describes. Nil data (no result)
// stays nil.
func SealData(ctx context.Context, s Sealer, id string, data []byte) ([]byte, error) {
	if data == nil {
		return nil, nil
	}
	sealed, err := s.Seal(ctx, id, data)
	if err != nil {
		return nil, err
	}
	out := make([]byte, 0, len(SealedPrefix)+base64.StdEncoding.EncodedLen(len(sealed))+1)
	out = append(out, SealedPrefix...)
	out = base64.StdEncoding.AppendEncode(out, sealed)
	return append(out, '"'), nil
}

// OpenData returns the result of record id from data as stored: data
// itself when it is not sealed, else its plaintext as s opens it. Its
// error wraps [ErrUnsealed], and names neither the data nor the plaintext;
// s nil opens nothing. Of [WithheldData] the error is permanent
// (it has the Permanent method of
// failure.PermanentError).
func OpenData(ctx context.Context, s Sealer, id string, data []byte) ([]byte, error) {
	if !IsSealed(data) {
		return data, nil
	}
	if bytes.Equal(data, []byte(WithheldData)) {
		// No delivery can have the result: the message fails for good
		// (a batch handler's dead-letter queue), never replays empty.
		return nil, permanent{fmt.Errorf("%w: record %s: the operation ran, but its result could not be sealed and was withheld; it is not run again", ErrUnsealed, id)}
	}
	if s == nil {
		return nil, fmt.Errorf("%w: record %s is sealed and the guard has no Sealer (idempotency.Config.Sealer)", ErrUnsealed, id)
	}
	body := data[len(SealedPrefix):]
	if len(body) == 0 || body[len(body)-1] != '"' {
		return nil, fmt.Errorf("%w: record %s: the sealed result is malformed", ErrUnsealed, id)
	}
	sealed, err := base64.StdEncoding.AppendDecode(nil, body[:len(body)-1])
	if err != nil {
		return nil, fmt.Errorf("%w: record %s: the sealed result is not base64", ErrUnsealed, id)
	}
	plain, err := s.Open(ctx, id, sealed)
	if err != nil {
		return nil, fmt.Errorf("%w: record %s: %w", ErrUnsealed, id, err)
	}
	return plain, nil
}

// permanent marks an error as one no redelivery can change, by the method
// failure.PermanentError asks for (the driver imports only the standard
// library).
type permanent struct{ error }

func (p permanent) Unwrap() error   { return p.error }
func (p permanent) Permanent() bool { return true }
