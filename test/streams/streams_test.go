package streams

import (
	"bytes"
	"context"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/sqsonce/sqsonce/internal/testenv/powertools"
	"github.com/sqsonce/sqsonce/internal/testenv/testproc"
)

// The emulator's binary: SQSONCE_RIE (make test sets it), else on PATH.
const envRIE = "SQSONCE_RIE"

var ptDir = filepath.Join("..", "..", "internal", "testenv", "powertools", "testdata")

// scenario is one fixture and what each stream handler must do with it.
type scenario struct {
	kind    string // kinesis or dynamodb
	fixture string
	// wantFailed1 are the sequence numbers (by position in the fixture,
	// from 1) the first invocation reports; wantCalls1 the records it calls.
	wantFailed1, wantCalls1 []int
}

var scenarios = []scenario{
	// Partition keys a: 1 3 6 8, b: 2 5 9, c: 4 7 10; 2 and 6 fail once.
	{"kinesis", "kinesis.json", []int{2, 5, 6, 8, 9}, []int{1, 2, 3, 4, 6, 7, 10}},
	// Items x: 1 3 6 8, y: 2 5, z: 4 7; 2 and 6 fail once.
	{"dynamodb", "dynamodb.json", []int{2, 5, 6, 8}, []int{1, 2, 3, 4, 6, 7}},
}

// fixture is an event as Lambda delivers it: its records as they are, and
// the sequence number and key of each.
type fixture struct {
	records []json.RawMessage
	seqs    []string
	keys    []string
}

func loadFixture(t *testing.T, s scenario) fixture {
	t.Helper()
	b, err := os.ReadFile(filepath.Join("..", "..", "events", "streams", s.fixture))
	if err != nil {
		t.Fatal(err)
	}
	var ev struct{ Records []json.RawMessage }
	if err := json.Unmarshal(b, &ev); err != nil {
		t.Fatal(err)
	}
	f := fixture{records: ev.Records}
	for _, raw := range ev.Records {
		var r struct {
			Kinesis  struct{ SequenceNumber, PartitionKey string }
			Dynamodb struct {
				SequenceNumber string
				Keys           map[string]map[string]string
			}
		}
		if err := json.Unmarshal(raw, &r); err != nil {
			t.Fatal(err)
		}
		if s.kind == "kinesis" {
			f.seqs, f.keys = append(f.seqs, r.Kinesis.SequenceNumber), append(f.keys, r.Kinesis.PartitionKey)
		} else {
			k, _ := json.Marshal(r.Dynamodb.Keys)
			f.seqs, f.keys = append(f.seqs, r.Dynamodb.SequenceNumber), append(f.keys, string(k))
		}
	}
	return f
}

// event returns the event of the records from position from (0-based).
func (f fixture) event(from int) []byte {
	b, _ := json.Marshal(map[string]any{"Records": f.records[from:]})
	return b
}

// pos returns the positions (from 1) of sequence numbers.
func (f fixture) pos(seqs []string) []int {
	out := []int{}
	for _, s := range seqs {
		out = append(out, slices.Index(f.seqs, s)+1)
	}
	return out
}

// resume returns where Lambda resumes the shard after a response that
// reported failed: the position of the lowest sequence number (they have
// one length in a shard, so the lowest is the least string), or -1.
func (f fixture) resume(failed []string) int {
	if len(failed) == 0 {
		return -1
	}
	return slices.Index(f.seqs, slices.Min(failed))
}

// Call is one call of a record function, as the call logs write it; Start
// and End are in one clock per side.
type Call struct {
	Seq   string  `json:"seq"`
	Key   string  `json:"key"`
	Start float64 `json:"start"`
	End   float64 `json:"end"`
	OK    bool    `json:"ok"`
}

