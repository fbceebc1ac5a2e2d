package handler_test

import (
	"errors"
	"strings"
	"testing"

	"github.com/aws/aws-lambda-go/events"

	"github.com/sqsonce/sqsonce/handler"
)

func TestParseRequest(t *testing.T) {
	r, err := handler.ParseRequest([]byte(`{"idempotency_key":"k","document":{"id":4471,"version":"9","bucket":"b","key":"k.txt","version_id":"v1"},
		"model":"m","prompt_version":"v1","parameters":{"temperature":7e-1,"max_tokens":100,"top_p":0.9,"stop_sequences":["END"]},
		"request_id":"r","sent_at":"2025-05-01T10:00:00Z","trace_id":"t"}`))
	if err != nil {
		t.Fatal(err)
	}
	if r.IdempotencyKey != "k" || r.Document.ID != "4471" || r.Document.VersionID != "v1" || *r.Parameters.Temperature != 0.7 ||
		*r.Parameters.MaxTokens != 100 || r.SentAt == nil || r.SentAt.Year() != 2025 || r.TraceID != "t" {
		t.Errorf("parsed %+v", r)
	}
	bad := []struct{ name, body string }{
		{"not JSON", `nope`},
		{"no prompt version", `{"document":{"id":"1","version":"1"}}`},
		{"max_tokens 0", `{"document":{"id":"1","version":"1"},"prompt_version":"v1","parameters":{"max_tokens":0}}`},
		{"max_tokens fractional", `{"document":{"id":"1","version":"1"},"prompt_version":"v1","parameters":{"max_tokens":1.5}}`},
		{"top_p 2", `{"document":{"id":"1","version":"1"},"prompt_version":"v1","parameters":{"top_p":2}}`},
		{"id as object", `{"document":{"id":{},"version":"1"},"prompt_version":"v1"}`},
		{"id too long", `{"document":{"id":"` + strings.Repeat("a", 129) + `","version":"1"},"prompt_version":"v1"}`},
	}
	for _, tt := range bad {
		t.Run(tt.name, func(t *testing.T) {
			if _, err := handler.ParseRequest([]byte(tt.body)); !errors.Is(err, handler.ErrInvalidRequest) {
				t.Errorf("error = %v, want ErrInvalidRequest", err)
			}
		})
	}
}

// TestValidateQuotesNoNumber: a parameter out of range is named by its field
// and rule, never its value (the message's content), in ParseRequest's and
// WorkKey's errors alike.
func TestValidateQuotesNoNumber(t *testing.T) {
	for _, c := range []struct{ body, number string }{
		{`{"document":{"id":"d","version":"1"},"prompt_version":"v1","parameters":{"temperature":31415926.53589793}}`, "3.141592653589793e+07"},
		{`{"document":{"id":"d","version":"1"},"prompt_version":"v1","parameters":{"top_p":-1234567.891}}`, "-1.234567891e+06"},
		{`{"document":{"id":"d","version":"1"},"prompt_version":"v1","parameters":{"max_tokens":-987654321987}}`, "987654321987"},
	} {
		_, err := handler.ParseRequest([]byte(c.body))
		if !errors.Is(err, handler.ErrInvalidRequest) || strings.Contains(err.Error(), c.number) || strings.Contains(err.Error(), "1234567") {
			t.Errorf("ParseRequest error %v: want ErrInvalidRequest without the number %s", err, c.number)
		}
		_, err = handler.WorkKey(events.SQSMessage{MessageId: "m", Body: c.body})
		if err == nil || strings.Contains(err.Error(), c.number) || strings.Contains(err.Error(), "1234567") {
			t.Errorf("WorkKey error %v: want an error without the number %s", err, c.number)
		}
	}
}

// TestHandlerErrorsQuoteNoField: a document id that is not a plain
// identifier (read by Dir) and a prompt version HandleRequest does not know
// (a WrapJSON user may call it without Validate) are named by length and
// digest, never quoted.
func TestHandlerErrorsQuoteNoField(t *testing.T) {
	const secret = "customer-4471-private"
	if _, err := handler.Dir(t.TempDir()).Get(t.Context(), handler.Document{ID: secret + "/..", Version: secret}); !errors.Is(err, handler.ErrInvalidRequest) || strings.Contains(err.Error(), secret) {
		t.Errorf("Dir.Get error %v: want ErrInvalidRequest without the id", err)
	}
	h, err := handler.New(handler.Config{Documents: handler.Dir(t.TempDir()), Provider: handler.Stub{}, Sink: &handler.MemorySink{}, Model: "m"})
	if err != nil {
		t.Fatal(err)
	}
	_, err = h.HandleRequest(t.Context(), handler.Request{Document: handler.Document{ID: "d", Version: "1"}, PromptVersion: secret}, events.SQSMessage{MessageId: "m"})
	if !errors.Is(err, handler.ErrInvalidRequest) || strings.Contains(err.Error(), secret) {
		t.Errorf("HandleRequest error %v: want ErrInvalidRequest without the prompt version", err)
	}
}
