package handler_test

import (
	"encoding/json"
	"errors"
	"testing"

	"github.com/aws/aws-lambda-go/events"
	"github.com/gowebpki/jcs"

	"github.com/sqsonce/sqsonce/handler"
	"github.com/sqsonce/sqsonce/middleware/idempotency"
	"github.com/sqsonce/sqsonce/middleware/idempotency/memstore"
)

func msg(id, body string) events.SQSMessage {
	return events.SQSMessage{MessageId: id, Body: body}
}

const base = `{"document":{"id":"4471","version":"9"},"model":"m1","prompt_version":"v1","parameters":{"temperature":0.7,"max_tokens":200}}`

// spelled is the native format's material for a key: the canonical JSON
// (RFC 8785) of its selector and value, which its record id hashes.
func spelled(k idempotency.Selection, err error) ([]byte, error) {
	if err != nil {
		return nil, err
	}
	doc, err := json.Marshal(struct {
		Selector string          `json:"selector"`
		Value    json.RawMessage `json:"value"`
	}{k.Selector, k.Value})
	if err != nil {
		return nil, err
	}
	return jcs.Transform(doc)
}

func TestWorkKeySameWork(t *testing.T) {
	want, err := spelled(handler.WorkKey(msg("a", base)))
	if err != nil {
		t.Fatal(err)
	}
	tests := []struct{ name, body string }{
		{"temperature 0.70", `{"document":{"id":"4471","version":"9"},"model":"m1","prompt_version":"v1","parameters":{"temperature":0.70,"max_tokens":200}}`},
		{"temperature 7e-1", `{"document":{"id":"4471","version":"9"},"model":"m1","prompt_version":"v1","parameters":{"temperature":7e-1,"max_tokens":200}}`},
		{"temperature 0.7000E0", `{"document":{"id":"4471","version":"9"},"model":"m1","prompt_version":"v1","parameters":{"temperature":0.7000E0,"max_tokens":200}}`},
		{"field order and whitespace", "{ \"prompt_version\" : \"v1\",\n\t\"parameters\": {\"max_tokens\": 200, \"temperature\": 0.7},\n \"model\":\"m1\", \"document\": {\"version\":\"9\", \"id\":\"4471\"} }"},
		{"version and id as numbers", `{"document":{"id":4471,"version":9},"model":"m1","prompt_version":"v1","parameters":{"temperature":0.7,"max_tokens":200}}`},
		{"request_id, sent_at, trace_id", `{"request_id":"r-2","sent_at":"2025-01-02T03:04:05Z","trace_id":"1-abc","document":{"id":"4471","version":"9"},"model":"m1","prompt_version":"v1","parameters":{"temperature":0.7,"max_tokens":200}}`},
		{"S3 location", `{"document":{"id":"4471","version":"9","bucket":"b","key":"docs/4471.txt","version_id":"xyz"},"model":"m1","prompt_version":"v1","parameters":{"temperature":0.7,"max_tokens":200}}`},
		{"producer key present", `{"idempotency_key":"k-1","document":{"id":"4471","version":"9"},"model":"m1","prompt_version":"v1","parameters":{"temperature":0.7,"max_tokens":200}}`},
		{"unknown top-level field", `{"x_debug":true,"document":{"id":"4471","version":"9"},"model":"m1","prompt_version":"v1","parameters":{"temperature":0.7,"max_tokens":200}}`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := spelled(handler.WorkKey(msg("b", tt.body)))
			if err != nil {
				t.Fatal(err)
			}
			if string(got) != string(want) {
				t.Errorf("key material\n got %s\nwant %s", got, want)
			}
		})
	}
}

