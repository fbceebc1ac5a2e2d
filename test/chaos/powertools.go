package chaos

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"sync"
	"time"

	"github.com/aws/aws-lambda-go/events"

	"github.com/sqsonce/sqsonce/test/history"
)

// node is a Powertools for AWS Lambda (TypeScript) worker: one long-lived
// node process running worker.mjs in the Powertools directory, to which the
// Go worker hands each batch (one JSON line on stdin, one answer on
// stdout). It writes its own history file, Name-node.jsonl, whose header
// the Go side writes first.
type node struct {
	w   *worker
	cmd *exec.Cmd
	in  io.WriteCloser
	out *bufio.Reader
	mu  sync.Mutex
}

// nodeBatch is one batch as worker.mjs reads it.
type nodeBatch struct {
	Inv      string                `json:"inv"`
	Deadline int64                 `json:"deadline"` // unix ms
	Records  []events.SQSMessage   `json:"records"`
	Meta     map[string]nodeRecord `json:"meta"` // by message id
}

// nodeRecord is what the Go side decides for one record: its delivery and
// payload digest for the history, how long its operation takes, and
// whether the worker dies after it (before Powertools stores the result).
type nodeRecord struct {
	D         string `json:"d"`
	Payload   string `json:"payload"`
	OpMs      int64  `json:"opMs"`
	KillAfter bool   `json:"killAfter,omitempty"`
}

// nodeAnswer is worker.mjs's answer to a batch.
type nodeAnswer struct {
	Failures []string          `json:"failures"`
	Results  map[string]string `json:"results"` // message id → run id returned
}

// startNode starts w's node process. It is in w's process group, so that a
// kill of the worker (the harness's, the watchdog's, its own) kills both.
func startNode(w *worker) (*node, error) {
	cfg := w.cfg
	if cfg.Powertools == "" {
		return nil, fmt.Errorf("chaos: worker %s: no Powertools directory", cfg.Name)
	}
	proc := cfg.Name + "-node"
	path := filepath.Join(cfg.History, proc+".jsonl")
	hdr := cfg.Header
	hdr.Proc = proc
	hw, err := history.Create(path, hdr, history.WriterOptions{Sync: true})
	if err != nil {
		return nil, err
	}
	if err := hw.Close(); err != nil {
		return nil, err
	}
	conf, err := json.Marshal(map[string]string{
		"endpoint": cfg.DynamoEndpoint, "table": cfg.Table, "keyPrefix": cfg.Namespace,
		"history": path, "proc": proc, "target": cfg.Name,
	})
	if err != nil {
		return nil, err
	}
	cmd := exec.Command("node", "worker.mjs")
	cmd.Dir = cfg.Powertools
	cmd.Env = append(os.Environ(), "AWS_REGION=us-east-1", "AWS_LAMBDA_FUNCTION_NAME=chaos",
		"POWERTOOLS_IDEMPOTENCY_DISABLED=false", "CHAOS_WORKER="+string(conf))
	cmd.Stderr = os.Stderr
	in, err := cmd.StdinPipe()
	if err != nil {
		return nil, err
	}
	out, err := cmd.StdoutPipe()
	if err != nil {
		return nil, err
	}
	if err := cmd.Start(); err != nil {
		return nil, fmt.Errorf("chaos: worker %s: start node: %w", cfg.Name, err)
	}
	n := &node{w: w, cmd: cmd, in: in, out: bufio.NewReaderSize(out, 64<<10)}
	// Its init phase, outside any invocation: node loads its modules in
	// seconds on a busy machine, and says when it is ready.
	ready := make(chan error, 1)
	go func() {
		line, err := n.out.ReadBytes('\n')
		if err == nil && !bytes.Contains(line, []byte(`"ready":true`)) {
			err = fmt.Errorf("not ready: %q", line)
		}
		ready <- err
	}()
	select {
	case err = <-ready:
	case <-time.After(time.Minute):
		err = errors.New("not ready after a minute")
	}
	if err != nil {
		_ = cmd.Process.Kill()
		_ = cmd.Wait()
		return nil, fmt.Errorf("chaos: worker %s: node: %w", cfg.Name, err)
	}
	return n, nil
}

// handle hands ev to node and waits for its answer: the batch item
// failures, recorded as fail events, and the results for the
// acknowledgements. ok is false when node did not answer (it died): the
// invocation failed as a whole.
func (n *node) handle(ctx context.Context, ev events.SQSEvent, inv *invocation) (events.SQSEventResponse, bool) {
	n.mu.Lock()
	defer n.mu.Unlock()
	w := n.w
	deadline, _ := ctx.Deadline()
	b := nodeBatch{Inv: inv.id, Deadline: deadline.UnixMilli(), Records: ev.Records, Meta: map[string]nodeRecord{}}
	for _, r := range ev.Records {
		d := inv.refs[r.MessageId]
		dur := w.between(w.cfg.OpMin, w.cfg.OpMax)
		kill := false
		if w.cfg.PeerFaults {
			if w.chance(w.cfg.SlowProb) {
				dur = w.between(w.cfg.SlowMin, w.cfg.SlowMax)
			}
			kill = w.faults() && w.chance(w.cfg.KillAfterOpProb)
		}
		b.Meta[r.MessageId] = nodeRecord{D: d.d, Payload: d.payload, OpMs: dur.Milliseconds(), KillAfter: kill}
	}
	line, err := json.Marshal(b)
	if err != nil {
		w.slog.Error("powertools batch", "error", err)
		return events.SQSEventResponse{}, false
	}
	if _, err := n.in.Write(append(line, '\n')); err != nil {
		w.slog.Error("powertools batch", "error", err)
		return events.SQSEventResponse{}, false
	}
	got, err := n.out.ReadBytes('\n')
	if err != nil {
		w.slog.Error("powertools answer", "error", err)
		return events.SQSEventResponse{}, false
	}
	var a nodeAnswer
	if err := json.Unmarshal(got, &a); err != nil {
		w.slog.Error("powertools answer", "error", err)
		return events.SQSEventResponse{}, false
	}
	var resp events.SQSEventResponse
	fails := make([]history.Event, 0, len(a.Failures))
	for _, id := range a.Failures {
		resp.BatchItemFailures = append(resp.BatchItemFailures, events.SQSBatchItemFailure{ItemIdentifier: id})
		if d := inv.refs[id]; d != nil {
			fails = append(fails, history.Event{Ev: history.KindFail, D: d.d, Class: "powertools"})
		}
	}
	if len(fails) > 0 {
		_ = w.write(fails...)
	}
	for id, run := range a.Results {
		if d := inv.refs[id]; d != nil {
			inv.set(id, Result{Run: run, Key: d.key})
		}
	}
	return resp, true
}

// close ends node: its stdin closed, it finishes and exits; SIGKILL after
// a grace period.
func (n *node) close() {
	_ = n.in.Close()
	done := make(chan struct{})
	go func() {
		_ = n.cmd.Wait()
		close(done)
	}()
	select {
	case <-done:
	case <-time.After(5 * time.Second):
		_ = n.cmd.Process.Kill()
		<-done
	}
}
