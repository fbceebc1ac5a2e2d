package openai_test

import (
	"encoding/json"
	"errors"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/sqsonce/sqsonce/handler"
	"github.com/sqsonce/sqsonce/handler/openai"
)

func TestComplete(t *testing.T) {
	var got map[string]any
	var auth, path string
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		auth, path = r.Header.Get("Authorization"), r.URL.Path
		b, _ := io.ReadAll(r.Body)
		if err := json.Unmarshal(b, &got); err != nil {
			t.Errorf("request body %s: %v", b, err)
		}
		w.Header().Set("Content-Type", "application/json")
		io.WriteString(w, `{"id":"c1","model":"gpt-x-2025","choices":[{"index":0,"message":{"role":"assistant","content":"A short summary."},"finish_reason":"stop"}],"usage":{"prompt_tokens":120,"completion_tokens":9,"total_tokens":129}}`)
	}))
	defer srv.Close()
	p, err := openai.New(openai.Config{BaseURL: srv.URL + "/v1/", APIKey: "sk-test"})
	if err != nil {
		t.Fatal(err)
	}
	temp, max := 0.7, 100
	c, err := p.Complete(t.Context(), handler.Call{Model: "gpt-x", System: "Summarise.", Text: "The doc.",
		Parameters: handler.Parameters{Temperature: &temp, MaxTokens: &max}})
	if err != nil {
		t.Fatal(err)
	}
	want := handler.Completion{Text: "A short summary.", Model: "gpt-x-2025", InputTokens: 120, OutputTokens: 9, StopReason: "stop"}
	if c != want {
		t.Errorf("Complete = %+v, want %+v", c, want)
	}
	if path != "/v1/chat/completions" || auth != "Bearer sk-test" {
		t.Errorf("path %q, Authorization %q", path, auth)
	}
	msgs, _ := got["messages"].([]any)
	if got["model"] != "gpt-x" || got["temperature"] != 0.7 || got["max_tokens"] != 100.0 || len(msgs) != 2 {
		t.Errorf("request = %v", got)
	}
	if _, ok := got["top_p"]; ok {
		t.Errorf("unset top_p was sent: %v", got)
	}
	if p.Name() != "openai" {
		t.Errorf("Name = %q", p.Name())
	}
}

func TestNoRetries(t *testing.T) {
	tests := []struct {
		name     string
		status   int
		body     string
		wantType string
	}{
		{"rate limited", http.StatusTooManyRequests, `{"error":{"message":"Rate limit reached","type":"rate_limit_error"}}`, "rate_limit_error"},
		{"server error", http.StatusInternalServerError, `oops`, ""},
		{"overloaded", http.StatusServiceUnavailable, `{"error":{"message":"overloaded","code":503}}`, "503"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var n atomic.Int32
			srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
				n.Add(1)
				w.WriteHeader(tt.status)
				io.WriteString(w, tt.body)
			}))
			defer srv.Close()
			p, err := openai.New(openai.Config{BaseURL: srv.URL})
			if err != nil {
				t.Fatal(err)
			}
			_, err = p.Complete(t.Context(), handler.Call{Model: "m"})
			var apiErr *openai.APIError
			if !errors.As(err, &apiErr) || apiErr.StatusCode != tt.status || apiErr.Type != tt.wantType {
				t.Errorf("error = %#v, want an APIError with status %d and type %q", err, tt.status, tt.wantType)
			}
			if got := n.Load(); got != 1 {
				t.Errorf("%d requests, want exactly 1", got)
			}
		})
	}
}

// TestConnectionDropped drops the connection of the second call, on a
// keep-alive connection the first call opened: the case in which net/http
// replays requests it considers idempotent. The POST must not be replayed.
func TestConnectionDropped(t *testing.T) {
	var n atomic.Int32
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if n.Add(1) == 1 {
			io.WriteString(w, `{"choices":[{"message":{"content":"ok"}}]}`)
			return
		}
		io.Copy(io.Discard, r.Body)
		conn, _, err := w.(http.Hijacker).Hijack()
		if err == nil {
			conn.Close()
		}
	}))
	defer srv.Close()
	p, _ := openai.New(openai.Config{BaseURL: srv.URL})
	if _, err := p.Complete(t.Context(), handler.Call{Model: "m"}); err != nil {
		t.Fatal(err)
	}
	if _, err := p.Complete(t.Context(), handler.Call{Model: "m"}); err == nil {
		t.Fatal("no error for a dropped connection")
	}
	if got := n.Load(); got != 2 {
		t.Errorf("%d requests for 2 calls, want exactly 2", got)
	}
}

func TestNewRejectsBadURL(t *testing.T) {
	for _, u := range []string{"", "api.openai.com/v1", "ftp://x/v1", "http://"} {
		if _, err := openai.New(openai.Config{BaseURL: u}); err == nil {
			t.Errorf("New(%q) accepted", u)
		}
	}
}

// TestNewRefusesKeyOverHTTP: a key is never sent in plaintext over the
// network; http:// stays usable without a key, and with one on this host.
func TestNewRefusesKeyOverHTTP(t *testing.T) {
	for _, tt := range []struct {
		url, key string
		ok       bool
	}{
		{"http://api.example.com/v1", "sk-secret", false},
		{"http://10.0.0.7:8080/v1", "sk-secret", false},
		{"http://127.0.0.1.example.com/v1", "sk-secret", false},
		{"http://api.example.com/v1", "", true},
		{"https://api.example.com/v1", "sk-secret", true},
		{"http://127.0.0.1:11434/v1", "sk-secret", true},
		{"http://[::1]:11434/v1", "sk-secret", true},
		{"http://localhost:11434/v1", "sk-secret", true},
	} {
		_, err := openai.New(openai.Config{BaseURL: tt.url, APIKey: tt.key})
		if (err == nil) != tt.ok {
			t.Errorf("New(%s, key %t) = %v, want ok %t", tt.url, tt.key != "", err, tt.ok)
		}
		if err != nil && strings.Contains(err.Error(), tt.key) {
			t.Errorf("New(%s): error %q shows the key", tt.url, err)
		}
	}
}
