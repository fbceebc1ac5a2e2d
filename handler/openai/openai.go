package openai

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/url"
	"strings"
	"time"

	"github.com/sqsonce/sqsonce/handler"
)

// DefaultTimeout bounds one chat-completions request when [Config.HTTPClient]
// is nil. A summary of a long document can take a minute or more.
const DefaultTimeout = 5 * time.Minute

// maxResponseBytes bounds the response body read.
const maxResponseBytes = 4 << 20

// Config configures a [Provider].
type Config struct {
	// BaseURL is the API's base URL, up to and including the version, e.g.
	// "https://api.openai.com/v1" or "http://127.0.0.1:11434/v1"; the
	// provider posts to BaseURL + "/chat/completions". Required.
	BaseURL string
	// APIKey is sent as "Authorization: Bearer {APIKey}". Empty sends no
	// Authorization header (for local servers that need none). With a key,
	// an http:// BaseURL is refused unless its host is a loopback address
	// (127.0.0.0/8, ::1, localhost): the key would cross the network in
	// plaintext.
	APIKey string
	// HTTPClient sends the requests. Nil means a client with
	// [DefaultTimeout]. It must not retry POST requests on its own.
	HTTPClient *http.Client
}

// Provider is a [handler.Provider] for an OpenAI-compatible chat-completions
// endpoint. It makes exactly one HTTP request per call: it never retries, and
// it sends no Idempotency-Key header, which would let net/http's transport
// replay the POST on a broken keep-alive connection.
type Provider struct {
	endpoint string
	apiKey   string
	client   *http.Client
}

var _ handler.Provider = (*Provider)(nil)

// New checks cfg and returns a Provider.
func New(cfg Config) (*Provider, error) {
	if cfg.BaseURL == "" {
		return nil, errors.New("openai: Config.BaseURL is required")
	}
	u, err := url.Parse(cfg.BaseURL)
	if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
		return nil, fmt.Errorf("openai: Config.BaseURL %q is not an http(s) URL", cfg.BaseURL)
	}
	if u.Scheme == "http" && cfg.APIKey != "" && !loopback(u.Hostname()) {
		return nil, fmt.Errorf("openai: Config.BaseURL %q is http://, which would send Config.APIKey in plaintext: use https:// (http:// is for a server on this host)", cfg.BaseURL)
	}
	client := cfg.HTTPClient
	if client == nil {
		client = &http.Client{Timeout: DefaultTimeout}
	}
	return &Provider{
		endpoint: strings.TrimRight(cfg.BaseURL, "/") + "/chat/completions",
		apiKey:   cfg.APIKey,
		client:   client,
	}, nil
}

// loopback reports whether host names this machine: localhost or a
// loopback address.
func loopback(host string) bool {
	if host == "localhost" {
		return true
	}
	ip := net.ParseIP(host)
	return ip != nil && ip.IsLoopback()
}

// Name implements [handler.Provider]: "openai".
func (*Provider) Name() string { return "openai" }

type message struct {
	Role    string `json:"role"`
	Content string `json:"content"`
}

type chatRequest struct {
	Model       string    `json:"model"`
	Messages    []message `json:"messages"`
	Temperature *float64  `json:"temperature,omitempty"`
	MaxTokens   *int      `json:"max_tokens,omitempty"`
	TopP        *float64  `json:"top_p,omitempty"`
	Stop        []string  `json:"stop,omitempty"`
}

type chatResponse struct {
	Model   string `json:"model"`
	Choices []struct {
		Message      message `json:"message"`
		FinishReason string  `json:"finish_reason"`
	} `json:"choices"`
	Usage struct {
		PromptTokens     int `json:"prompt_tokens"`
		CompletionTokens int `json:"completion_tokens"`
	} `json:"usage"`
}

// APIError is a response with a status other than 2xx.
type APIError struct {
	StatusCode int
	Type       string // the error's type or code, when the body names one
	Message    string
}

func (e *APIError) Error() string {
	if e.Type != "" {
		return fmt.Sprintf("openai: status %d: %s: %s", e.StatusCode, e.Type, e.Message)
	}
	return fmt.Sprintf("openai: status %d: %s", e.StatusCode, e.Message)
}

// Complete implements [handler.Provider]: one POST to /chat/completions.
func (p *Provider) Complete(ctx context.Context, c handler.Call) (handler.Completion, error) {
	body, err := json.Marshal(chatRequest{
		Model: c.Model,
		Messages: []message{
			{Role: "system", Content: c.System},
			{Role: "user", Content: c.Text},
		},
		Temperature: c.Parameters.Temperature,
		MaxTokens:   c.Parameters.MaxTokens,
		TopP:        c.Parameters.TopP,
		Stop:        c.Parameters.StopSequences,
	})
	if err != nil {
		return handler.Completion{}, fmt.Errorf("openai: encode request: %w", err)
	}
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, p.endpoint, bytes.NewReader(body))
	if err != nil {
		return handler.Completion{}, fmt.Errorf("openai: %w", err)
	}
	req.Header.Set("Content-Type", "application/json")
	if p.apiKey != "" {
		req.Header.Set("Authorization", "Bearer "+p.apiKey)
	}
	resp, err := p.client.Do(req)
	if err != nil {
		return handler.Completion{}, fmt.Errorf("openai: %w", err)
	}
	defer resp.Body.Close()
	raw, err := io.ReadAll(io.LimitReader(resp.Body, maxResponseBytes))
	if err != nil {
		return handler.Completion{}, fmt.Errorf("openai: read response: %w", err)
	}
	if resp.StatusCode/100 != 2 {
		return handler.Completion{}, apiError(resp.StatusCode, raw)
	}
	var cr chatResponse
	if err := json.Unmarshal(raw, &cr); err != nil {
		return handler.Completion{}, fmt.Errorf("openai: decode response: %w", err)
	}
	if len(cr.Choices) == 0 {
		return handler.Completion{}, errors.New("openai: response has no choices")
	}
	return handler.Completion{
		Text:         cr.Choices[0].Message.Content,
		Model:        cr.Model,
		InputTokens:  cr.Usage.PromptTokens,
		OutputTokens: cr.Usage.CompletionTokens,
		StopReason:   cr.Choices[0].FinishReason,
	}, nil
}

func apiError(status int, raw []byte) *APIError {
	e := &APIError{StatusCode: status}
	var body struct {
		Error struct {
			Message string `json:"message"`
			Type    string `json:"type"`
			Code    any    `json:"code"`
		} `json:"error"`
	}
	if json.Unmarshal(raw, &body) == nil && body.Error.Message != "" {
		e.Message, e.Type = body.Error.Message, body.Error.Type
		if e.Type == "" && body.Error.Code != nil {
			e.Type = fmt.Sprint(body.Error.Code)
		}
		return e
	}
	msg := strings.TrimSpace(string(raw))
	if len(msg) > 200 {
		msg = msg[:200] + "…"
	}
	if msg == "" {
		msg = http.StatusText(status)
	}
	e.Message = msg
	return e
}
