package handler_test

import (
	"context"
	"log/slog"
	"strconv"
	"strings"
	"testing"

	"github.com/aws/aws-lambda-go/events"

	"github.com/sqsonce/sqsonce/handler"
	"github.com/sqsonce/sqsonce/middleware/idempotency"
	"github.com/sqsonce/sqsonce/middleware/idempotency/memstore"
)

// BenchmarkWiring compares the app's two wirings per record: WrapPayload
// with Key and WorkKey, which parses the body in WorkKey (once for a
// producer key, twice without one: the key's fallback and the payload) and
// again in Handle when the work runs; and WrapJSON with Body, which
// decodes it once. "replay" delivers a completed request again (the key
// and payload are made, the stored result returned); "run" sends a new
// producer key each time (the stub provider answers, from a local file).
func BenchmarkWiring(b *testing.B) {
	h, err := handler.New(handler.Config{Documents: docs, Provider: handler.LogRequests(handler.Stub{}, discardLog{}, nil), Model: "m"})
	if err != nil {
		b.Fatal(err)
	}
	guard := func() *idempotency.Guard {
		g, err := idempotency.New(idempotency.Config{Store: memstore.New(), Namespace: "summarise",
			Logger: slog.New(slog.DiscardHandler)})
		if err != nil {
			b.Fatal(err)
		}
		return g
	}
	workOnly := `{"document":{"id":"4471","version":"9"},"model":"m1","prompt_version":"v1","parameters":{"temperature":0.7},"request_id":"r-1"}`
	wirings := []struct {
		name string
		new  func() func(context.Context, events.SQSMessage) (handler.Summary, error)
	}{
		{"Wrap", func() func(context.Context, events.SQSMessage) (handler.Summary, error) {
			return idempotency.Wrap(guard(), handler.Key(), h.Handle, idempotency.WithPayload(idempotency.SelectorFunc(handler.WorkKey)))
		}},
		{"WrapJSON", func() func(context.Context, events.SQSMessage) (handler.Summary, error) {
			return idempotency.WrapJSON(guard(), handler.RequestKey(), h.HandleRequest, handler.RequestOptions()...)
		}},
	}
	for _, c := range []struct{ name, body string }{{"replay/producer-key", typedReq}, {"replay/work-key", workOnly}} {
		for _, w := range wirings {
			b.Run(c.name+"/"+w.name, func(b *testing.B) {
				fn, m := w.new(), events.SQSMessage{MessageId: "m-1", Body: c.body}
				if _, err := fn(b.Context(), m); err != nil {
					b.Fatal(err)
				}
				b.ReportAllocs()
				for b.Loop() {
					if _, err := fn(b.Context(), m); err != nil {
						b.Fatal(err)
					}
				}
			})
		}
	}
	for _, w := range wirings {
		b.Run("run/"+w.name, func(b *testing.B) {
			fn := w.new()
			b.ReportAllocs()
			i := 0
			for b.Loop() {
				i++
				body := strings.Replace(typedReq, `"sum-4471-9"`, `"sum-`+strconv.Itoa(i)+`"`, 1)
				if _, err := fn(b.Context(), events.SQSMessage{MessageId: "m-1", Body: body}); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}

// discardLog is a request log that keeps nothing.
type discardLog struct{}

func (discardLog) Append(context.Context, handler.CallRecord) error { return nil }
