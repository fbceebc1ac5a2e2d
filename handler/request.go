package handler

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"regexp"
	"strconv"
	"strings"
	"time"

	"github.com/sqsonce/sqsonce/internal/redact"
)

// ErrInvalidRequest reports a message body that is not a valid [Request].
// Retrying does not help: such a message ends in the dead-letter queue.
var ErrInvalidRequest = errors.New("handler: invalid request")

// Request is the body of one queued message: "summarise document D at
// version V with model M and prompt P". Fields marked "key" are the
// canonical subset hashed into the idempotency key when the producer sends
// no IdempotencyKey (see [WorkKey]); the others never change the key.
type Request struct {
	// IdempotencyKey is the producer's own key, chosen where the work was
	// decided and sent again unchanged with every re-send. Optional; when
	// present it is the key, and the canonical subset is only validated
	// against it (see [WorkKey]).
	IdempotencyKey string `json:"idempotency_key,omitempty"`

	// Document names the text to summarise. Key: id and version.
	Document Document `json:"document"`

	// Model is the provider's model id, e.g.
	// "anthropic.claude-3-haiku-20240307-v1:0". Optional: empty means the
	// deployment's default model. Key: as sent (an omitted model stays
	// omitted, so changing the default does not re-run in-flight messages).
	Model string `json:"model,omitempty"`

	// PromptVersion selects the instructions sent with the document, e.g.
	// "v1" (see [Prompt]). Required. Key.
	PromptVersion string `json:"prompt_version"`

	// Parameters are the generation settings. Optional. Key: as sent.
	Parameters Parameters `json:"parameters,omitzero"`

	// RequestID identifies one send of the message, for tracing. Not key:
	// a producer's re-send carries a new one.
	RequestID string `json:"request_id,omitempty"`

	// SentAt is when the producer sent the message. Not key: a re-send
	// carries a new one.
	SentAt *time.Time `json:"sent_at,omitempty"`

	// TraceID is a distributed-tracing id. Not key.
	TraceID string `json:"trace_id,omitempty"`
}

// Document names a document at one version. ID and Version identify the
// content; Bucket, Key and VersionID only say where to fetch it from, and
// are not part of the idempotency key (moving a document does not change
// the work).
type Document struct {
	// ID is the document's id in the producer's domain, e.g. "4471". A JSON
	// number is accepted and read as its decimal string. Required. Key.
	ID Ident `json:"id"`
	// Version is the document's version, e.g. "9" or 9. Required. Key.
	Version Ident `json:"version"`

	// Bucket is the S3 bucket holding the document. Optional: empty means
	// the deployment's documents bucket.
	Bucket string `json:"bucket,omitempty"`
	// Key is the S3 object key. Optional: empty means
	// "{prefix}{id}/{version}.txt".
	Key string `json:"key,omitempty"`
	// VersionID is the S3 object version to read. Optional: empty means the
	// latest version of the object.
	VersionID string `json:"version_id,omitempty"`
}

// Parameters are the generation settings of a [Request]. A field left out
// means the provider's default. Unknown fields are rejected, so that a
// setting the handler would ignore cannot silently drop out of the key.
type Parameters struct {
	// Temperature in [0, 2]. 0.7, 0.70 and 7e-1 are the same value and give
	// the same key.
	Temperature *float64 `json:"temperature,omitempty"`
	// MaxTokens bounds the length of the summary, in tokens; at least 1.
	MaxTokens *int `json:"max_tokens,omitempty"`
	// TopP in [0, 1].
	TopP *float64 `json:"top_p,omitempty"`
	// StopSequences end the generation when produced.
	StopSequences []string `json:"stop_sequences,omitempty"`
}

// IsZero reports whether no parameter is set.
func (p Parameters) IsZero() bool {
	return p.Temperature == nil && p.MaxTokens == nil && p.TopP == nil && len(p.StopSequences) == 0
}

// UnmarshalJSON decodes parameters, rejecting unknown fields.
func (p *Parameters) UnmarshalJSON(b []byte) error {
	type plain Parameters
	var v plain
	switch t := bytes.TrimSpace(b); {
	case bytes.Equal(t, []byte("null")):
		return nil
	case len(t) == 0 || t[0] != '{':
		return bodyError("parameters is not a JSON object")
	}
	if err := json.Unmarshal(b, &v); err != nil {
		return bodyError("parameters: " + describeDecode(err))
	}
	var fields map[string]json.RawMessage
	if err := json.Unmarshal(b, &fields); err != nil {
		return bodyError("parameters: " + describeDecode(err))
	}
	for name := range fields {
		switch name {
		case "temperature", "max_tokens", "top_p", "stop_sequences":
		default:
			return bodyError("parameters: unknown field " + redact.String(name))
		}
	}
	*p = Parameters(v)
	return nil
}

// Ident is an identifier written in JSON as a string ("4471") or as an
// integer (4471); both read as the same decimal string, so they give the
// same key.
type Ident string

