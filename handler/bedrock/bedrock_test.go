package bedrock_test

import (
	"context"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"sync/atomic"
	"testing"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/credentials"
	"github.com/aws/aws-sdk-go-v2/service/bedrockruntime"
	"github.com/sqsonce/sqsonce/handler"
	"github.com/sqsonce/sqsonce/handler/bedrock"
)

// testConfig is an aws.Config for a local endpoint with the SDK's default
// retry mode, as LoadDefaultConfig would give.
func testConfig(endpoint string) aws.Config {
	return aws.Config{
		Region:           "us-east-1",
		Credentials:      credentials.NewStaticCredentialsProvider("test", "test", ""),
		BaseEndpoint:     aws.String(endpoint),
		RetryMaxAttempts: 5, // as AWS_MAX_ATTEMPTS=5 would set
	}
}

func TestComplete(t *testing.T) {
	var got map[string]any
	var path string
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		path = r.URL.Path
		b, _ := io.ReadAll(r.Body)
		if err := json.Unmarshal(b, &got); err != nil {
			t.Errorf("request body %s: %v", b, err)
		}
		w.Header().Set("Content-Type", "application/json")
		io.WriteString(w, `{"output":{"message":{"role":"assistant","content":[{"text":"A short "},{"text":"summary."}]}},
			"stopReason":"end_turn","usage":{"inputTokens":120,"outputTokens":9,"totalTokens":129},"metrics":{"latencyMs":300}}`)
	}))
	defer srv.Close()
	p := bedrock.New(bedrock.NewClient(testConfig(srv.URL)))
	temp, max := 0.5, 300
	c, err := p.Complete(t.Context(), handler.Call{Model: "anthropic.claude-3-haiku-20240307-v1:0", System: "Summarise.", Text: "The doc.",
		Parameters: handler.Parameters{Temperature: &temp, MaxTokens: &max}})
	if err != nil {
		t.Fatal(err)
	}
	want := handler.Completion{Text: "A short summary.", Model: "anthropic.claude-3-haiku-20240307-v1:0", InputTokens: 120, OutputTokens: 9, StopReason: "end_turn"}
	if c != want {
		t.Errorf("Complete = %+v, want %+v", c, want)
	}
	if path != "/model/anthropic.claude-3-haiku-20240307-v1:0/converse" {
		t.Errorf("path = %q", path)
	}
	ic, _ := got["inferenceConfig"].(map[string]any)
	sys, _ := got["system"].([]any)
	if ic["temperature"] != 0.5 || ic["maxTokens"] != 300.0 || len(sys) != 1 {
		t.Errorf("request = %v", got)
	}
	if _, ok := ic["topP"]; ok {
		t.Errorf("unset topP sent: %v", ic)
	}
}

// TestNoRetries answers every request with an error the SDK's standard
// retryer retries (throttling, 5xx) and counts the requests: retries are
// off, so each call is exactly one request, even with RetryMaxAttempts set
// in the aws.Config.
func TestNoRetries(t *testing.T) {
	tests := []struct {
		name   string
		status int
		code   string
	}{
		{"throttled", http.StatusTooManyRequests, "ThrottlingException"},
		{"unavailable", http.StatusServiceUnavailable, "ServiceUnavailableException"},
		{"internal", http.StatusInternalServerError, "InternalServerException"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var n atomic.Int32
			srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
				n.Add(1)
				w.Header().Set("Content-Type", "application/json")
				w.Header().Set("X-Amzn-Errortype", tt.code)
				w.WriteHeader(tt.status)
				io.WriteString(w, `{"message":"try later"}`)
			}))
			defer srv.Close()
			p := bedrock.New(bedrock.NewClient(testConfig(srv.URL)))
			if _, err := p.Complete(t.Context(), handler.Call{Model: "m", Text: "x"}); err == nil {
				t.Fatal("no error")
			}
			if got := n.Load(); got != 1 {
				t.Errorf("%d requests, want exactly 1", got)
			}
		})
	}
	t.Run("default client retries (control)", func(t *testing.T) {
		var n atomic.Int32
		srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			n.Add(1)
			w.Header().Set("X-Amzn-Errortype", "InternalServerException")
			w.WriteHeader(http.StatusInternalServerError)
			io.WriteString(w, `{"message":"boom"}`)
		}))
		defer srv.Close()
		cfg := testConfig(srv.URL)
		cfg.RetryMaxAttempts = 2
		client := bedrockruntime.NewFromConfig(cfg)
		_, _ = bedrock.New(client).Complete(t.Context(), handler.Call{Model: "m", Text: "x"})
		if got := n.Load(); got < 2 {
			t.Errorf("a client without NoRetries made %d requests; the control expects retries", got)
		}
	})
}

type fakeAPI struct{ in *bedrockruntime.ConverseInput }

func (f *fakeAPI) Converse(_ context.Context, in *bedrockruntime.ConverseInput, _ ...func(*bedrockruntime.Options)) (*bedrockruntime.ConverseOutput, error) {
	f.in = in
	return &bedrockruntime.ConverseOutput{}, nil
}

func TestNoParameters(t *testing.T) {
	f := &fakeAPI{}
	if _, err := bedrock.New(f).Complete(t.Context(), handler.Call{Model: "m", Text: "x"}); err != nil {
		t.Fatal(err)
	}
	if f.in.InferenceConfig != nil || f.in.System != nil {
		t.Errorf("inference %+v, system %+v; want both unset", f.in.InferenceConfig, f.in.System)
	}
	if _, err := bedrock.New(f).Complete(t.Context(), handler.Call{Text: "x"}); err == nil {
		t.Error("no error without a model id")
	}
}