// orderViolations counts, over a run's calls: the successful calls of a
// record that ended while an earlier record of its key had not yet
// succeeded (its effect lands before the earlier one's), and the calls that
// overlapped a call of an earlier record of their key.
func orderViolations(f fixture, calls []Call) (outOfOrder, overlapping int) {
	firstOK := map[string]float64{}
	for _, c := range calls {
		if e, ok := firstOK[c.Seq]; c.OK && (!ok || c.End < e) {
			firstOK[c.Seq] = c.End
		}
	}
	idx := func(seq string) int { return slices.Index(f.seqs, seq) }
	for _, c := range calls {
		i := idx(c.Seq)
		early, overlap := false, false
		for j := range i {
			if f.keys[j] != c.Key {
				continue
			}
			if e, ok := firstOK[f.seqs[j]]; c.OK && (!ok || e > c.End) {
				early = true
			}
			for _, d := range calls {
				if d.Seq == f.seqs[j] && d.Start < c.End && c.Start < d.End {
					overlap = true
				}
			}
		}
		if early {
			outOfOrder++
		}
		if overlap {
			overlapping++
		}
	}
	return outOfOrder, overlapping
}

// TestStreamsUnderRIE runs each fixture through the stream handler under
// the emulator, idempotent on the record's data, and then the records from
// where Lambda resumes: the first response lists the failed and the not
// started records; a key's later records never start after its failure;
// no two records of a key overlap; the redelivery calls only the records
// that had not succeeded (the others are replayed by the guard); and a
// batch whose every record fails is an invocation error.
func TestStreamsUnderRIE(t *testing.T) {
	rie := findRIE(t)
	fn := buildFn(t)
	for _, s := range scenarios {
		t.Run(s.kind, func(t *testing.T) {
			f := loadFixture(t, s)
			e := start(t, rie, fn, s.kind, true)

			failed := e.invoke(t, f.event(0))
			if got := f.pos(failed); !slices.Equal(got, s.wantFailed1) {
				t.Errorf("first invocation reports %v, want %v", got, s.wantFailed1)
			}
			first := e.calls(t)
			var called []int
			for _, c := range first {
				called = append(called, slices.Index(f.seqs, c.Seq)+1)
			}
			slices.Sort(called)
			if !slices.Equal(called, s.wantCalls1) {
				t.Errorf("first invocation called %v, want %v", called, s.wantCalls1)
			}

			from := f.resume(failed)
			if again := e.invoke(t, f.event(from)); len(again) != 0 {
				t.Errorf("redelivery from %d reports %v, want none", from+1, f.pos(again))
			}
			all := e.calls(t)
			succeeded := map[string]int{}
			for _, c := range all {
				if c.OK {
					succeeded[c.Seq]++
				}
			}
			for i, seq := range f.seqs {
				if succeeded[seq] != 1 {
					t.Errorf("record %d succeeded %d times over both invocations, want once (the guard replays it)", i+1, succeeded[seq])
				}
			}
			if early, overlap := orderViolations(f, all); early != 0 || overlap != 0 {
				t.Errorf("%d runs out of order, %d overlapping runs of one key; want none", early, overlap)
			}

			// A batch whose only record fails on every call.
			var rec map[string]any
			if err := json.Unmarshal(f.records[0], &rec); err != nil {
				t.Fatal(err)
			}
			alwaysFails(t, s.kind, rec)
			b, _ := json.Marshal(map[string]any{"Records": []any{rec}})
			if got := e.invokeError(t, b); got["errorType"] != "FullBatchFailureError" {
				t.Errorf("an event whose every record fails: %v, want errorType FullBatchFailureError", got)
			}
		})
	}
}

