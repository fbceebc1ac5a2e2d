package rie_test

import (
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"sort"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/sqsonce/sqsonce/internal/testenv/rie"
	"github.com/sqsonce/sqsonce/internal/testenv/testproc"
)

// echoed is testdata/echo's response.
type echoed struct {
	RequestID      string `json:"request_id"`
	TenantID       string `json:"tenant_id"`
	MaxConcurrency int    `json:"max_concurrency"`
	PID            int    `json:"pid"`
	UID            int    `json:"uid"`
	StartMS        int64  `json:"start_ms"`
	EndMS          int64  `json:"end_ms"`
}

// buildEcho builds testdata/echo for the host, as Lambda runs Go.
func buildEcho(t *testing.T) string {
	t.Helper()
	bin := filepath.Join(t.TempDir(), "bootstrap")
	cmd := exec.Command("go", "build", "-tags", "lambda.norpc", "-o", bin, "./testdata/echo")
	cmd.Env = append(os.Environ(), "CGO_ENABLED=0")
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("go build: %v\n%s", err, out)
	}
	return bin
}

func findRIE(t *testing.T) string {
	t.Helper()
	path, err := rie.Find()
	if err != nil {
		testproc.Unavailable(t, "rie", err, rie.Install)
	}
	return path
}

// maxOverlap returns the most of the [start, end] intervals that hold one
// moment.
func maxOverlap(es []echoed) int {
	type edge struct {
		at    int64
		delta int
	}
	var edges []edge
	for _, e := range es {
		edges = append(edges, edge{e.StartMS, 1}, edge{e.EndMS, -1})
	}
	sort.Slice(edges, func(i, j int) bool {
		if edges[i].at != edges[j].at {
			return edges[i].at < edges[j].at
		}
		return edges[i].delta < edges[j].delta // an end before a start at the same ms
	})
	n, most := 0, 0
	for _, e := range edges {
		n += e.delta
		most = max(most, n)
	}
	return most
}

// TestManaged runs testdata/echo under the emulator in Lambda Managed
// Instances mode at concurrency 4: four invocations run at once in one
// process, as uid 993; a fifth sent meanwhile is refused with
// Runtime.Unavailable, not queued; the tenant header is not passed on.
func TestManaged(t *testing.T) {
	if err := rie.CanStartManaged(); err != nil {
		testproc.Unavailable(t, "rie", err, "run the tests as root on Linux, with unshare(1) and mount(8)")
	}
	const n = 4
	m, err := rie.StartManaged(rie.ManagedConfig{
		Config:         rie.Config{RIE: findRIE(t), Bootstrap: buildEcho(t), Timeout: 10 * time.Second},
		MaxConcurrency: n,
	})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if t.Failed() {
			t.Logf("emulator output:\n%s", m.Output())
		}
		if err := m.Close(); err != nil {
			t.Error(err)
		}
	})
	ctx := t.Context()

	type result struct {
		e   echoed
		err error
	}
	burst := func(sleep time.Duration, k int, gap time.Duration) []result {
		out := make([]result, k)
		var wg sync.WaitGroup
		for i := range k {
			if i == n && gap > 0 {
				time.Sleep(gap) // the extra ones, once the first n run
			}
			wg.Go(func() {
				body, err := m.Call(ctx, []byte(fmt.Sprintf(`{"sleep_ms":%d}`, sleep.Milliseconds())))
				if err == nil {
					err = json.Unmarshal(body, &out[i].e)
				}
				out[i].err = err
			})
		}
		wg.Wait()
		return out
	}
	// The workers reach /next one by one after the init: wait until a
	// burst of n finds them all idle.
	ready := false
	for range 50 {
		ok := true
		for _, r := range burst(100*time.Millisecond, n, 0) {
			ok = ok && r.err == nil
		}
		if ready = ok; ready {
			break
		}
		time.Sleep(100 * time.Millisecond)
	}
	if !ready {
		t.Fatalf("%d concurrent invocations never all succeeded", n)
	}

	// A worker goes back to /next only after its answer is sent: a burst
	// right after another may find one not yet idle, and see two refused.
	// Such an attempt is measured again (at most 5), after a pause.
	var ok []echoed
	var refused []error
	for attempt := range 5 {
		if attempt > 0 {
			time.Sleep(500 * time.Millisecond)
		}
		ok, refused = nil, nil
		for _, r := range burst(time.Second, n+1, 300*time.Millisecond) {
			switch {
			case r.err == nil:
				ok = append(ok, r.e)
			case strings.Contains(r.err.Error(), "status 400") && strings.Contains(r.err.Error(), "Runtime.Unavailable"):
				refused = append(refused, r.err)
			default:
				t.Errorf("invocation: %v", r.err)
			}
		}
		if len(ok) == n || len(ok)+len(refused) != n+1 {
			break
		}
	}
	if len(ok) != n || len(refused) != 1 {
		t.Fatalf("%d answered, %d refused (%v); want %d and 1", len(ok), len(refused), refused, n)
	}
	ids := map[string]bool{}
	for _, e := range ok {
		ids[e.RequestID] = true
		if e.PID != ok[0].PID || e.UID != rie.ManagedUID || e.MaxConcurrency != n {
			t.Errorf("invocation %+v, want pid %d, uid %d, max concurrency %d", e, ok[0].PID, rie.ManagedUID, n)
		}
	}
	if len(ids) != n {
		t.Errorf("request ids %v, want %d distinct", ids, n)
	}
	if got := maxOverlap(ok); got != n {
		t.Errorf("at most %d invocations ran at once, want %d: %+v", got, n, ok)
	}

	// No tenant in this mode. The burst's workers go back to /next only
	// after their answers are sent: an invocation right after it may find
	// none idle, and is sent again after a pause (at most 20 times).
	var body []byte
	for range 20 {
		body, err = m.CallTenant(ctx, "tenant-a", []byte(`{}`))
		if err == nil || !strings.Contains(err.Error(), "Runtime.Unavailable") {
			break
		}
		time.Sleep(100 * time.Millisecond)
	}
	var e echoed
	if err == nil {
		err = json.Unmarshal(body, &e)
	}
	if err != nil || e.TenantID != "" {
		t.Errorf("tenant in managed instances mode: %+v, %v; want none", e, err)
	}
}

