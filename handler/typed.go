package handler

import (
	"fmt"

	"github.com/sqsonce/sqsonce/middleware/idempotency"
)

// Body is how the app reads a message with idempotency.WrapJSON: the body
// decoded once into a [Request] (unknown top-level fields ignored, unknown
// parameters rejected), the key taken from it ([RequestKey]), the request
// checked for well-formedness ([Request.Validate]) and its canonical subset
// compared on a reused key ([WorkPayload]):
//
//	fn := idempotency.WrapJSON(g, handler.Body(), h.HandleRequest)
//
// The keys and payloads are those of [Key] and [WorkKey], so records
// written by either wiring are found by the other. A body that is not a
// valid Request fails with an idempotency.BodyError (wrapping
// [ErrInvalidRequest] when the check refused it), and one without any key
// with an idempotency.KeyError wrapping idempotency.ErrNoKey; either way
// before anything is claimed.
func Body() idempotency.JSONBody[Request] {
	return idempotency.JSONBody[Request]{KeyFunc: RequestKey, Check: Request.Validate, PayloadFunc: WorkPayload}
}

// RequestKey is the key of a decoded request, as [Key] takes it
// from the body: the producer's IdempotencyKey when it is not empty, else
// the canonical subset of [WorkKey]. A request with neither (no producer
// key, no document id or version) has no key: the error wraps
// idempotency.ErrNoKey.
func RequestKey(r Request) (idempotency.Key, error) {
	if r.IdempotencyKey != "" {
		return idempotency.BodyKey(r.IdempotencyKey, KeyField)
	}
	if r.Document.ID == "" || r.Document.Version == "" {
		return idempotency.Key{}, fmt.Errorf("%w: no %s and no document.id or document.version", idempotency.ErrNoKey, KeyField)
	}
	return WorkPayload(r)
}

// WorkPayload is the canonical subset of a decoded request, as [WorkKey]
// takes it from the body: the payload validated when a producer key is
// reused.
func WorkPayload(r Request) (idempotency.Key, error) {
	return idempotency.KeyOf(WorkSelector, r.work())
}