// alwaysFails rewrites a record of the fixture so that it fails on every
// call, under an idempotency key of its own.
func alwaysFails(t *testing.T, kind string, rec map[string]any) {
	t.Helper()
	if kind == "kinesis" {
		k := rec["kinesis"].(map[string]any)
		data, _ := base64.StdEncoding.DecodeString(k["data"].(string))
		var d map[string]any
		if err := json.Unmarshal(data, &d); err != nil {
			t.Fatal(err)
		}
		d["fail_times"], d["idempotency_key"] = 99, "always-fails"
		data, _ = json.Marshal(d)
		k["data"] = base64.StdEncoding.EncodeToString(data)
		k["sequenceNumber"] = "49590338271490256608559692538361571095921575989136589990"
		return
	}
	d := rec["dynamodb"].(map[string]any)
	img := d["NewImage"].(map[string]any)
	img["fail_times"] = map[string]any{"N": "99"}
	img["change_id"] = map[string]any{"S": "always-fails"}
	d["SequenceNumber"] = "004100000000000009999"
}

// TestStreamsVersusPowertools runs each fixture, then its redelivery from
// where Lambda resumes, through the Go handler under the emulator and
// through Powertools TypeScript's BatchProcessor under node, with the same
// record function and no idempotency on either side, and prints the
// comparison. The Go side must run no record out of order and no two
// records of a key at once.
func TestStreamsVersusPowertools(t *testing.T) {
	rie := findRIE(t)
	fn := buildFn(t)
	if err := powertools.Available(ptDir); err != nil {
		testproc.Unavailable(t, "powertools", err, "install node and run npm ci in internal/testenv/powertools/testdata (make test does)")
	}
	var table []string
	for _, s := range scenarios {
		t.Run(s.kind, func(t *testing.T) {
			f := loadFixture(t, s)

			// Go: batch.Kinesis / batch.DynamoDBStream under the emulator.
			e := start(t, rie, fn, s.kind, false)
			goFailed1 := e.invoke(t, f.event(0))
			goFrom := f.resume(goFailed1)
			goFailed2 := e.invoke(t, f.event(goFrom))
			goCalls := e.calls(t)

			// Powertools: the same events, the redelivery from its own
			// response's resume point; in parallel (its default) and one
			// record at a time (processInParallel: false).
			pt := func(sequential bool) (rep ptReport, failed1, failed2 []string) {
				failed1 = runPowertools(t, s.kind, sequential, [][]byte{f.event(0)}).failed(0)
				rep = runPowertools(t, s.kind, sequential, [][]byte{f.event(0), f.event(f.resume(failed1))})
				return rep, failed1, rep.failed(1)
			}
			ptRep, ptFailed1, ptFailed2 := pt(false)
			seqRep, seqFailed1, seqFailed2 := pt(true)

			if got := f.pos(goFailed1); !slices.Equal(got, s.wantFailed1) {
				t.Errorf("Go: first invocation reports %v, want %v", got, s.wantFailed1)
			}
			goEarly, goOverlap := orderViolations(f, goCalls)
			if goEarly != 0 || goOverlap != 0 {
				t.Errorf("Go: %d runs out of order, %d overlapping runs of one key; want none", goEarly, goOverlap)
			}
			if len(ptRep.Calls) < len(f.seqs) || len(seqRep.Calls) < len(f.seqs) {
				t.Fatalf("Powertools made %d and %d calls for %d records: the driver did not run the batch", len(ptRep.Calls), len(seqRep.Calls), len(f.seqs))
			}
			ptEarly, ptOverlap := orderViolations(f, ptRep.Calls)
			seqEarly, seqOverlap := orderViolations(f, seqRep.Calls)
			row := func(side string, calls int, f1, f2 []int, early, overlap int) string {
				return fmt.Sprintf("| %s | %s | %d | %v | %v | %d | %d |", s.kind, side, calls, f1, f2, early, overlap)
			}
			table = append(table,
				row("sqsonce (batch."+map[string]string{"kinesis": "Kinesis", "dynamodb": "DynamoDBStream"}[s.kind]+")", len(goCalls), f.pos(goFailed1), f.pos(goFailed2), goEarly, goOverlap),
				row("Powertools TS 2.35 BatchProcessor", len(ptRep.Calls), f.pos(ptFailed1), f.pos(ptFailed2), ptEarly, ptOverlap),
				row("Powertools TS 2.35 BatchProcessor, processInParallel: false", len(seqRep.Calls), f.pos(seqFailed1), f.pos(seqFailed2), seqEarly, seqOverlap))
		})
	}
	t.Logf("failures by position in the fixture (1 = its first record)\n"+
		"| stream | side | record function calls (both invocations) | first invocation's failures | redelivery's failures | runs that ended before an earlier record of their key had succeeded | runs overlapping an earlier record of their key |\n"+
		"|---|---|---:|---|---|---:|---:|\n%s", strings.Join(table, "\n"))
}

