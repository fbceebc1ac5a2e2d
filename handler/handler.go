package handler

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/aws/aws-lambda-go/events"

	"github.com/sqsonce/sqsonce/internal/redact"
	"github.com/sqsonce/sqsonce/middleware/idempotency"
)

// Summary is the result of one summarise request: what the guard stores in
// the idempotency record and replays to every later delivery of the key, and
// what the [Sink] persists.
type Summary struct {
	ID              string    `json:"id"`               // the idempotency record id, when known
	DocumentID      string    `json:"document_id"`      // the request's document.id
	DocumentVersion string    `json:"document_version"` // the request's document.version
	PromptVersion   string    `json:"prompt_version"`   // the prompt template the model was given
	Provider        string    `json:"provider"`         // the provider's name (Provider.Name)
	Model           string    `json:"model"`            // the model that answered
	Summary         string    `json:"summary"`          // the generated text
	InputTokens     int       `json:"input_tokens"`     // tokens in, as the provider counts them
	OutputTokens    int       `json:"output_tokens"`    // tokens out, as the provider counts them
	MessageID       string    `json:"message_id"`       // the message whose delivery made the call
	CreatedAt       time.Time `json:"created_at"`       // when the answer was received
}

// Config configures a [Handler].
type Config struct {
	// Documents fetches document texts. Required.
	Documents Documents
	// Provider makes the generation. Required; wrap it with [LogRequests].
	Provider Provider
	// Sink persists each summary. Nil keeps it only in the idempotency
	// record.
	Sink Sink
	// Model is the model used when a request names none. A request without
	// a model fails when Model is empty.
	Model string
	// RecordID returns the idempotency record id of a message, for the request
	// log and [Summary.ID]. Nil means the id of the record the guard claimed
	// for the call ([idempotency.RecordID]), which is empty when Handle is
	// not run through the guard.
	RecordID func(events.SQSMessage) string
	// Now is the clock. Nil means [time.Now].
	Now func() time.Time
}

// Handler is the summarise job for one message. It has no AWS plumbing:
// documents, provider and sink are interfaces. Make it idempotent with
// idempotency.Wrap(g, handler.Key(), h.Handle).
type Handler struct {
	cfg Config
}

// New checks cfg and returns a Handler.
func New(cfg Config) (*Handler, error) {
	var errs []error
	if cfg.Documents == nil {
		errs = append(errs, errors.New("handler: Config.Documents is required"))
	}
	if cfg.Provider == nil {
		errs = append(errs, errors.New("handler: Config.Provider is required"))
	}
	if err := errors.Join(errs...); err != nil {
		return nil, err
	}
	if cfg.Now == nil {
		cfg.Now = time.Now
	}
	return &Handler{cfg: cfg}, nil
}

// Handle summarises the document the message asks for: parse and validate
// the body, then [Handler.HandleRequest]. Errors wrap [ErrInvalidRequest]
// for a bad body and [ErrDocumentNotFound] for a missing document; no
// provider call is made for either.
func (h *Handler) Handle(ctx context.Context, m events.SQSMessage) (Summary, error) {
	req, err := ParseRequest([]byte(m.Body))
	if err != nil {
		return Summary{}, err
	}
	return h.HandleRequest(ctx, req, m)
}

// HandleRequest summarises the document req asks for, req being the
// decoded body of m: fetch the document, make one provider call, save the
// summary. It is the operation for idempotency.WrapJSON with [RequestKey]
// and [RequestOptions], which decodes and checks each body once. Errors wrap [ErrInvalidRequest] for a
// request without a model (none sent, no default) or with an unknown
// prompt version, and [ErrDocumentNotFound] for a missing document; no
// provider call is made for either.
func (h *Handler) HandleRequest(ctx context.Context, req Request, m events.SQSMessage) (Summary, error) {
	model := req.Model
	if model == "" {
		model = h.cfg.Model
	}
	if model == "" {
		return Summary{}, fmt.Errorf("%w: no model in the request and no default model", ErrInvalidRequest)
	}
	system, ok := Prompt(req.PromptVersion)
	if !ok {
		return Summary{}, fmt.Errorf("%w: prompt_version %s is unknown", ErrInvalidRequest, redact.String(req.PromptVersion))
	}
	text, err := h.cfg.Documents.Get(ctx, req.Document)
	if err != nil {
		return Summary{}, err
	}
	recordID := idempotency.RecordID(ctx)
	if h.cfg.RecordID != nil {
		recordID = h.cfg.RecordID(m)
	}
	ctx = context.WithValue(ctx, callInfoKey{}, callInfo{recordID: recordID, messageID: m.MessageId})
	c, err := h.cfg.Provider.Complete(ctx, Call{Model: model, System: system, Text: text, Parameters: req.Parameters})
	if err != nil {
		return Summary{}, fmt.Errorf("handler: %s provider: %w", h.cfg.Provider.Name(), err)
	}
	answered := c.Model
	if answered == "" {
		answered = model
	}
	s := Summary{
		ID:              recordID,
		DocumentID:      string(req.Document.ID),
		DocumentVersion: string(req.Document.Version),
		PromptVersion:   req.PromptVersion,
		Provider:        h.cfg.Provider.Name(),
		Model:           answered,
		Summary:         c.Text,
		InputTokens:     c.InputTokens,
		OutputTokens:    c.OutputTokens,
		MessageID:       m.MessageId,
		CreatedAt:       h.cfg.Now().UTC(),
	}
	if h.cfg.Sink != nil {
		if err := h.cfg.Sink.Save(ctx, s); err != nil {
			return Summary{}, fmt.Errorf("handler: save summary: %w", err)
		}
	}
	return s, nil
}
