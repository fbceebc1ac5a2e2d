package main

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/sqsonce/sqsonce/middleware/idempotency/driver"
)

// plainSealer "seals" by reversing, enough to store a result in the sealed
// form.
type plainSealer struct{}

func (plainSealer) Seal(_ context.Context, _ string, p []byte) ([]byte, error) {
	out := make([]byte, len(p))
	for i, b := range p {
		out[len(p)-1-i] = b
	}
	return out, nil
}

func (s plainSealer) Open(ctx context.Context, id string, p []byte) ([]byte, error) {
	return s.Seal(ctx, id, p)
}

// TestInspectSealed: inspect shows a sealed record's result as sealed, in
// its text and its JSON, and never its content.
func TestInspectSealed(t *testing.T) {
	env, store, _, _ := dynamoEnv(t, "orders")
	ctx := context.Background()
	id := "orders#" + strings.Repeat("a", 64)
	now := time.Now()
	rec := driver.Record{ID: id, Status: driver.StatusInProgress, ExpiresAt: now.Add(time.Hour), LeaseUntil: now.Add(time.Minute), Owner: "o"}
	if _, _, err := store.Acquire(ctx, rec, now, driver.Takeover); err != nil {
		t.Fatal(err)
	}
	data, err := driver.SealData(ctx, plainSealer{}, id, []byte(`"result-text"`))
	if err != nil {
		t.Fatal(err)
	}
	rec.Status, rec.Data = driver.StatusCompleted, data
	if _, err := store.Complete(ctx, rec); err != nil {
		t.Fatal(err)
	}
	if v := inspectJSON(t, env, exitOK, "--id", id); !v.Sealed || v.State != stateCompleted {
		t.Errorf("inspect --json: %+v, want sealed and completed", v)
	}
	text := cli(t, env, "inspect", "--id", id).want(t, exitOK).stdout
	if !strings.Contains(text, "data         sealed: ") || strings.Contains(text, "txet-tluser") {
		t.Errorf("inspect's text:\n%s", text)
	}
}