// ptReport is the Powertools driver's report.
type ptReport struct {
	Events []struct {
		BatchItemFailures []struct{ ItemIdentifier string } `json:"batchItemFailures"`
		Error             string                            `json:"error"`
	} `json:"events"`
	Calls []Call `json:"calls"`
}

func (r ptReport) failed(i int) []string {
	var out []string
	for _, f := range r.Events[i].BatchItemFailures {
		out = append(out, f.ItemIdentifier)
	}
	return out
}

func runPowertools(t *testing.T, kind string, sequential bool, evs [][]byte) ptReport {
	t.Helper()
	raws := make([]json.RawMessage, len(evs))
	for i, e := range evs {
		raws[i] = e
	}
	in, _ := json.Marshal(map[string]any{"kind": kind, "sequential": sequential, "events": raws})
	ctx, cancel := context.WithTimeout(t.Context(), time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, "node", "streams.mjs")
	cmd.Dir = ptDir
	cmd.Stdin = bytes.NewReader(in)
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	if err := cmd.Run(); err != nil {
		t.Fatalf("node streams.mjs: %v\n%s", err, stderr.String())
	}
	var rep ptReport
	if err := json.Unmarshal(stdout.Bytes(), &rep); err != nil {
		t.Fatalf("node streams.mjs: report %q: %v", stdout.String(), err)
	}
	for i, e := range rep.Events {
		if e.Error != "" {
			t.Fatalf("Powertools threw %s on event %d", e.Error, i)
		}
	}
	return rep
}

// findRIE returns the emulator's binary, or skips (fails under CI=true).
func findRIE(t *testing.T) string {
	t.Helper()
	if p := os.Getenv(envRIE); p != "" {
		if _, err := os.Stat(p); err != nil {
			testproc.Unavailable(t, "aws-lambda-rie", err, "make tools")
		}
		return p
	}
	p, err := exec.LookPath("aws-lambda-rie")
	if err != nil {
		testproc.Unavailable(t, "aws-lambda-rie", err, "make tools, then set "+envRIE+"=$PWD/.tools/aws-lambda-rie (make test does)")
	}
	return p
}

var (
	buildOnce sync.Once
	fnPath    string
	buildErr  error
)

// buildFn builds streamfn for this machine, once per test binary.
func buildFn(t *testing.T) string {
	t.Helper()
	buildOnce.Do(func() {
		dir, err := os.MkdirTemp("", "streamfn-")
		if err != nil {
			buildErr = err
			return
		}
		fnPath = filepath.Join(dir, "bootstrap")
		cmd := exec.Command("go", "build", "-tags", "lambda.norpc", "-o", fnPath, "./streamfn")
		cmd.Env = append(os.Environ(), "CGO_ENABLED=0")
		if out, err := cmd.CombinedOutput(); err != nil {
			buildErr = fmt.Errorf("go build ./streamfn: %v\n%s", err, out)
		}
	})
	if buildErr != nil {
		t.Fatal(buildErr)
	}
	return fnPath
}

// emulator is streamfn running under aws-lambda-rie.
type emulator struct {
	url     string
	callLog string
	proc    *testproc.Process
}