func TestWorkKeyOtherWork(t *testing.T) {
	want, err := spelled(handler.WorkKey(msg("a", base)))
	if err != nil {
		t.Fatal(err)
	}
	tests := []struct{ name, body string }{
		{"document id", `{"document":{"id":"4472","version":"9"},"model":"m1","prompt_version":"v1","parameters":{"temperature":0.7,"max_tokens":200}}`},
		{"document version", `{"document":{"id":"4471","version":"10"},"model":"m1","prompt_version":"v1","parameters":{"temperature":0.7,"max_tokens":200}}`},
		{"model", `{"document":{"id":"4471","version":"9"},"model":"m2","prompt_version":"v1","parameters":{"temperature":0.7,"max_tokens":200}}`},
		{"model omitted", `{"document":{"id":"4471","version":"9"},"prompt_version":"v1","parameters":{"temperature":0.7,"max_tokens":200}}`},
		{"prompt version", `{"document":{"id":"4471","version":"9"},"model":"m1","prompt_version":"v2","parameters":{"temperature":0.7,"max_tokens":200}}`},
		{"temperature", `{"document":{"id":"4471","version":"9"},"model":"m1","prompt_version":"v1","parameters":{"temperature":0.71,"max_tokens":200}}`},
		{"temperature omitted", `{"document":{"id":"4471","version":"9"},"model":"m1","prompt_version":"v1","parameters":{"max_tokens":200}}`},
		{"max_tokens", `{"document":{"id":"4471","version":"9"},"model":"m1","prompt_version":"v1","parameters":{"temperature":0.7,"max_tokens":201}}`},
		{"stop sequences", `{"document":{"id":"4471","version":"9"},"model":"m1","prompt_version":"v1","parameters":{"temperature":0.7,"max_tokens":200,"stop_sequences":["END"]}}`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := spelled(handler.WorkKey(msg("b", tt.body)))
			if err != nil {
				t.Fatal(err)
			}
			if string(got) == string(want) {
				t.Errorf("key material %s is the same for different work", got)
			}
		})
	}
}

func TestWorkKeyEmptyParameters(t *testing.T) {
	a, err := spelled(handler.WorkKey(msg("a", `{"document":{"id":"1","version":"1"},"prompt_version":"v1"}`)))
	if err != nil {
		t.Fatal(err)
	}
	for _, body := range []string{
		`{"document":{"id":"1","version":"1"},"prompt_version":"v1","parameters":{}}`,
		`{"document":{"id":"1","version":"1"},"prompt_version":"v1","parameters":{"stop_sequences":[]}}`,
	} {
		b, err := spelled(handler.WorkKey(msg("b", body)))
		if err != nil {
			t.Fatal(err)
		}
		if string(a) != string(b) {
			t.Errorf("%s: key material %s, want %s", body, b, a)
		}
	}
}

func TestWorkKeyMaterial(t *testing.T) {
	got, err := spelled(handler.WorkKey(msg("a", base)))
	if err != nil {
		t.Fatal(err)
	}
	want := `{"selector":"summarise work","value":{"document_id":"4471","document_version":"9","model":"m1","parameters":{"max_tokens":200,"temperature":0.7},"prompt_version":"v1"}}`
	if string(got) != want {
		t.Errorf("material\n got %s\nwant %s", got, want)
	}
}

