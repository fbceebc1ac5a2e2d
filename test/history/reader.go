package history

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
)

// File is one process's history file as read.
type File struct {
	Header Header
	Events []Event
	// Truncated reports a last line cut short (its process was killed
	// while writing it); that line is not in Events.
	Truncated bool
}

// History is a run's events from all its files, merged into one order.
type History struct {
	Header Header   // the first file's, with Proc empty
	Procs  []string // the processes, in the order of their files
	Events []Event  // merged; Pos is each event's place, from 1
	// Truncated counts the files whose last line was cut short.
	Truncated int
}

// Read reads one history file: a header, then events of the header's
// process with sequence numbers that increase. A last line without its
// newline that does not parse (a write its process's SIGKILL cut short) is
// dropped and reported in File.Truncated; any other bad line is an error.
func Read(r io.Reader) (File, error) {
	var f File
	b, err := io.ReadAll(r)
	if err != nil {
		return f, fmt.Errorf("history: %w", err)
	}
	lines := bytes.SplitAfter(b, []byte("\n"))
	for i, line := range lines {
		if len(line) == 0 { // after the last newline
			break
		}
		if err := f.parse(i+1, line); err != nil {
			if i == len(lines)-1 && i > 0 && !bytes.HasSuffix(line, []byte("\n")) {
				f.Truncated = true
				break
			}
			return f, err
		}
	}
	if f.Header.Ev != KindHeader {
		return f, errors.New("history: no header")
	}
	return f, nil
}

// parse reads line n into f: the header first, then events.
func (f *File) parse(n int, line []byte) error {
	dec := json.NewDecoder(bytes.NewReader(line))
	dec.DisallowUnknownFields()
	if n == 1 {
		if err := dec.Decode(&f.Header); err != nil {
			return fmt.Errorf("history: header: %w", err)
		}
		if f.Header.Ev != KindHeader {
			return fmt.Errorf("history: line 1 is a %q event, not a header", f.Header.Ev)
		}
		if f.Header.Version != Version {
			return fmt.Errorf("history: format version %d, want %d", f.Header.Version, Version)
		}
		if f.Header.Proc == "" {
			return errors.New("history: the header names no process")
		}
		return nil
	}
	var e Event
	if err := dec.Decode(&e); err != nil {
		return fmt.Errorf("history: line %d: %w", n, err)
	}
	switch {
	case e.Ev == "" || e.Ev == KindHeader:
		return fmt.Errorf("history: line %d: event kind %q", n, e.Ev)
	case e.Proc != f.Header.Proc:
		return fmt.Errorf("history: line %d: an event of process %q in %q's file", n, e.Proc, f.Header.Proc)
	case len(f.Events) > 0 && e.Seq <= f.Events[len(f.Events)-1].Seq:
		return fmt.Errorf("history: line %d: sequence number %d after %d", n, e.Seq, f.Events[len(f.Events)-1].Seq)
	}
	f.Events = append(f.Events, e)
	return nil
}

// ReadFile reads the history file path (see [Read]).
func ReadFile(path string) (File, error) {
	fh, err := os.Open(path)
	if err != nil {
		return File{}, fmt.Errorf("history: %w", err)
	}
	defer fh.Close()
	f, err := Read(fh)
	if err != nil {
		return f, fmt.Errorf("%s: %w", path, err)
	}
	return f, nil
}

// ReadFiles reads and merges the history files of one run. A directory
// stands for the *.jsonl files in it.
func ReadFiles(paths ...string) (*History, error) {
	var files []File
	for _, p := range paths {
		names := []string{p}
		if st, err := os.Stat(p); err == nil && st.IsDir() {
			names, err = filepath.Glob(filepath.Join(p, "*.jsonl"))
			if err != nil {
				return nil, fmt.Errorf("history: %w", err)
			}
			if len(names) == 0 {
				return nil, fmt.Errorf("history: no *.jsonl file in %s", p)
			}
		}
		for _, name := range names {
			f, err := ReadFile(name)
			if err != nil {
				return nil, err
			}
			files = append(files, f)
		}
	}
	return Merge(files...)
}

// Merge merges the files of one run into one order: by time, each file's
// events kept in their own order (a clock that stepped back inside one
// process cannot reorder it), ties by process then sequence number. The
// files must agree on Run, Seed and Profile and name distinct processes.
func Merge(files ...File) (*History, error) {
	if len(files) == 0 {
		return nil, errors.New("history: no file")
	}
	h := &History{Header: files[0].Header}
	h.Header.Proc = ""
	seen := map[string]bool{}
	total := 0
	for _, f := range files {
		fh := f.Header
		if fh.Run != h.Header.Run || fh.Seed != h.Header.Seed || fh.Profile != h.Header.Profile {
			return nil, fmt.Errorf("history: process %s's file is of run %q (seed %d, profile %q), not %q (seed %d, profile %q)",
				fh.Proc, fh.Run, fh.Seed, fh.Profile, h.Header.Run, h.Header.Seed, h.Header.Profile)
		}
		if seen[fh.Proc] {
			return nil, fmt.Errorf("history: two files of process %s", fh.Proc)
		}
		seen[fh.Proc] = true
		h.Procs = append(h.Procs, fh.Proc)
		if f.Truncated {
			h.Truncated++
		}
		total += len(f.Events)
	}
	// A k-way merge: the next event is the earliest head of a file.
	heads := make([]int, len(files))
	order := make([]int, len(files))
	for i := range order {
		order[i] = i
	}
	h.Events = make([]Event, 0, total)
	for len(h.Events) < total {
		best := -1
		for _, i := range order {
			if heads[i] == len(files[i].Events) {
				continue
			}
			if best < 0 || before(files[i].Events[heads[i]], files[best].Events[heads[best]]) {
				best = i
			}
		}
		e := files[best].Events[heads[best]]
		heads[best]++
		e.Pos = len(h.Events) + 1
		h.Events = append(h.Events, e)
	}
	return h, nil
}

func before(a, b Event) bool {
	if a.T != b.T {
		return a.T < b.T
	}
	if a.Proc != b.Proc {
		return a.Proc < b.Proc
	}
	return a.Seq < b.Seq
}

// New returns a history of events already in their order (one writer's,
// such as a simulation's), numbering them from 1.
func New(h Header, events []Event) *History {
	out := &History{Header: h, Events: append([]Event(nil), events...)}
	procs := map[string]bool{}
	for i := range out.Events {
		out.Events[i].Pos = i + 1
		if p := out.Events[i].Proc; !procs[p] {
			procs[p] = true
			out.Procs = append(out.Procs, p)
		}
	}
	return out
}