// TestTenant: in classic mode the emulator passes X-Amz-Tenant-Id to the
// runtime, which aws-lambda-go puts in lambdacontext's TenantID; an
// invocation without it has none.
func TestTenant(t *testing.T) {
	path := findRIE(t)
	fn, err := rie.Start(rie.Config{RIE: path, Bootstrap: buildEcho(t), Timeout: 10 * time.Second})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if t.Failed() {
			t.Logf("emulator output:\n%s", fn.Output())
		}
		if err := fn.Close(); err != nil {
			t.Error(err)
		}
	})
	for _, tenant := range []string{"tenant-a", "tenant-b", ""} {
		var body []byte
		var err error
		if tenant == "" {
			body, err = fn.Call(t.Context(), []byte(`{}`))
		} else {
			body, err = fn.CallTenant(t.Context(), tenant, []byte(`{}`))
		}
		var e echoed
		if err == nil {
			err = json.Unmarshal(body, &e)
		}
		if err != nil || e.TenantID != tenant || e.MaxConcurrency != 1 {
			t.Errorf("tenant %q: the function saw %+v, %v", tenant, e, err)
		}
	}
	// A function error comes back as one.
	var fe *rie.FunctionError
	if _, err := fn.CallTenant(t.Context(), "tenant-a", []byte(`{"sleep_ms":"x"}`)); !errors.As(err, &fe) {
		t.Errorf("bad event: %v, want a *FunctionError", err)
	}
}

// TestInvokeTenant: InvokeTenant reads the partial batch response.
func TestInvokeTenant(t *testing.T) {
	fn := start(t, rie.Config{Env: map[string]string{"FAIL_BODY": "bad"}, Timeout: 5 * time.Second})
	resp, err := fn.InvokeTenant(t.Context(), "tenant-a", event("ok", "bad"))
	if err != nil || len(resp.BatchItemFailures) != 1 || resp.BatchItemFailures[0].ItemIdentifier != "m1" {
		t.Errorf("response %+v, %v; want m1 failed", resp, err)
	}
}
