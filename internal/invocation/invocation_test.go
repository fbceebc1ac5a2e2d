package invocation

import (
	"context"
	"testing"
	"time"
)

func TestDeadline(t *testing.T) {
	if _, ok := Deadline(context.Background()); ok {
		t.Error("a context without an invocation deadline reported one")
	}
	d := time.Unix(1000, 0)
	ctx, cancel := context.WithTimeout(WithDeadline(context.Background(), d), time.Second)
	defer cancel()
	if got, ok := Deadline(ctx); !ok || !got.Equal(d) {
		t.Errorf("Deadline = %v, %v; want %v, true", got, ok, d)
	}
}
