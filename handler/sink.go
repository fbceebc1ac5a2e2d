package handler

import (
	"context"
	"sync"
)

// Sink persists a finished summary. Save is called inside the guarded
// operation, after the provider answered: a sink that can (package
// dynamosink) attaches its write to the idempotency record's completion, so
// the answer and the record commit together or not at all.
type Sink interface {
	Save(ctx context.Context, s Summary) error
}

// MemorySink is a [Sink] in memory, keyed by [Summary.ID]: for local runs
// with the in-memory store, and tests. It writes at once, not with the
// record's completion. The zero value is ready to use.
type MemorySink struct {
	mu sync.Mutex
	m  map[string]Summary
}

var _ Sink = (*MemorySink)(nil)

// Save implements [Sink].
func (s *MemorySink) Save(_ context.Context, sum Summary) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.m == nil {
		s.m = make(map[string]Summary)
	}
	s.m[sum.ID] = sum
	return nil
}

// Get returns the summary saved under id.
func (s *MemorySink) Get(id string) (Summary, bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	sum, ok := s.m[id]
	return sum, ok
}

// Len returns the number of summaries saved.
func (s *MemorySink) Len() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return len(s.m)
}
