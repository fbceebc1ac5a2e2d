package handler

import (
	"fmt"

	"github.com/sqsonce/sqsonce/middleware/idempotency"
)

// RequestKey is the key of the app's typed wiring, idempotency.WrapJSON
// with [RequestOptions]: the producer's [KeyField] in the body when it is
// not empty, else the canonical subset of the decoded [Request]
// ([WorkPayload]). Its keys are those of [Key], so records written by
// either wiring are found by the other:
//
//	fn := idempotency.WrapJSON(g, handler.RequestKey(), h.HandleRequest, handler.RequestOptions()...)
//
// A request with neither (no producer key, no document id or version) has
// no key: the message fails with an idempotency.KeyError wrapping
// idempotency.ErrNoKey, before anything is claimed.
func RequestKey() idempotency.Selector {
	return idempotency.FirstOf(idempotency.BodyField(KeyField), idempotency.SelectorFunc(requestWork))
}

// RequestOptions are the options of the app's typed wiring: each decoded
// request checked for well-formedness ([Request.Validate]; a request it
// refuses fails with an idempotency.BodyError wrapping [ErrInvalidRequest])
// and its canonical subset compared on a reused key ([WorkPayload]).
func RequestOptions() []idempotency.Option {
	return []idempotency.Option{
		idempotency.WithCheck(Request.Validate),
		idempotency.WithPayload(idempotency.SelectorFunc(WorkPayload)),
	}
}

// requestWork is the canonical subset of a decoded request, or no key when
// it has no document id or version.
func requestWork(r Request) (idempotency.Selection, error) {
	if r.Document.ID == "" || r.Document.Version == "" {
		return idempotency.Selection{}, fmt.Errorf("%w: no %s and no document.id or document.version", idempotency.ErrNoKey, KeyField)
	}
	return WorkPayload(r)
}

// WorkPayload is the canonical subset of a decoded request, as [WorkKey]
// takes it from the body: the payload validated when a producer key is
// reused.
func WorkPayload(r Request) (idempotency.Selection, error) {
	return idempotency.SelectionOf(WorkSelector, r.work())
}
