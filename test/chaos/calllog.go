package chaos

import (
	"bufio"
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"sync"
	"time"
)

// The kinds of call log entries.
const (
	evStart   = "start"    // the worker process started
	evRecv    = "recv"     // a message was received (N: its receive count)
	evRecvErr = "recv_err" // a ReceiveMessage call failed
	evOpStart = "op_start" // the operation began a run (Run)
	evOpDone  = "op_done"  // the operation finished a run, before its completion was stored
	evOpFail  = "op_fail"  // the operation gave up (its context ended)
	evOutcome = "outcome"  // the guard reported an outcome (Outcome, Ran, Run)
	evRecord  = "record"   // the batch handler finished a record (Class: "" on success)
	evAck     = "ack"      // the message is acknowledged: logged before its delete (Run: the result it saw)
	evPace    = "pace"     // a failed record's visibility was changed (N: the timeout in ms; Err if refused)
	evKill    = "kill"     // the worker is about to SIGKILL itself (Class: why)
	evExit    = "exit"     // the worker stopped on SIGTERM
)

// entry is one line of a call log.
type entry struct {
	T       int64  `json:"t"` // unix nanoseconds
	Ev      string `json:"ev"`
	Msg     string `json:"msg,omitempty"`
	Key     string `json:"key,omitempty"`
	Run     string `json:"run,omitempty"`
	N       int    `json:"n,omitempty"`
	Outcome string `json:"outcome,omitempty"`
	Ran     bool   `json:"ran,omitempty"`
	Class   string `json:"class,omitempty"`
	Err     string `json:"err,omitempty"`
}

// callLog appends entries to a file, one JSON object a line, and fsyncs
// each write before returning: what was logged is on disk when the process
// is killed right after.
type callLog struct {
	mu  sync.Mutex
	f   *os.File
	buf bytes.Buffer
}

func openLog(path string) (*callLog, error) {
	f, err := os.OpenFile(path, os.O_WRONLY|os.O_CREATE|os.O_APPEND, 0o644)
	if err != nil {
		return nil, fmt.Errorf("chaos: call log: %w", err)
	}
	return &callLog{f: f}, nil
}

// write appends es in one write and fsyncs. An entry without a time gets
// the current one.
func (l *callLog) write(es ...entry) error {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.buf.Reset()
	now := time.Now().UnixNano()
	enc := json.NewEncoder(&l.buf)
	for _, e := range es {
		if e.T == 0 {
			e.T = now
		}
		if err := enc.Encode(e); err != nil {
			return fmt.Errorf("chaos: call log: %w", err)
		}
	}
	if _, err := l.f.Write(l.buf.Bytes()); err != nil {
		return fmt.Errorf("chaos: call log: %w", err)
	}
	if err := l.f.Sync(); err != nil {
		return fmt.Errorf("chaos: call log: %w", err)
	}
	return nil
}

func (l *callLog) close() error { return l.f.Close() }

// readLog reads a call log. A last line cut short (a write interrupted by
// SIGKILL) is ignored; any other bad line is an error.
func readLog(r io.Reader) ([]entry, error) {
	var out []entry
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 64<<10), 1<<20)
	var bad error
	for sc.Scan() {
		if bad != nil {
			return nil, bad
		}
		var e entry
		if err := json.Unmarshal(sc.Bytes(), &e); err != nil {
			bad = fmt.Errorf("chaos: call log line %d: %w", len(out)+1, err)
			continue
		}
		out = append(out, e)
	}
	if err := sc.Err(); err != nil {
		return nil, errors.Join(bad, err)
	}
	return out, nil
}
