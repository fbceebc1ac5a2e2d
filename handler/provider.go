package handler

import (
	"context"
	"fmt"
	"strings"
	"time"
	"unicode"
)

// Call is one request to a model provider.
type Call struct {
	Model      string     `json:"model"`      // the provider's model id
	System     string     `json:"system"`     // the instructions (the prompt version's text)
	Text       string     `json:"text"`       // the user message: the document
	Parameters Parameters `json:"parameters"` // generation settings; unset fields use the provider's defaults
}

// Completion is a provider's answer to a [Call].
type Completion struct {
	Text         string // the generated summary
	Model        string // the model that answered, as the provider reports it
	InputTokens  int    // tokens in, as the provider counts them
	OutputTokens int    // tokens out, as the provider counts them
	StopReason   string // why the generation ended, in the provider's words
}

// Provider generates text with a model. Implementations must not retry a
// call on their own: a retry can be a second billed generation, and the
// queue redelivers a failed message anyway. Wrap every provider with
// [LogRequests], so that each call leaves a line in the request log.
type Provider interface {
	// Name identifies the provider in the request log: "stub", "bedrock",
	// "openai".
	Name() string
	// Complete makes exactly one generation request.
	Complete(ctx context.Context, c Call) (Completion, error)
}

// Stub is a deterministic local [Provider]: its summary is the first words of
// the document, so equal calls give equal answers. It costs nothing and
// needs no network; use it for local runs and tests.
type Stub struct {
	// Delay is how long each call takes, as a slow model would; the call
	// fails early if its context ends first. Zero answers at once.
	Delay time.Duration
}

var _ Provider = Stub{}

// stubWords is how many words of the document the stub's summary keeps.
const stubWords = 24

// Name implements [Provider].
func (Stub) Name() string { return "stub" }

// Complete implements [Provider].
func (s Stub) Complete(ctx context.Context, c Call) (Completion, error) {
	if s.Delay > 0 {
		t := time.NewTimer(s.Delay)
		defer t.Stop()
		select {
		case <-t.C:
		case <-ctx.Done():
			return Completion{}, fmt.Errorf("handler: stub provider: %w", context.Cause(ctx))
		}
	} else if err := ctx.Err(); err != nil {
		return Completion{}, fmt.Errorf("handler: stub provider: %w", err)
	}
	words := strings.FieldsFunc(c.Text, unicode.IsSpace)
	out := words
	if len(out) > stubWords {
		out = out[:stubWords]
	}
	text := strings.Join(out, " ")
	if len(words) > stubWords {
		text += " …"
	}
	if c.Parameters.MaxTokens != nil && len(out) > *c.Parameters.MaxTokens {
		out = out[:*c.Parameters.MaxTokens]
		text = strings.Join(out, " ") + " …"
	}
	model := c.Model
	if model == "" {
		model = "stub"
	}
	return Completion{
		Text:         "[stub summary] " + text,
		Model:        model,
		InputTokens:  len(strings.Fields(c.System)) + len(words),
		OutputTokens: len(out),
		StopReason:   "end_turn",
	}, nil
}