func TestKey(t *testing.T) {
	key := handler.Key()
	t.Run("producer key wins", func(t *testing.T) {
		a, err := spelled(idempotency.Select(key, msg("1", `{"idempotency_key":"k-1","document":{"id":"1","version":"1"},"prompt_version":"v1"}`)))
		if err != nil {
			t.Fatal(err)
		}
		b, err := spelled(idempotency.Select(key, msg("2", `{"idempotency_key":"k-1","document":{"id":"2","version":"1"},"prompt_version":"v1"}`)))
		if err != nil {
			t.Fatal(err)
		}
		if want := `{"selector":"body [\"idempotency_key\"]","value":"k-1"}`; string(a) != string(b) || string(a) != want {
			t.Errorf("producer keys: %s, %s; want both %s", a, b, want)
		}
	})
	t.Run("canonical subset without producer key", func(t *testing.T) {
		got, err := spelled(idempotency.Select(key, msg("1", base)))
		if err != nil {
			t.Fatal(err)
		}
		want, _ := spelled(handler.WorkKey(msg("1", base)))
		if string(got) != string(want) {
			t.Errorf("got %s, want %s", got, want)
		}
	})
	tests := []struct {
		name    string
		body    string
		noKey   bool
		invalid bool
	}{
		{"missing document", `{"prompt_version":"v1","request_id":"r"}`, true, false},
		{"missing document id", `{"document":{"version":"9"},"prompt_version":"v1"}`, true, false},
		{"empty producer key, no document", `{"idempotency_key":"","prompt_version":"v1"}`, true, false},
		{"null body", `null`, true, false},
		{"malformed JSON", `{"document":`, false, false},
		{"body is an array", `[1,2]`, false, false},
		{"unknown parameter", `{"document":{"id":"1","version":"1"},"prompt_version":"v1","parameters":{"top_k":5}}`, false, true},
		{"temperature out of range", `{"document":{"id":"1","version":"1"},"prompt_version":"v1","parameters":{"temperature":3}}`, false, true},
		{"unknown prompt version", `{"document":{"id":"1","version":"1"},"prompt_version":"v9"}`, false, true},
		{"path in document id", `{"document":{"id":"../etc","version":"1"},"prompt_version":"v1"}`, false, true},
		{"fractional version", `{"document":{"id":"1","version":9.5},"prompt_version":"v1"}`, false, true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := idempotency.Select(key, msg("m-1", tt.body))
			if err == nil {
				t.Fatal("no error")
			}
			if got := errors.Is(err, idempotency.ErrNoKey); got != tt.noKey {
				t.Errorf("errors.Is(%v, ErrNoKey) = %v, want %v", err, got, tt.noKey)
			}
			if got := errors.Is(err, handler.ErrInvalidRequest); got != tt.invalid {
				t.Errorf("errors.Is(%v, ErrInvalidRequest) = %v, want %v", err, got, tt.invalid)
			}
			var ke *idempotency.KeyError
			if !errors.As(err, &ke) {
				t.Errorf("%v is not a *KeyError", err)
			}
		})
	}
}

// TestForgedProducerKey sends, after a request without a producer key, a
// message whose idempotency_key holds that request's canonical subset (or
// its request shape). Its key must not give the request's record id, and
// through the app it fails on its own (the schema wants a string key)
// without touching the request's record: the request's redelivery still
// replays its own result.
func TestForgedProducerKey(t *testing.T) {
	const real = `{"document":{"id":"4471","version":"9"},"model":"m1","prompt_version":"v1","parameters":{"temperature":0.7}}`
	g, err := idempotency.New(idempotency.Config{Store: memstore.New(), Namespace: "summarise"})
	if err != nil {
		t.Fatal(err)
	}
	realKey, err := handler.WorkKey(msg("m-1", real))
	if err != nil {
		t.Fatal(err)
	}
	realID, err := g.ID(realKey)
	if err != nil {
		t.Fatal(err)
	}
	for _, forgedKey := range []string{string(realKey.Value), real} {
		t.Run(forgedKey, func(t *testing.T) {
			forged := `{"idempotency_key":` + forgedKey + `,"document":{"id":"4471","version":"9"},"model":"m1","prompt_version":"v1","parameters":{"temperature":0.7}}`
			k, err := idempotency.Select(handler.Key(), msg("m-2", forged))
			if err != nil {
				t.Fatal(err)
			}
			if id, err := g.ID(k); err != nil || id == realID {
				t.Fatalf("forged key %s gives record id %s, %v: the request's", k.Value, id, err)
			}
			a := newApp(t, handler.Stub{})
			first, err := a.handle(t.Context(), msg("m-1", real))
			if err != nil {
				t.Fatal(err)
			}
			if got, err := a.handle(t.Context(), msg("m-2", forged)); !errors.Is(err, handler.ErrInvalidRequest) || got == first {
				t.Errorf("forged message: %+v, %v; want ErrInvalidRequest, not the request's result", got, err)
			}
			again, err := a.handle(t.Context(), msg("m-1", real))
			if err != nil || again != first || a.calls.Len() != 1 {
				t.Errorf("the request's redelivery: %+v, %v (provider calls %d); want its own result replayed", again, err, a.calls.Len())
			}
		})
	}
}
