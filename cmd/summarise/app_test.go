package main

import (
	"bytes"
	"context"
	"errors"
	"io"
	"log/slog"
	"strings"
	"testing"
	"time"

	"github.com/aws/aws-lambda-go/lambdacontext"

	"github.com/sqsonce/sqsonce/middleware/batch"
)

// TestMinRemaining checks that SQSONCE_MIN_REMAINING reaches the batch
// handler: a record starts only while the margin is left before the
// invocation's deadline, and an invocation that starts with less logs a
// warning.
func TestMinRemaining(t *testing.T) {
	tests := []struct {
		name   string
		env    map[string]string
		left   time.Duration // before the invocation's deadline
		starts bool
	}{
		{"default 90s, 3m left", nil, 3 * time.Minute, true},
		{"default 90s, 60s left", nil, time.Minute, false},
		{"10s, 60s left", map[string]string{envMinRemaining: "10s"}, time.Minute, true},
		{"10s, 5s left", map[string]string{envMinRemaining: "10s"}, 5 * time.Second, false},
		{"0: until the deadline, 1s left", map[string]string{envMinRemaining: "0"}, time.Second, true},
	}
	ev := loadFixture(t, "duplicate-delivery.json")
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			c, err := loadConfig(localEnv(tt.env), "", "")
			if err != nil {
				t.Fatal(err)
			}
			var logs bytes.Buffer
			a, err := build(t.Context(), c, outputs{Logger: slog.New(slog.NewTextHandler(&logs, nil)), Metrics: io.Discard})
			if err != nil {
				t.Fatal(err)
			}
			defer a.close()
			ctx, cancel := context.WithTimeout(lambdacontext.NewContext(t.Context(), &lambdacontext.LambdaContext{AwsRequestID: "req-4471"}), tt.left)
			defer cancel()
			resp, err := a.handle(ctx, ev)
			// The event's only record not started fails the batch.
			if full := errors.As(err, new(*batch.FullBatchFailureError)); full == tt.starts || (tt.starts && err != nil) {
				t.Fatalf("batch error: %v", err)
			}
			wantFailed := []string{ev.Records[0].MessageId}
			wantCalls := 0
			if tt.starts {
				wantFailed, wantCalls = []string{}, 1
			}
			if got := failed(resp); strings.Join(got, ",") != strings.Join(wantFailed, ",") {
				t.Errorf("failed %v, want %v", got, wantFailed)
			}
			if n := a.calls.Len(); n != wantCalls {
				t.Errorf("provider calls %d, want %d", n, wantCalls)
			}
			if warned := strings.Contains(logs.String(), "less time than "+envMinRemaining); warned == tt.starts {
				t.Errorf("warning logged: %v, want %v; logs:\n%s", warned, !tt.starts, logs.String())
			} else if warned && !strings.Contains(logs.String(), "request_id=req-4471") {
				t.Errorf("the warning names no request id; logs:\n%s", logs.String())
			}
		})
	}
}
