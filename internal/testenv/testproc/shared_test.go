package testproc

import (
	"errors"
	"strings"
	"sync"
	"testing"
)

// TestShared checks that a Shared starts its server once however many ask
// at once, stops it once however often it is closed, and names its package
// in the error of a start that failed.
func TestShared(t *testing.T) {
	var starts, stops int
	s := NewShared("fakeserver", "no hint", func() (string, func() error, error) {
		starts++
		return "127.0.0.1:1", func() error { stops++; return nil }, nil
	})
	var wg sync.WaitGroup
	for range 8 {
		wg.Go(func() {
			if got := s.Addr(t); got != "127.0.0.1:1" {
				t.Errorf("Addr = %q, want 127.0.0.1:1", got)
			}
		})
	}
	wg.Wait()
	if got, err := s.Start(); got != "127.0.0.1:1" || err != nil {
		t.Errorf("Start = %q, %v; want 127.0.0.1:1, nil", got, err)
	}
	for range 2 {
		if err := s.Close(); err != nil {
			t.Errorf("Close: %v", err)
		}
	}
	if starts != 1 || stops != 1 {
		t.Errorf("started %d times, stopped %d times; want 1 and 1", starts, stops)
	}

	failed := NewShared("fakeserver", "no hint", func() (string, func() error, error) {
		return "", nil, errors.New("no such program")
	})
	if _, err := failed.Start(); err == nil || !strings.HasPrefix(err.Error(), "fakeserver: no such program") {
		t.Errorf("Start of a server that cannot start: %v, want fakeserver: no such program", err)
	}
	if err := failed.Close(); err != nil {
		t.Errorf("Close of a server never started: %v", err)
	}
}
