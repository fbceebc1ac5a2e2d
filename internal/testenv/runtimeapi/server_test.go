package runtimeapi_test

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/sqsonce/sqsonce/internal/testenv/runtimeapi"
)

// runtime is a minimal runtime client: what aws-lambda-go's does, by hand.
type runtime struct {
	t    *testing.T
	base string
}

func (r runtime) do(method, path, body string, header http.Header) *http.Response {
	r.t.Helper()
	req, err := http.NewRequestWithContext(r.t.Context(), method, "http://"+r.base+path, strings.NewReader(body))
	if err != nil {
		r.t.Fatal(err)
	}
	for k, v := range header {
		req.Header[k] = v
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		r.t.Fatal(err)
	}
	_, _ = io.Copy(io.Discard, resp.Body)
	resp.Body.Close()
	return resp
}

// TestProtocol drives the server by hand: the headers of /next, 202 for
// an answer, 400 and a protocol error for an answer to an unknown id, to
// one not handed out, or a second one; /init/error kept; 410 Gone after
// Shutdown once nothing is in flight.
func TestProtocol(t *testing.T) {
	s, err := runtimeapi.NewServer()
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	rt := runtime{t, s.Addr()}
	const next = "/2018-06-01/runtime/invocation/next"

	deadline := time.Now().Add(time.Minute).Truncate(time.Millisecond)
	a, err := s.Enqueue(runtimeapi.Invocation{Payload: []byte(`{"a":1}`), RequestID: "a", TenantID: "t1", TraceID: "Root=1-x", Deadline: deadline})
	if err != nil {
		t.Fatal(err)
	}
	b, _ := s.Enqueue(runtimeapi.Invocation{Payload: []byte(`{}`), RequestID: "b"})
	if _, err := s.Enqueue(runtimeapi.Invocation{RequestID: "a"}); err == nil {
		t.Error("a second invocation with request id a was enqueued")
	}

	resp := rt.do("GET", next, "", nil)
	h := resp.Header
	if resp.StatusCode != 200 || h.Get(runtimeapi.HeaderRequestID) != "a" || h.Get(runtimeapi.HeaderTenantID) != "t1" ||
		h.Get(runtimeapi.HeaderTraceID) != "Root=1-x" || h.Get(runtimeapi.HeaderDeadlineMS) != itoa(deadline.UnixMilli()) ||
		h.Get(runtimeapi.HeaderFunctionARN) != runtimeapi.DefaultFunctionARN {
		t.Errorf("/next: %d %v", resp.StatusCode, h)
	}
	if got := rt.do("POST", "/2018-06-01/runtime/invocation/b/response", "{}", nil).StatusCode; got != 400 {
		t.Errorf("answer for an invocation not handed out: %d, want 400", got)
	}
	if got := rt.do("POST", "/2018-06-01/runtime/invocation/zzz/response", "{}", nil).StatusCode; got != 400 {
		t.Errorf("answer for an unknown id: %d, want 400", got)
	}
	if got := rt.do("POST", "/2018-06-01/runtime/invocation/a/response", `"ok"`, http.Header{"Content-Type": {"application/json"}}).StatusCode; got != 202 {
		t.Errorf("/response: %d, want 202", got)
	}
	if got := rt.do("POST", "/2018-06-01/runtime/invocation/a/error", `{}`, nil).StatusCode; got != 400 {
		t.Errorf("second answer: %d, want 400", got)
	}
	r, err := a.Wait(t.Context())
	if err != nil || string(r.Response) != `"ok"` || r.ContentType != "application/json" || r.Err != nil || r.TenantID != "t1" {
		t.Errorf("a: %+v, %v", r, err)
	}
	if err := s.Err(); err == nil || strings.Count(err.Error(), "\n") != 2 {
		t.Errorf("protocol errors: %v, want three", err)
	}

	if got := rt.do("POST", "/2018-06-01/runtime/init/error", `{"errorType":"Runtime.Bad","errorMessage":"no config"}`, nil).StatusCode; got != 202 {
		t.Errorf("/init/error: %d, want 202", got)
	}
	if e := s.InitError(); e == nil || e.Type != "Runtime.Bad" || e.Message != "no config" {
		t.Errorf("InitError %+v", e)
	}

	// b is handed out, then Shutdown: /next waits for b's answer, then 410.
	if h := rt.do("GET", next, "", nil).Header; h.Get(runtimeapi.HeaderRequestID) != "b" || h.Get(runtimeapi.HeaderTenantID) != "" {
		t.Errorf("/next for b: %v", h)
	}
	s.Shutdown()
	gone := make(chan int, 1)
	go func() { gone <- rt.do("GET", next, "", nil).StatusCode }()
	select {
	case code := <-gone:
		t.Fatalf("/next answered %d with b in flight", code)
	case <-time.After(100 * time.Millisecond):
	}
	rt.do("POST", "/2018-06-01/runtime/invocation/b/error", `{"errorType":"T","errorMessage":"m"}`, http.Header{"Content-Type": {"application/json"}})
	if code := <-gone; code != http.StatusGone || s.Gone() != 1 {
		t.Errorf("/next after Shutdown: %d (%d 410s), want 410", code, s.Gone())
	}
	if r, _ := b.Wait(t.Context()); r.Err == nil || r.Err.Type != "T" || r.Response != nil {
		t.Errorf("b: %+v", r)
	}
	if _, err := s.Enqueue(runtimeapi.Invocation{}); !errors.Is(err, runtimeapi.ErrClosed) {
		t.Errorf("Enqueue after Shutdown: %v", err)
	}
	if got := s.MaxInFlight(); got != 1 {
		t.Errorf("MaxInFlight %d, want 1", got)
	}
}

// TestCloseUnanswered: Close ends the waits of the invocations it leaves
// unanswered with ErrClosed.
func TestCloseUnanswered(t *testing.T) {
	s, err := runtimeapi.NewServer()
	if err != nil {
		t.Fatal(err)
	}
	c, _ := s.Enqueue(runtimeapi.Invocation{Payload: []byte(`{}`)})
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(t.Context(), 5*time.Second)
	defer cancel()
	if _, err := c.Wait(ctx); !errors.Is(err, runtimeapi.ErrClosed) {
		t.Errorf("Wait: %v, want ErrClosed", err)
	}
}

func itoa(n int64) string { return fmt.Sprint(n) }