func start(t *testing.T, rie, fn, kind string, idempotent bool) *emulator {
	t.Helper()
	port, err := testproc.FreePort()
	if err != nil {
		t.Fatal(err)
	}
	api, err := testproc.FreePort()
	if err != nil {
		t.Fatal(err)
	}
	addr := fmt.Sprintf("127.0.0.1:%d", port)
	e := &emulator{url: "http://" + addr + "/2015-03-31/functions/function/invocations", callLog: filepath.Join(t.TempDir(), "calls.jsonl")}
	cmd := exec.Command(rie, "--runtime-interface-emulator-address", addr, "--runtime-api-address", fmt.Sprintf("127.0.0.1:%d", api), fn)
	idem := "off"
	if idempotent {
		idem = "on"
	}
	cmd.Env = []string{"PATH=" + os.Getenv("PATH"), "HOME=" + t.TempDir(), "LOG_LEVEL=warn",
		"STREAM_KIND=" + kind, "CALL_LOG=" + e.callLog, "IDEMPOTENT=" + idem, "AWS_LAMBDA_FUNCTION_TIMEOUT=60"}
	if e.proc, err = testproc.Start("aws-lambda-rie", cmd); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		_ = e.proc.Stop()
		if t.Failed() {
			t.Logf("emulator output:\n%s", e.proc.Output())
		}
	})
	if err := e.proc.WaitReady(10*time.Second, func() error {
		c, err := net.DialTimeout("tcp", addr, 200*time.Millisecond)
		if err == nil {
			c.Close()
		}
		return err
	}); err != nil {
		t.Fatalf("emulator: %v\n%s", err, e.proc.Output())
	}
	return e
}

func (e *emulator) post(t *testing.T, event []byte) []byte {
	t.Helper()
	ctx, cancel := context.WithTimeout(t.Context(), time.Minute)
	defer cancel()
	req, _ := http.NewRequestWithContext(ctx, http.MethodPost, e.url, bytes.NewReader(event))
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatalf("invoke: %v", err)
	}
	defer resp.Body.Close()
	body, _ := io.ReadAll(resp.Body)
	if resp.StatusCode != http.StatusOK {
		t.Fatalf("invoke: status %d: %s", resp.StatusCode, body)
	}
	return body
}

// invoke invokes the function with event and returns the sequence numbers
// its response reports failed.
func (e *emulator) invoke(t *testing.T, event []byte) []string {
	t.Helper()
	body := e.post(t, event)
	var out struct {
		BatchItemFailures []struct{ ItemIdentifier string } `json:"batchItemFailures"`
	}
	if err := json.Unmarshal(body, &out); err != nil || out.BatchItemFailures == nil {
		t.Fatalf("invoke: response %s is not a batch response: %v", body, err)
	}
	failed := []string{}
	for _, f := range out.BatchItemFailures {
		failed = append(failed, f.ItemIdentifier)
	}
	return failed
}

// invokeError invokes the function with event, which must fail as a whole,
// and returns the error Lambda reports.
func (e *emulator) invokeError(t *testing.T, event []byte) map[string]any {
	t.Helper()
	var out map[string]any
	if body := e.post(t, event); json.Unmarshal(body, &out) != nil || out["errorType"] == nil {
		t.Errorf("invoke: response %s is not an invocation error", body)
	}
	return out
}

// calls returns every call logged so far.
func (e *emulator) calls(t *testing.T) []Call {
	t.Helper()
	b, err := os.ReadFile(e.callLog)
	if err != nil && !os.IsNotExist(err) {
		t.Fatal(err)
	}
	var out []Call
	for _, line := range bytes.Split(bytes.TrimSpace(b), []byte("\n")) {
		if len(line) == 0 {
			continue
		}
		var c Call
		if err := json.Unmarshal(line, &c); err != nil {
			t.Fatalf("call log line %q: %v", line, err)
		}
		out = append(out, c)
	}
	return out
}
