package concurrency

import (
	"fmt"
	"path/filepath"
	"testing"

	"github.com/aws/aws-lambda-go/events"

	"github.com/sqsonce/sqsonce/internal/testenv/rie"
	"github.com/sqsonce/sqsonce/internal/testenv/testproc"
)

// TestTenantsUnderRIE: the reference app under the Lambda Runtime Interface
// Emulator's classic mode, which hands an invoke's X-Amz-Tenant-Id to the
// runtime: one tenant and one key twice make one provider call; another
// tenant with that key makes its own.
func TestTenantsUnderRIE(t *testing.T) {
	path, err := rie.Find()
	if err != nil {
		testproc.Unavailable(t, "rie", err, rie.Install)
	}
	logPath := filepath.Join(t.TempDir(), "requests.jsonl")
	fn := rie.StartTest(t, rie.Config{RIE: path, Bootstrap: bootstrap(t), Env: env(t, "memory", logPath, 0),
		Timeout: timeout, FunctionName: "summarise"})
	for i, tc := range []struct {
		tenant string
		calls  int // provider calls after this invocation
	}{
		{"tenant-a", 1},
		{"tenant-a", 1},
		{"tenant-b", 2},
		{"tenant-b", 2},
	} {
		ev := events.SQSEvent{Records: []events.SQSMessage{record(fmt.Sprintf("m-%d", i), "sum-4471-9-rie-tenant")}}
		resp, err := fn.InvokeTenant(t.Context(), tc.tenant, ev)
		if err != nil || len(resp.BatchItemFailures) != 0 {
			t.Fatalf("invocation %d (%s): %+v, %v", i, tc.tenant, resp, err)
		}
		if got := len(requestLog(t, logPath)); got != tc.calls {
			t.Errorf("after invocation %d (%s): %d provider calls, want %d", i, tc.tenant, got, tc.calls)
		}
	}
}