// UnmarshalJSON accepts a JSON string or an integer.
func (id *Ident) UnmarshalJSON(b []byte) error {
	b = bytes.TrimSpace(b)
	if len(b) > 0 && b[0] == '"' {
		var s string
		if err := json.Unmarshal(b, &s); err != nil {
			return err
		}
		*id = Ident(s)
		return nil
	}
	if bytes.Equal(b, []byte("null")) {
		*id = ""
		return nil
	}
	n, err := strconv.ParseInt(string(b), 10, 64)
	if err != nil {
		return bodyError("an identifier is " + redact.Bytes(b) + ", neither a string nor an integer of 64 bits")
	}
	*id = Ident(strconv.FormatInt(n, 10))
	return nil
}

// identPattern is what document ids and versions may contain: they name
// files and S3 keys, so no separators, no "..", nothing unprintable.
var identPattern = regexp.MustCompile(`^[A-Za-z0-9_-][A-Za-z0-9._-]{0,127}$`)

// modelPattern is a model id or ARN, as Bedrock and OpenAI-compatible
// servers name models. A model id is logged with every provider call, so it
// must be an identifier, not text.
var modelPattern = regexp.MustCompile(`^[A-Za-z0-9][A-Za-z0-9._:/@+-]{0,255}$`)

// maxLocation bounds document.bucket, document.key and document.version_id:
// S3 takes no longer object key.
const maxLocation = 1024

// bodyError is an error about a message body that quotes none of it.
type bodyError string

func (e bodyError) Error() string { return string(e) }

// describeDecode describes an error of json.Unmarshal on a message body
// without quoting the body: the offset of a syntax error, the field and
// the kinds of a type error.
func describeDecode(err error) string {
	var be bodyError
	var se *json.SyntaxError
	var te *json.UnmarshalTypeError
	var pe *time.ParseError
	switch {
	case errors.As(err, &be):
		return be.Error()
	case errors.As(err, &se):
		return fmt.Sprintf("body is not valid JSON (at byte %d)", se.Offset)
	case errors.As(err, &te):
		kind, _, _ := strings.Cut(te.Value, " ") // "number 1e999": the kind, not the value
		field := te.Field
		if field == "" {
			field = "body"
		}
		return fmt.Sprintf("%s is a JSON %s, want %s", field, kind, te.Type)
	case errors.As(err, &pe):
		return "sent_at is not an RFC 3339 time"
	}
	return fmt.Sprintf("body does not decode as a request (%T)", err)
}

// ParseRequest decodes and validates a message body. Errors wrap
// [ErrInvalidRequest]. They never quote the body: a value they refuse is
// shown by a short prefix, its length and a digest.
func ParseRequest(body []byte) (Request, error) {
	var r Request
	if err := json.Unmarshal(body, &r); err != nil {
		return Request{}, fmt.Errorf("%w: %s", ErrInvalidRequest, describeDecode(err))
	}
	if err := r.Validate(); err != nil {
		return Request{}, err
	}
	return r, nil
}

// Validate checks the fields of r. Errors wrap [ErrInvalidRequest].
func (r Request) Validate() error {
	var errs []string
	bad := func(format string, args ...any) {
		errs = append(errs, fmt.Sprintf(format, args...))
	}
	if r.Document.ID == "" {
		bad("document.id is required")
	} else if !identPattern.MatchString(string(r.Document.ID)) || r.Document.ID == ".." {
		bad("document.id %s is not a plain identifier", redact.String(string(r.Document.ID)))
	}
	if r.Document.Version == "" {
		bad("document.version is required")
	} else if !identPattern.MatchString(string(r.Document.Version)) || r.Document.Version == ".." {
		bad("document.version %s is not a plain identifier", redact.String(string(r.Document.Version)))
	}
	if d := r.Document; len(d.Bucket) > maxLocation || len(d.Key) > maxLocation || len(d.VersionID) > maxLocation {
		bad("document.bucket, document.key or document.version_id is longer than %d bytes", maxLocation)
	}
	if r.Model != "" && !modelPattern.MatchString(r.Model) {
		bad("model %s is not a model id", redact.String(r.Model))
	}
	if r.PromptVersion == "" {
		bad("prompt_version is required")
	} else if _, ok := Prompt(r.PromptVersion); !ok {
		bad("prompt_version %s is unknown", redact.String(r.PromptVersion))
	}
	p := r.Parameters
	if p.Temperature != nil && (*p.Temperature < 0 || *p.Temperature > 2) {
		bad("parameters.temperature is outside [0, 2]")
	}
	if p.TopP != nil && (*p.TopP < 0 || *p.TopP > 1) {
		bad("parameters.top_p is outside [0, 1]")
	}
	if p.MaxTokens != nil && *p.MaxTokens < 1 {
		bad("parameters.max_tokens is below 1")
	}
	if len(errs) == 0 {
		return nil
	}
	return fmt.Errorf("%w: %s", ErrInvalidRequest, strings.Join(errs, "; "))
}
