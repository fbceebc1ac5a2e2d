package handler_test

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/sqsonce/sqsonce/handler"
)

func TestStub(t *testing.T) {
	c := handler.Call{Model: "m", System: "two words", Text: "one two three"}
	a, err := handler.Stub{}.Complete(t.Context(), c)
	if err != nil {
		t.Fatal(err)
	}
	b, _ := handler.Stub{}.Complete(t.Context(), c)
	if a != b {
		t.Errorf("stub not deterministic: %+v vs %+v", a, b)
	}
	want := handler.Completion{Text: "[stub summary] one two three", Model: "m", InputTokens: 5, OutputTokens: 3, StopReason: "end_turn"}
	if a != want {
		t.Errorf("Complete = %+v, want %+v", a, want)
	}
	two := 2
	c.Parameters.MaxTokens = &two
	if got, _ := (handler.Stub{}).Complete(t.Context(), c); got.OutputTokens != 2 {
		t.Errorf("max_tokens 2: %+v", got)
	}
}

func TestStubDelayHonoursContext(t *testing.T) {
	ctx, cancel := context.WithTimeout(t.Context(), 10*time.Millisecond)
	defer cancel()
	_, err := handler.Stub{Delay: time.Hour}.Complete(ctx, handler.Call{})
	if !errors.Is(err, context.DeadlineExceeded) {
		t.Errorf("error = %v, want the context's deadline", err)
	}
}
