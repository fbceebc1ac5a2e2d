package ptinterop_test

import (
	"crypto/rand"
	"errors"
	"slices"
	"testing"

	"github.com/aws/aws-lambda-go/events"

	ptinterop "github.com/sqsonce/sqsonce/internal/testenv/powertools"
	"github.com/sqsonce/sqsonce/middleware/idempotency"
)

// emptyPayloads are validated payloads that select nothing a key could be:
// Powertools TypeScript hashes JSON.stringify of the selection whatever it
// is (getHashedPayload; only the key has a missing rule), so each is a
// payload like any other, on both sides.
var emptyPayloads = []struct {
	name    string
	payload any // the body's payload member; nil leaves it out
}{
	{"absent (null)", nil},
	{"null", nullPayload{}},
	{"empty string", ""},
	{"empty array", []any{}},
	{"empty object", map[string]any{}},
	{"array of nulls", []any{nil, nil}},
	{"object of nulls", map[string]any{"a": nil}},
}

// nullPayload marshals as null: a payload member present with null.
type nullPayload struct{}

func (nullPayload) MarshalJSON() ([]byte, error) { return []byte("null"), nil }

// TestEmptyPayload: a validated payload that is null, "", [] or {} (or
// holds only nulls) is hashed as Powertools hashes it: a record either
// runtime writes replays on the other, and another payload is a mismatch
// on both.
func TestEmptyPayload(t *testing.T) { testEmptyPayload(t, newTable(t)) }

func testEmptyPayload(t *testing.T, tb table) {
	withPath := func(r *ptinterop.Request) { r.PayloadValidationJMESPath = validationPath }
	for _, p := range emptyPayloads {
		t.Run(p.name, func(t *testing.T) {
			t.Run("powertools writes", func(t *testing.T) {
				key := "k-" + rand.Text()
				rep := powertools(t, tb, withPath, message(key, p.payload, `"powertools"`))
				if len(rep.Ran) != 1 || rep.Events[0].Records[0].Status != "success" {
					t.Fatalf("powertools: %+v", rep)
				}
				s := newSqsonce(t, tb, withValidation)
				same, diff := message(key, p.payload, `"sqsonce"`), message(key, "other", `"sqsonce"`)
				resp := s.run(t, same, diff)
				if r := s.result(same.MessageId); r.err != nil || !sameJSON(t, r.val, `"powertools"`) {
					t.Errorf("sqsonce, the same payload: %#v, %v; want Powertools' result replayed", r.val, r.err)
				}
				if err := s.result(diff.MessageId).err; !errors.Is(err, idempotency.ErrPayloadMismatch) {
					t.Errorf("sqsonce, another payload: %v, want ErrPayloadMismatch", err)
				}
				if !slices.Equal(failed(resp.BatchItemFailures), []string{diff.MessageId}) {
					t.Errorf("failures %v, want only the other payload's %s", resp.BatchItemFailures, diff.MessageId)
				}
				if s.didRun(same.MessageId) || s.didRun(diff.MessageId) {
					t.Error("sqsonce ran an operation")
				}
			})
			t.Run("sqsonce writes", func(t *testing.T) {
				key := "k-" + rand.Text()
				s := newSqsonce(t, tb, withValidation)
				first := message(key, p.payload, `"sqsonce"`)
				if resp := s.run(t, first); len(resp.BatchItemFailures) != 0 || !s.didRun(first.MessageId) {
					t.Fatalf("sqsonce: failures %v, error %v; want the operation run", resp.BatchItemFailures, s.result(first.MessageId).err)
				}
				same, diff := message(key, p.payload, `"powertools"`), message(key, "other", `"powertools"`)
				rep := powertools(t, tb, func(r *ptinterop.Request) {
					withPath(r)
					r.Events = []events.SQSEvent{{Records: []events.SQSMessage{same}}, {Records: []events.SQSMessage{diff}}}
				})
				if len(rep.Ran) != 0 {
					t.Errorf("Powertools ran %v", rep.Ran)
				}
				if r := rep.Events[0].Records[0]; r.Status != "success" || string(r.Value) != `"sqsonce"` {
					t.Errorf("Powertools, the same payload: %+v, want sqsonce's result replayed", r)
				}
				if r := rep.Events[1].Records[0]; r.Status != "fail" || r.Error != "IdempotencyValidationError" {
					t.Errorf("Powertools, another payload: %+v, want IdempotencyValidationError", r)
				}
			})
		})
	}
}
