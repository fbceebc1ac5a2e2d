package handler

import (
	"encoding/json"
	"fmt"

	"github.com/aws/aws-lambda-go/events"

	"github.com/sqsonce/sqsonce/middleware/idempotency"
)

// KeyField is the body field that carries the producer's idempotency key.
const KeyField = "idempotency_key"

// WorkSelector is the selector of [WorkKey]'s keys (see [idempotency.Selection]):
// in the native format, a producer's [KeyField] that holds a request's
// canonical subset never gives that request's record id.
const WorkSelector = "summarise work"

// workSource names the canonical subset in key errors.
const workSource = "canonical subset (document.id, document.version, model, prompt_version, parameters)"

// Key returns the app's key selector: the producer's [KeyField] when the
// body has one, else the canonical subset of the request ([WorkKey]).
func Key() idempotency.Selector {
	return idempotency.FirstOf(idempotency.BodyField(KeyField), idempotency.SelectorFunc(WorkKey))
}

// work is the canonical subset of a [Request]: the fields that define the
// work, and nothing else. It is encoded as canonical JSON (RFC 8785).
type work struct {
	DocumentID      Ident      `json:"document_id"`
	DocumentVersion Ident      `json:"document_version"`
	Model           string     `json:"model,omitempty"`
	PromptVersion   string     `json:"prompt_version"`
	Parameters      Parameters `json:"parameters,omitzero"`
}

// WorkKey is a key function (for idempotency.SelectorFunc) whose selection
// is the canonical subset of the request in the message body:
//
//	{"document_id", "document_version", "model", "prompt_version", "parameters"}
//
// the fields that decide what the provider is asked to do; the request id,
// send time, trace id and S3 location are left out. Values are taken as
// sent (an omitted model or parameter stays omitted) and encoded as
// canonical JSON, so field order, whitespace and number spelling
// (temperature 0.7, 0.70, 7e-1; version 9 or "9") do not change the key.
// Its keys carry the selector [WorkSelector].
//
// A body without document.id or document.version has no key: the error wraps
// [idempotency.ErrNoKey]. Any other invalid request fails with an error that
// wraps [ErrInvalidRequest], before anything is claimed.
//
// WorkKey is also the payload the app validates on a reused producer key.
func WorkKey(m events.SQSMessage) (idempotency.Selection, error) {
	r, err := ParseRequest([]byte(m.Body))
	if err != nil {
		var perr error = err
		if noWorkKey(m.Body) {
			perr = fmt.Errorf("%w: document.id or document.version is missing", idempotency.ErrNoKey)
		}
		return idempotency.Selection{}, &idempotency.KeyError{InputID: m.MessageId, Source: workSource, Err: perr}
	}
	k, err := idempotency.SelectionOf(WorkSelector, r.work())
	if err != nil {
		return idempotency.Selection{}, &idempotency.KeyError{InputID: m.MessageId, Source: workSource, Err: err}
	}
	return k, nil
}

func (r Request) work() work {
	return work{
		DocumentID:      r.Document.ID,
		DocumentVersion: r.Document.Version,
		Model:           r.Model,
		PromptVersion:   r.PromptVersion,
		Parameters:      r.Parameters,
	}
}

// noWorkKey reports whether a JSON object body lacks the fields that
// identify the work (document id or version), so that it has no key at all,
// as opposed to an invalid one.
func noWorkKey(body string) bool {
	var v struct {
		Document *struct {
			ID      *Ident `json:"id"`
			Version *Ident `json:"version"`
		} `json:"document"`
	}
	if err := json.Unmarshal([]byte(body), &v); err != nil {
		return false
	}
	return v.Document == nil || v.Document.ID == nil || *v.Document.ID == "" ||
		v.Document.Version == nil || *v.Document.Version == ""
}
