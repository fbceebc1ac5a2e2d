package storetest

import (
	"context"
	"crypto/rand"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/sqsonce/sqsonce/middleware/idempotency"
	"github.com/sqsonce/sqsonce/middleware/idempotency/driver"
)

// The environment of a child process of StrictAcrossProcesses: its role
// ("strict" or "default"), the folder it reports in, the namespace and the
// key material of the call.
const (
	envRole = "SQSONCE_STORETEST_STRICT_ROLE"
	envDir  = "SQSONCE_STORETEST_STRICT_DIR"
	envNS   = "SQSONCE_STORETEST_STRICT_NAMESPACE"
	envKey  = "SQSONCE_STORETEST_STRICT_KEY"
)

// lambdaTimeout is Lambda's default function timeout: each call's context
// has this deadline.
const lambdaTimeout = 3 * time.Second

// StrictAcrossProcesses checks, through the store, that a strict claim
// whose lease lapsed is never run again by a default guard in another
// process: a rolling deploy that turns strict mode on, or the Strict option in
// one process and the plain guard in another. Each guard runs in its own
// OS process (the test binary run again, for this test only), with
// zero-value options ([idempotency.Config] with Store and Namespace, and
// Strict for one) and a context of Lambda's default 3 s deadline. The
// strict call's operation outlives its lease; a default call while the
// lease is live is in progress, told the strict lease's end; a default
// call after it must not run the operation (it is quarantined or in
// progress); the strict call then completes, and a later default call
// replays its result. The operation runs exactly once.
//
// open returns the store, and the environment (NAME=value) under which
// open, called again in a child process, returns a store on the same
// records; in a child, open reads that environment. Call
// StrictAcrossProcesses from a test function of its own, and nothing else
// in that function: the children run it again.
func StrictAcrossProcesses(t *testing.T, open func(t *testing.T) (driver.Store, []string)) {
	t.Helper()
	if role := os.Getenv(envRole); role != "" {
		store, _ := open(t)
		var (
			started func(time.Time)
			hold    io.Reader
		)
		if role == "strict" {
			started = func(deadline time.Time) { writeJSON(t, filepath.Join(os.Getenv(envDir), "strict.started"), deadline) }
			hold = os.Stdin // until the parent closes it
		}
		res := strictCall(store, os.Getenv(envNS), os.Getenv(envKey), role == "strict", started, hold)
		writeJSON(t, filepath.Join(os.Getenv(envDir), role+".json"), res)
		return
	}
	_, env := open(t)
	dir := t.TempDir()
	ns, material := callKey()
	env = append(append(os.Environ(), env...), envDir+"="+dir, envNS+"="+ns, envKey+"="+material)
	spawn := func(role string) (io.WriteCloser, *strings.Builder, <-chan error) {
		t.Helper()
		cmd := exec.Command(os.Args[0], "-test.run="+runPattern(t.Name()), "-test.count=1")
		cmd.Env = append(env, envRole+"="+role)
		out := &strings.Builder{}
		cmd.Stdout, cmd.Stderr = out, out
		stdin, err := cmd.StdinPipe()
		if err != nil {
			t.Fatal(err)
		}
		if err := cmd.Start(); err != nil {
			t.Fatalf("start the %s guard's process: %v", role, err)
		}
		done, exited := make(chan error, 1), make(chan struct{})
		go func() {
			done <- cmd.Wait()
			close(exited)
		}()
		t.Cleanup(func() {
			_ = cmd.Process.Kill()
			<-exited
		})
		return stdin, out, done
	}
	report := func(role string, out *strings.Builder, done <-chan error) callResult {
		t.Helper()
		select {
		case err := <-done:
			if err != nil {
				t.Fatalf("the %s guard's process: %v\n%s", role, err, out.String())
			}
		case <-time.After(time.Minute):
			t.Fatalf("the %s guard's process did not end within a minute\n%s", role, out.String())
		}
		var res callResult
		readJSON(t, filepath.Join(dir, role+".json"), &res)
		return res
	}
	startStrict := func() (time.Time, func() callResult) {
		stdin, out, done := spawn("strict")
		started := filepath.Join(dir, "strict.started")
		for limit := time.Now().Add(time.Minute); ; time.Sleep(10 * time.Millisecond) {
			if _, err := os.Stat(started); err == nil {
				break
			}
			select {
			case err := <-done:
				t.Fatalf("the strict guard's process ended before its operation started: %v\n%s", err, out.String())
			default:
			}
			if time.Now().After(limit) {
				t.Fatalf("the strict guard's operation did not start within a minute\n%s", out.String())
			}
		}
		var deadline time.Time
		readJSON(t, started, &deadline)
		return deadline, func() callResult {
			stdin.Close() // the operation returns
			return report("strict", out, done)
		}
	}
	callDefault := func() callResult {
		stdin, out, done := spawn("default")
		stdin.Close()
		res := report("default", out, done)
		_ = os.Remove(filepath.Join(dir, "default.json"))
		return res
	}
	checkStrictThenDefault(t, startStrict, callDefault)
}

