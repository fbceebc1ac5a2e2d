package handler_test

import (
	"errors"
	"strings"
	"testing"

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
