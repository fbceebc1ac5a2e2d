package driver

import (
	"bytes"
	"context"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"

	"github.com/sqsonce/sqsonce/internal/inflate"
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
	// Of a result compressed before it is sealed ([SealedGzipPrefix]),
	// recordID is the record id followed by "#gzip", which no record id
	// is (an id has one "#"): the compressed seal of a record opens as
	// neither its nor another record's uncompressed one.
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

// DataFitter is implemented by stores that complete a record without its
// result when the result does not fit (dynamostore: an item's 400 KB).
// A guard with a Sealer asks it whether the sealed result, as [SealData]
// writes it, would be kept whole; only when it would not does the guard
// compress the result before sealing it ([SealedGzipPrefix]), a form
// releases before it cannot open. Without it, a result is never sealed
// compressed; a store that keeps every result need not implement it.
type DataFitter interface {
	// FitsData reports whether Complete of rec (its fields as the
	// completion writes them) would store rec.Data whole, as it is or
	// compressed by the store, rather than complete the record without
	// it. It calls nothing outside the process.
	FitsData(rec Record) bool
}

// SealedPrefix begins the stored result (Record.Data) of a sealed record.
// A sealed result is "sqsonce:sealed:1:" followed by the [Sealer]'s output
// in standard base64. It is not JSON text, so that a reader that predates
// sealing (an earlier release of this module, during a rolling deploy or
// after a rollback) fails to decode it, as it fails on any stored result
// that does not decode, instead of replaying the sealed text as a JSON
// string; and no result, which is JSON text, begins with it. Stores keep
// it as they keep any result that is not JSON (dynamostore: S, or B
// compressed). Records sealed by earlier builds of this release hold the
// same text as a JSON string (a leading and a trailing '"'): every reader
// here takes that form for sealed too and opens it; none writes it. A JSON
// string holding other than base64 after the prefix is a plain result
// ([IsSealed]).
const SealedPrefix = `sqsonce:sealed:1:`

// legacySealedPrefix begins a sealed result in the JSON string form that
// earlier builds wrote (see [SealedPrefix]): read, never written.
const legacySealedPrefix = `"` + SealedPrefix

// SealedGzipPrefix begins a sealed result whose plaintext was gzipped
// before it was sealed: "sqsonce:sealed:1:gzip:" followed by the
// [Sealer]'s output in standard base64, sealed for the record id followed
// by "#gzip" (see [Sealer.Seal]). It begins with [SealedPrefix], so that
// every reader takes it for sealed; a release that knows [SealedPrefix]
// only fails it with [ErrUnsealed] (':' is not base64), never replays it.
// [SealDataFor] writes it only where [SealData]'s form would not be kept
// whole ([DataFitter]): a release that predates it loses no result it
// could have replayed. Opened, it inflates to at most [MaxSealedInflated]
// bytes.
const SealedGzipPrefix = SealedPrefix + `gzip:`

// MaxSealedInflated bounds the result of a compressed seal
// ([SealedGzipPrefix]): [OpenData] fails one that inflates beyond it,
// and [SealDataFor] never compresses a larger result.
const MaxSealedInflated = 64 << 20

// gzipBinding follows the record id as the Sealer's recordID of a
// compressed seal.
const gzipBinding = "#gzip"

// ErrUnsealed is wrapped by the error of a call that found a sealed result
// it could not open: the guard has no Sealer, or the Sealer refused it
// (tampered, sealed for another record, another key, KMS unavailable).
// The call fails; it never replays the sealed text and never runs the
// operation.
var ErrUnsealed = errors.New("idempotency: sealed result cannot be opened")

// WithheldData is the stored result of a record whose operation ran but
// whose result the guard's Sealer could not seal (KMS unavailable, a
// panic): the record is COMPLETED, so that the operation never runs again,
// and its result is withheld, not stored in plaintext. It is [SealedPrefix]
// with nothing sealed after it: sealed by [IsSealed], withheld by
// [IsWithheld]; [OpenData] fails on it, with a permanent error.
const WithheldData = SealedPrefix

// IsSealed reports whether data, a stored result, is sealed: it begins
// with [SealedPrefix], or is in the JSON string form earlier builds wrote.
// A JSON string that begins as that form does but holds other than a seal
// after the prefix (text that is not base64: a result of a guard without a
// Sealer, or of a release that predates sealing) is a plain result.
func IsSealed(data []byte) bool {
	return bytes.HasPrefix(data, []byte(SealedPrefix)) || isLegacySealed(data)
}

// isLegacySealed reports whether data is in the JSON string form earlier
// builds wrote a seal in: legacySealedPrefix, then nothing (withheld) or
// the seal in standard base64, after "gzip:" when compressed, then the
// closing '"'. Data that begins with legacySealedPrefix but is not one
// JSON value (cut short) is taken for a malformed seal, as before: no
// result is stored so.
func isLegacySealed(data []byte) bool {
	if !bytes.HasPrefix(data, []byte(legacySealedPrefix)) {
		return false
	}
	if !json.Valid(data) {
		return true
	}
	body := data[len(legacySealedPrefix) : len(data)-1]
	if len(body) == 0 {
		return true // withheld
	}
	body = bytes.TrimPrefix(body, []byte(SealedGzipPrefix[len(SealedPrefix):]))
	if len(body) == 0 || bytes.ContainsAny(body, "\\\r\n") {
		return false // a JSON escape is no base64; DecodeString skips CR and LF
	}
	_, err := base64.StdEncoding.DecodeString(string(body))
	return err == nil
}

// PlainForm is data, a result stored unsealed, as every reader replays
// it: data itself, unless [IsSealed] would take it for sealed (a JSON
// string in the syntax of the sealed form earlier builds wrote, such as
// "sqsonce:sealed:1:QUJD", which an operation may return); then the same
// JSON string with its first character escaped, which no reader takes for
// sealed and every JSON decoder reads as the same value. A store that keeps
// results in another form than their JSON text (dynamostore's
// DataPowertoolsTypeScript) returns a read result in this form.
func PlainForm(data []byte) []byte {
	if len(data) < 2 || data[0] != '"' || !IsSealed(data) {
		return data
	}
	// data begins "sqsonce: its 's' is \u0073.
	return append([]byte(`"\u0073`), data[2:]...)
}

// IsWithheld reports whether data, a stored result, is [WithheldData] (or
// its JSON string form, which earlier builds wrote).
func IsWithheld(data []byte) bool {
	return string(data) == WithheldData || string(data) == legacySealedPrefix+`"`
}

// SealData returns the stored form of the result data of record id: s's
// seal of it in the form [SealedPrefix] describes. Nil data (no result)
// stays nil.
func SealData(ctx context.Context, s Sealer, id string, data []byte) ([]byte, error) {
	if data == nil {
		return nil, nil
	}
	return seal(ctx, s, id, data, SealedPrefix)
}

// seal is plain sealed by s for recordID, in base64 after prefix.
func seal(ctx context.Context, s Sealer, recordID string, plain []byte, prefix string) ([]byte, error) {
	sealed, err := s.Seal(ctx, recordID, plain)
	if err != nil {
		return nil, err
	}
	out := make([]byte, 0, len(prefix)+base64.StdEncoding.EncodedLen(len(sealed)))
	out = append(out, prefix...)
	return base64.StdEncoding.AppendEncode(out, sealed), nil
}

// sealCompressedData is [SealData] with data gzipped before s seals it,
// in the form [SealedGzipPrefix] describes. Nil data stays nil; data
// larger than [MaxSealedInflated] is refused.
func sealCompressedData(ctx context.Context, s Sealer, id string, data []byte) ([]byte, error) {
	if data == nil {
		return nil, nil
	}
	if len(data) > MaxSealedInflated {
		return nil, fmt.Errorf("idempotency: record %s: a result of %d bytes is above the %d a compressed seal holds", id, len(data), MaxSealedInflated)
	}
	return seal(ctx, s, id+gzipBinding, inflate.Gzip(data), SealedGzipPrefix)
}

// SealDataFor returns the stored form of rec.Data, the result of the
// completion rec (its other fields as the completion writes them), sealed
// by s for store: [SealData]'s, unless store is a [DataFitter] that would
// not keep that whole; then the result gzipped before it is sealed
// ([SealedGzipPrefix]), which an older release cannot open but which may
// fit where the other did not (a seal compresses only by its base64's
// quarter; its plaintext may compress far more). A result larger than
// [MaxSealedInflated] is never compressed. Nil data stays nil.
func SealDataFor(ctx context.Context, s Sealer, store Store, rec Record) ([]byte, error) {
	sealed, err := SealData(ctx, s, rec.ID, rec.Data)
	if err != nil || sealed == nil || len(rec.Data) > MaxSealedInflated {
		return sealed, err
	}
	f, ok := store.(DataFitter)
	if !ok {
		return sealed, nil
	}
	plain := rec.Data
	if rec.Data = sealed; f.FitsData(rec) {
		return sealed, nil
	}
	return sealCompressedData(ctx, s, rec.ID, plain)
}

// OpenData returns the result of record id from data as stored: data
// itself when it is not sealed, else its plaintext as s opens it (and
// inflates it, of [SealedGzipPrefix]). Its error wraps [ErrUnsealed], and
// names neither the data nor the plaintext; s nil opens nothing. Of
// [WithheldData], and of a compressed seal that opens but does not
// inflate (within [MaxSealedInflated]), the error is permanent (it has the
// Permanent method of failure.PermanentError).
func OpenData(ctx context.Context, s Sealer, id string, data []byte) ([]byte, error) {
	if !IsSealed(data) {
		return data, nil
	}
	if IsWithheld(data) {
		// No delivery can have the result: the message fails for good
		// (a batch handler's dead-letter queue), never replays empty.
		return nil, permanent{fmt.Errorf("%w: record %s: the operation ran, but its result could not be sealed and was withheld; it is not run again", ErrUnsealed, id)}
	}
	if s == nil {
		return nil, fmt.Errorf("%w: record %s is sealed and the guard has no Sealer (idempotency.Config.Sealer)", ErrUnsealed, id)
	}
	if data[0] == '"' { // the JSON string form earlier builds wrote
		if len(data) < len(legacySealedPrefix)+1 || data[len(data)-1] != '"' {
			return nil, fmt.Errorf("%w: record %s: the sealed result is malformed", ErrUnsealed, id)
		}
		data = data[1 : len(data)-1]
	}
	body, recordID, compressed := data[len(SealedPrefix):], id, bytes.HasPrefix(data, []byte(SealedGzipPrefix))
	if compressed {
		body, recordID = data[len(SealedGzipPrefix):], id+gzipBinding
	}
	if len(body) == 0 {
		return nil, fmt.Errorf("%w: record %s: the sealed result is malformed", ErrUnsealed, id)
	}
	sealed, err := base64.StdEncoding.AppendDecode(nil, body)
	if err != nil {
		return nil, fmt.Errorf("%w: record %s: the sealed result is not base64", ErrUnsealed, id)
	}
	plain, err := s.Open(ctx, recordID, sealed)
	if err != nil {
		return nil, fmt.Errorf("%w: record %s: %w", ErrUnsealed, id, err)
	}
	if !compressed {
		return plain, nil
	}
	// It opened: its writer held the key. What it holds, no delivery
	// changes; it is inflated within a bound, whatever it claims.
	out, err := inflate.GunzipMember(plain, MaxSealedInflated)
	if err != nil {
		return nil, permanent{fmt.Errorf("%w: record %s: the compressed sealed result does not inflate: %w", ErrUnsealed, id, err)}
	}
	return out, nil
}

// permanent marks an error as one no redelivery can change, by the method
// failure.PermanentError asks for (the driver imports only the standard
// library and this module's internal packages).
type permanent struct{ error }

func (p permanent) Unwrap() error   { return p.error }
func (p permanent) Permanent() bool { return true }