// StrictAcrossGuards is [StrictAcrossProcesses] for a store whose records
// live in one process (package memstore): the two guards are made by two
// calls of [idempotency.New] in this process, so they share no call in
// progress.
func StrictAcrossGuards(t *testing.T, store driver.Store) {
	t.Helper()
	ns, material := callKey()
	startStrict := func() (time.Time, func() callResult) {
		started := make(chan time.Time, 1)
		hold, release := io.Pipe()
		out := make(chan callResult, 1)
		go func() {
			out <- strictCall(store, ns, material, true, func(d time.Time) { started <- d }, hold)
		}()
		select {
		case d := <-started:
			return d, func() callResult { release.Close(); return <-out }
		case res := <-out:
			t.Fatalf("the strict call ended before its operation started: %+v", res)
		case <-time.After(time.Minute):
			t.Fatal("the strict call's operation did not start within a minute")
		}
		return time.Time{}, nil
	}
	callDefault := func() callResult {
		return strictCall(store, ns, material, false, nil, nil)
	}
	checkStrictThenDefault(t, startStrict, callDefault)
}

// callKey is a namespace and key material of their own for one test.
func callKey() (ns, material string) {
	return "storetest-strict-" + strings.ToLower(rand.Text()[:10]), `"k-` + rand.Text() + `"`
}

// runPattern is the -test.run pattern that selects the test name alone.
func runPattern(name string) string {
	parts := strings.Split(name, "/")
	for i, p := range parts {
		parts[i] = "^" + regexp.QuoteMeta(p) + "$"
	}
	return strings.Join(parts, "/")
}

// callResult is what one guard's call did, as its process reports it.
type callResult struct {
	Ran         bool      `json:"ran"`         // the operation ran in this call
	Value       string    `json:"value"`       // the call's result
	Outcome     string    `json:"outcome"`     // the guard's outcome
	Err         string    `json:"err"`         // the call's error, "" for none
	InProgress  bool      `json:"in_progress"` // the error is ErrInProgress
	Quarantined bool      `json:"quarantined"` // the error is ErrQuarantined
	RetryAt     time.Time `json:"retry_at"`    // an *InProgressError's RetryAt
}

// strictCall makes one call of the key material with a guard of zero-value
// options (strict or not) on store, under a context of Lambda's default
// deadline. Its operation reports its start with the deadline, then waits
// until hold (when not nil) reaches its end, and returns "strict" or
// "default".
func strictCall(store driver.Store, ns, material string, strict bool, started func(deadline time.Time), hold io.Reader) callResult {
	var res callResult
	role := "default"
	if strict {
		role = "strict"
	}
	g, err := idempotency.New(idempotency.Config{Store: store, Namespace: ns, Strict: strict,
		OnOutcome: func(_ context.Context, ev idempotency.Report) { res.Outcome = string(ev.Outcome) }})
	if err != nil {
		res.Err = err.Error()
		return res
	}
	ctx, cancel := context.WithTimeout(context.Background(), lambdaTimeout)
	defer cancel()
	deadline, _ := ctx.Deadline()
	v, err := idempotency.Do(ctx, g, idempotency.Raw([]byte(material)), func(context.Context) (string, error) {
		res.Ran = true
		if started != nil {
			started(deadline)
		}
		if hold != nil {
			_, _ = io.Copy(io.Discard, hold) // outlives its context and its lease
		}
		return role, nil
	})
	res.Value = v
	if err != nil {
		res.Err = err.Error()
		res.InProgress = errors.Is(err, idempotency.ErrInProgress)
		res.Quarantined = errors.Is(err, idempotency.ErrQuarantined)
		if ip, ok := errors.AsType[*idempotency.InProgressError](err); ok {
			res.RetryAt = ip.RetryAt()
		}
	}
	return res
}

