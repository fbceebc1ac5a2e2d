package history

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"sync"
	"time"
)

// WriterOptions configure a [Writer]. The zero value writes without fsync,
// with times from time.Now.
type WriterOptions struct {
	// Now is the recorder's clock: a simulation's, say. Default time.Now.
	Now func() time.Time
	// Sync makes every Write fsync the file before it returns, so that what
	// a process recorded survives its SIGKILL. Only for [Create]'s files.
	Sync bool
}

// Writer appends one process's events to a history, one JSON object a line,
// after a header. It is safe for concurrent use: each Write numbers its
// events, stamps them and writes them in one call, in that order.
type Writer struct {
	mu   sync.Mutex
	w    io.Writer
	sync *os.File // fsynced after each write, when WriterOptions.Sync
	own  *os.File // closed by Close: Create's file
	proc string
	now  func() time.Time
	seq  uint64
	buf  bytes.Buffer
	err  error // the first write error: every later Write returns it
}

// NewWriter writes h (with Version set, and T if zero) to w and returns a
// Writer for h.Proc's events. h.Proc must not be empty.
func NewWriter(w io.Writer, h Header, opts WriterOptions) (*Writer, error) {
	if h.Proc == "" {
		return nil, errors.New("history: a header needs a process name")
	}
	hw := &Writer{w: w, proc: h.Proc, now: opts.Now}
	if hw.now == nil {
		hw.now = time.Now
	}
	if opts.Sync {
		f, ok := w.(*os.File)
		if !ok {
			return nil, errors.New("history: Sync needs a file")
		}
		hw.sync = f
	}
	h.Ev, h.Version = KindHeader, Version
	if h.T == 0 {
		h.T = hw.now().UnixNano()
	}
	b, err := json.Marshal(h)
	if err != nil {
		return nil, fmt.Errorf("history: header: %w", err)
	}
	if err := hw.put(append(b, '\n')); err != nil {
		return nil, err
	}
	return hw, nil
}

// Create creates the file path (it must not exist: one file per process)
// and returns a Writer on it, as [NewWriter] does. Close closes the file.
func Create(path string, h Header, opts WriterOptions) (*Writer, error) {
	f, err := os.OpenFile(path, os.O_WRONLY|os.O_CREATE|os.O_EXCL|os.O_APPEND, 0o644)
	if err != nil {
		return nil, fmt.Errorf("history: %w", err)
	}
	w, err := NewWriter(f, h, opts)
	if err != nil {
		f.Close()
		return nil, err
	}
	w.own = f
	return w, nil
}

// Proc returns the process whose events w writes.
func (w *Writer) Proc() string { return w.proc }

// Write appends es in one write. Each event gets the next sequence number
// and w's process; one without a time (T zero) gets the clock's.
func (w *Writer) Write(es ...Event) error {
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.err != nil {
		return w.err
	}
	w.buf.Reset()
	now := w.now().UnixNano()
	for _, e := range es {
		w.seq++
		e.Seq, e.Proc = w.seq, w.proc
		if e.T == 0 {
			e.T = now
		}
		b, err := json.Marshal(e)
		if err != nil {
			return fmt.Errorf("history: event %d: %w", e.Seq, err)
		}
		w.buf.Write(b)
		w.buf.WriteByte('\n')
	}
	return w.put(w.buf.Bytes())
}

func (w *Writer) put(b []byte) error {
	if _, err := w.w.Write(b); err != nil {
		w.err = fmt.Errorf("history: write: %w", err)
		return w.err
	}
	if w.sync != nil {
		if err := w.sync.Sync(); err != nil {
			w.err = fmt.Errorf("history: sync: %w", err)
			return w.err
		}
	}
	return nil
}

// Close closes the file of a Writer made by [Create]; for one made by
// [NewWriter] it only stops later writes.
func (w *Writer) Close() error {
	w.mu.Lock()
	defer w.mu.Unlock()
	if errors.Is(w.err, errClosed) {
		return nil
	}
	var err error
	if w.own != nil {
		err = w.own.Close()
	}
	w.err = errClosed
	if err != nil {
		return fmt.Errorf("history: close: %w", err)
	}
	return nil
}

var errClosed = errors.New("history: writer closed")