// checkStrictThenDefault is the scenario of StrictAcrossProcesses, with
// the strict call started by startStrict (which returns its deadline and
// a function that lets its operation return and waits for its result) and
// default calls made by callDefault.
func checkStrictThenDefault(t *testing.T, startStrict func() (time.Time, func() callResult), callDefault func() callResult) {
	t.Helper()
	runs := 0
	count := func(res callResult) callResult {
		if res.Ran {
			runs++
		}
		return res
	}
	deadline, finish := startStrict()
	leaseEnd := deadline.Add(defaultSkewMargin)

	live := count(callDefault())
	if live.Ran || !live.InProgress {
		t.Errorf("a default call while the strict claim's lease is live: %+v; want in progress, not run", live)
	}
	if d := live.RetryAt.Sub(leaseEnd); d < -time.Millisecond || d > time.Millisecond {
		t.Errorf("a default call while the strict claim's lease is live: RetryAt %v, want the strict lease's end %v "+
			"(deadline plus the skew margin), so that its redelivery is paced on it", live.RetryAt, leaseEnd)
	}

	time.Sleep(time.Until(leaseEnd.Add(time.Second)))
	lapsed := count(callDefault())
	if lapsed.Ran || !(lapsed.Quarantined || lapsed.InProgress) {
		t.Errorf("a default call after the strict claim's lease lapsed: %+v; want quarantined or in progress, not run", lapsed)
	}

	s := count(finish())
	if !s.Ran || s.Err != "" || s.Outcome != string(idempotency.OutcomeClaimed) || s.Value != "strict" {
		t.Errorf("the strict call: %+v; want outcome claimed with its own result, \"strict\"", s)
	}
	after := count(callDefault())
	if after.Ran || after.Err != "" || after.Value != "strict" {
		t.Errorf("a default call after the strict call completed: %+v; want the strict call's result replayed", after)
	}
	if runs != 1 {
		t.Errorf("the operation ran %d times, want once", runs)
	}
}

// writeJSON writes v to path as JSON, whole or not at all (a new file
// renamed into place).
func writeJSON(t *testing.T, path string, v any) {
	t.Helper()
	b, err := json.Marshal(v)
	if err != nil {
		t.Fatal(err)
	}
	tmp := path + ".tmp"
	if err := os.WriteFile(tmp, b, 0o600); err != nil {
		t.Fatal(err)
	}
	if err := os.Rename(tmp, path); err != nil {
		t.Fatal(err)
	}
}

func readJSON(t *testing.T, path string, v any) {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	if err := json.Unmarshal(b, v); err != nil {
		t.Fatalf("%s: %v", filepath.Base(path), fmt.Errorf("%w: %q", err, b))
	}
}

// OlderReleaseKeepsOff checks that the claim an older release of a store
// sends, emulated by claim (the release's own conditional write, claiming
// id at now; it reports whether it claimed), does not take over a strict
// claim an hour after it was made, long after its lease lapsed and long
// before the record expires. The claim is made by a guard of zero-value
// options in strict mode on store, under a context of Lambda's default
// deadline, whose operation is still running. The control: the same
// claim takes over a default claim made the same way.
func OlderReleaseKeepsOff(t *testing.T, store driver.Store, claim func(t *testing.T, id string, now time.Time) bool) {
	t.Helper()
	for _, strict := range []bool{true, false} {
		ns, material := callKey()
		g, err := idempotency.New(idempotency.Config{Store: store, Namespace: ns, Strict: strict})
		if err != nil {
			t.Fatal(err)
		}
		id, err := g.ID(idempotency.Raw([]byte(material)))
		if err != nil {
			t.Fatal(err)
		}
		started := make(chan time.Time, 1)
		hold, release := io.Pipe()
		out := make(chan callResult, 1)
		go func() { out <- strictCall(store, ns, material, strict, func(d time.Time) { started <- d }, hold) }()
		var claimed bool
		select {
		case <-started:
			claimed = claim(t, id, time.Now().Add(time.Hour))
		case res := <-out:
			t.Fatalf("the call ended before its operation started: %+v", res)
		}
		release.Close()
		res := <-out
		switch {
		case strict && claimed:
			t.Error("an older release's claim, an hour on, took over a strict claim")
		case strict && (res.Err != "" || res.Outcome != string(idempotency.OutcomeClaimed)):
			t.Errorf("the strict call: %+v; want outcome claimed", res)
		case !strict && !claimed:
			t.Fatal("an older release's claim, an hour on, did not take over a default claim: this test proves nothing")
		}
	}
}
