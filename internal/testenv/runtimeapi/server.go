package runtimeapi

import (
	"context"
	"crypto/rand"
	"encoding/base64"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"strconv"
	"strings"
	"sync"
	"time"
)

// The Runtime API's paths, as aws-lambda-go's client calls them.
const (
	pathNext      = "/2018-06-01/runtime/invocation/next"
	pathInvoke    = "/2018-06-01/runtime/invocation/"
	pathInitError = "/2018-06-01/runtime/init/error"
)

// The headers of a /next response that carry an invocation's metadata, and
// of the runtime's error reports.
const (
	HeaderRequestID   = "Lambda-Runtime-Aws-Request-Id"       // the request id, in the answer's path
	HeaderDeadlineMS  = "Lambda-Runtime-Deadline-Ms"          // the deadline, Unix milliseconds
	HeaderFunctionARN = "Lambda-Runtime-Invoked-Function-Arn" // the invoked function's ARN
	HeaderTraceID     = "Lambda-Runtime-Trace-Id"             // the X-Ray trace header
	HeaderTenantID    = "Lambda-Runtime-Aws-Tenant-Id"        // the tenant, in tenant isolation mode only
	// HeaderErrorType names an error's type: a header of /error and
	// /init/error, or a trailer of /response when the runtime failed to
	// read its own response.
	HeaderErrorType  = "Lambda-Runtime-Function-Error-Type"
	trailerErrorBody = "Lambda-Runtime-Function-Error-Body" // base64 of the error's JSON
)

// DefaultTimeout is an invocation's timeout when neither the invocation nor
// the server sets one: Lambda's default function timeout.
const DefaultTimeout = 3 * time.Second

// DefaultFunctionARN is the invoked function's ARN when none is set.
const DefaultFunctionARN = "arn:aws:lambda:us-east-1:123456789012:function:function"

// ErrClosed is returned by [Server.Enqueue] after [Server.Shutdown] or
// [Server.Close], and by [Call.Wait] for an invocation the server closed
// before it was answered.
var ErrClosed = errors.New("runtimeapi: server shut down")

// Invocation is one invocation to hand to the runtime. Only Payload is
// required.
type Invocation struct {
	Payload []byte // the event, as the function's handler receives it

	// RequestID is Lambda-Runtime-Aws-Request-Id. Default: a new random
	// UUID. It must be unique on the server.
	RequestID string
	// Timeout is the time from the moment the runtime receives the
	// invocation to its deadline (Lambda-Runtime-Deadline-Ms). Default
	// the server's, [DefaultTimeout] unless [Config.Timeout] says
	// otherwise.
	Timeout time.Duration
	// Deadline, when set, is the deadline itself, whenever the runtime
	// receives the invocation; it overrides Timeout.
	Deadline time.Time
	// FunctionARN is Lambda-Runtime-Invoked-Function-Arn. Default the
	// server's.
	FunctionARN string
	// TenantID is Lambda-Runtime-Aws-Tenant-Id, sent only when not empty
	// (a function in tenant isolation mode).
	TenantID string
	// TraceID is Lambda-Runtime-Trace-Id. Default: a new, unsampled X-Ray
	// trace header.
	TraceID string
}

// FunctionError is what the runtime posted to /error (or /init/error):
// the function returned an error or panicked.
type FunctionError struct {
	Type    string          // errorType, or the Lambda-Runtime-Function-Error-Type header when the body has none
	Message string          // errorMessage
	Body    json.RawMessage // the whole body as posted
}

func (e *FunctionError) Error() string {
	return "runtimeapi: function error " + e.Type + ": " + e.Message
}

// Result is what happened to one invocation.
type Result struct {
	RequestID string
	TenantID  string
	TraceID   string
	Deadline  time.Time // as sent in Lambda-Runtime-Deadline-Ms (millisecond precision)
	HandedOut time.Time // when a /next request received it
	Answered  time.Time // when its /response or /error arrived

	// Response is what the runtime posted to /response; nil when it
	// posted to /error.
	Response    []byte
	ContentType string // the /response request's Content-Type
	// Err is what the runtime posted to /error; nil after /response.
	Err *FunctionError
}

// Late reports whether the invocation was answered after its deadline.
// The server, like Lambda Managed Instances, does not end an invocation at
// its deadline: the answer is recorded whenever it comes.
func (r Result) Late() bool { return r.Answered.After(r.Deadline) }

// Call is an invocation enqueued on a [Server].
type Call struct {
	inv  Invocation
	done chan struct{} // closed when answered, or when the server closed
	res  Result        // written under Server.mu; read after done
	out  bool          // handed out (under Server.mu)
}

// RequestID returns the invocation's request id.
func (c *Call) RequestID() string { return c.inv.RequestID }

// Done is closed when the invocation has been answered (or the server
// closed first).
func (c *Call) Done() <-chan struct{} { return c.done }

// Wait waits until the invocation is answered and returns its result. A
// function error is in [Result.Err], not in the error, which is ctx's or
// [ErrClosed].
func (c *Call) Wait(ctx context.Context) (Result, error) {
	select {
	case <-c.done:
		if c.res.Answered.IsZero() {
			return c.res, ErrClosed
		}
		return c.res, nil
	case <-ctx.Done():
		return Result{}, ctx.Err()
	}
}

// Server is a Lambda Runtime API on a loopback port: it hands the
// invocations enqueued with [Server.Enqueue] to the /next requests of the
// runtime, any number of them at once, and records their answers. It is
// safe for concurrent use.
type Server struct {
	srv     *http.Server
	addr    string
	served  chan struct{} // closed when Serve returned
	timeout time.Duration // default Invocation.Timeout
	arn     string        // default Invocation.FunctionARN

	mu          sync.Mutex
	changed     chan struct{} // closed and replaced on every change of state
	queue       []*Call       // enqueued, not yet handed out
	calls       map[string]*Call
	order       []*Call // every call, in the order enqueued
	inFlight    int     // handed out, not answered
	maxInFlight int
	polling     int // /next requests waiting now
	gone        int // /next requests answered 410
	shutdown    bool
	closed      bool
	initErr     *FunctionError
	errs        []error // protocol errors: answers the server refused
}

// NewServer starts a Runtime API on a free 127.0.0.1 port. Close it with
// [Server.Close].
func NewServer() (*Server, error) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return nil, fmt.Errorf("runtimeapi: %w", err)
	}
	s := &Server{
		addr:    l.Addr().String(),
		served:  make(chan struct{}),
		timeout: DefaultTimeout,
		arn:     DefaultFunctionARN,
		changed: make(chan struct{}),
		calls:   map[string]*Call{},
	}
	mux := http.NewServeMux()
	mux.HandleFunc("GET "+pathNext, s.next)
	mux.HandleFunc("POST "+pathInvoke+"{id}/response", s.answer)
	mux.HandleFunc("POST "+pathInvoke+"{id}/error", s.answer)
	mux.HandleFunc("POST "+pathInitError, s.initError)
	s.srv = &http.Server{Handler: mux, ReadHeaderTimeout: 10 * time.Second}
	go func() {
		_ = s.srv.Serve(l)
		close(s.served)
	}()
	return s, nil
}

// Addr returns the server's host:port, the value of AWS_LAMBDA_RUNTIME_API.
func (s *Server) Addr() string { return s.addr }

// broadcast wakes every waiter. Call it with s.mu held.
func (s *Server) broadcast() {
	close(s.changed)
	s.changed = make(chan struct{})
}

// Enqueue queues inv for the next /next request and returns its [Call] at
// once. It fails for a request id already used, and after
// [Server.Shutdown].
func (s *Server) Enqueue(inv Invocation) (*Call, error) {
	if inv.RequestID == "" {
		inv.RequestID = newUUID()
	}
	if inv.TraceID == "" {
		inv.TraceID = newTraceID()
	}
	if inv.FunctionARN == "" {
		inv.FunctionARN = s.arn
	}
	if inv.Timeout == 0 {
		inv.Timeout = s.timeout
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.shutdown {
		return nil, ErrClosed
	}
	if _, ok := s.calls[inv.RequestID]; ok {
		return nil, fmt.Errorf("runtimeapi: request id %q already enqueued", inv.RequestID)
	}
	c := &Call{inv: inv, done: make(chan struct{}), res: Result{RequestID: inv.RequestID, TenantID: inv.TenantID, TraceID: inv.TraceID}}
	s.calls[inv.RequestID] = c
	s.order = append(s.order, c)
	s.queue = append(s.queue, c)
	s.broadcast()
	return c, nil
}

// Call enqueues inv and waits for its answer: [Server.Enqueue] and
// [Call.Wait].
func (s *Server) Call(ctx context.Context, inv Invocation) (Result, error) {
	c, err := s.Enqueue(inv)
	if err != nil {
		return Result{}, err
	}
	return c.Wait(ctx)
}

// next serves GET /next: it holds the request until an invocation is
// queued, and answers 410 Gone once the server is shut down and nothing is
// queued or in flight.
func (s *Server) next(w http.ResponseWriter, r *http.Request) {
	s.mu.Lock()
	s.polling++
	s.broadcast()
	var c *Call
	for {
		if len(s.queue) > 0 {
			c, s.queue = s.queue[0], s.queue[1:]
			break
		}
		if s.shutdown && s.inFlight == 0 {
			s.polling--
			s.gone++
			s.broadcast()
			s.mu.Unlock()
			writeError(w, http.StatusGone, "Runtime.Gone", "the test's runtime API is shut down")
			return
		}
		ch := s.changed
		s.mu.Unlock()
		select {
		case <-ch:
		case <-r.Context().Done():
			s.mu.Lock()
			s.polling--
			s.broadcast()
			s.mu.Unlock()
			return
		}
		s.mu.Lock()
	}
	s.polling--
	now := time.Now()
	deadline := c.inv.Deadline
	if deadline.IsZero() {
		deadline = now.Add(c.inv.Timeout)
	}
	c.out = true
	c.res.HandedOut = now
	c.res.Deadline = time.UnixMilli(deadline.UnixMilli())
	s.inFlight++
	s.maxInFlight = max(s.maxInFlight, s.inFlight)
	s.broadcast()
	inv := c.inv
	s.mu.Unlock()

	h := w.Header()
	h.Set(HeaderRequestID, inv.RequestID)
	h.Set(HeaderDeadlineMS, strconv.FormatInt(deadline.UnixMilli(), 10))
	h.Set(HeaderFunctionARN, inv.FunctionARN)
	h.Set(HeaderTraceID, inv.TraceID)
	if inv.TenantID != "" {
		h.Set(HeaderTenantID, inv.TenantID)
	}
	h.Set("Content-Type", "application/json")
	_, _ = w.Write(inv.Payload)
}

// answer serves POST /{id}/response and /{id}/error: 202 for the first
// answer of an invocation handed out, 400 (and a protocol error) for any
// other.
func (s *Server) answer(w http.ResponseWriter, r *http.Request) {
	id := r.PathValue("id")
	body, err := io.ReadAll(r.Body)
	if err != nil {
		s.refuse(w, http.StatusBadRequest, "InvalidRequest", fmt.Errorf("runtimeapi: %s: reading the body: %w", r.URL.Path, err))
		return
	}
	var ferr *FunctionError
	switch {
	case strings.HasSuffix(r.URL.Path, "/error"):
		ferr = functionError(body, r.Header.Get(HeaderErrorType))
	case r.Trailer.Get(HeaderErrorType) != "":
		// The runtime failed to read its own response and said so in the
		// trailers: Lambda reports a function error.
		ferr = &FunctionError{Type: r.Trailer.Get(HeaderErrorType)}
		if b, err := base64.StdEncoding.DecodeString(r.Trailer.Get(trailerErrorBody)); err == nil {
			ferr = functionError(b, ferr.Type)
		}
	}
	now := time.Now()
	s.mu.Lock()
	c := s.calls[id]
	switch {
	case s.closed:
		s.mu.Unlock()
		writeError(w, http.StatusGone, "Runtime.Gone", "the test's runtime API is closed")
		return
	case c == nil:
		s.mu.Unlock()
		s.refuse(w, http.StatusBadRequest, "InvalidRequestID", fmt.Errorf("runtimeapi: %s for unknown request id %q", r.URL.Path, id))
		return
	case !c.out:
		s.mu.Unlock()
		s.refuse(w, http.StatusBadRequest, "InvalidStateTransition", fmt.Errorf("runtimeapi: %s for request id %q, not handed out yet", r.URL.Path, id))
		return
	case !c.res.Answered.IsZero():
		s.mu.Unlock()
		s.refuse(w, http.StatusBadRequest, "InvalidStateTransition", fmt.Errorf("runtimeapi: %s for request id %q, answered already", r.URL.Path, id))
		return
	}
	c.res.Answered = now
	if ferr != nil {
		c.res.Err = ferr
	} else {
		c.res.Response = body
		c.res.ContentType = r.Header.Get("Content-Type")
	}
	s.inFlight--
	close(c.done)
	s.broadcast()
	s.mu.Unlock()
	w.WriteHeader(http.StatusAccepted)
	_, _ = io.WriteString(w, `{"status":"OK"}`)
}

// initError serves POST /init/error.
func (s *Server) initError(w http.ResponseWriter, r *http.Request) {
	body, _ := io.ReadAll(r.Body)
	s.mu.Lock()
	if s.initErr == nil {
		s.initErr = functionError(body, r.Header.Get(HeaderErrorType))
	}
	s.broadcast()
	s.mu.Unlock()
	w.WriteHeader(http.StatusAccepted)
	_, _ = io.WriteString(w, `{"status":"OK"}`)
}

// refuse answers status and records err.
func (s *Server) refuse(w http.ResponseWriter, status int, typ string, err error) {
	s.mu.Lock()
	s.errs = append(s.errs, err)
	s.broadcast()
	s.mu.Unlock()
	writeError(w, status, typ, err.Error())
}

func writeError(w http.ResponseWriter, status int, typ, msg string) {
	b, _ := json.Marshal(map[string]string{"errorType": typ, "errorMessage": msg})
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	_, _ = w.Write(b)
}

func functionError(body []byte, headerType string) *FunctionError {
	var e struct {
		Type    string `json:"errorType"`
		Message string `json:"errorMessage"`
	}
	_ = json.Unmarshal(body, &e)
	if e.Type == "" {
		e.Type = headerType
	}
	fe := &FunctionError{Type: e.Type, Message: e.Message}
	if json.Valid(body) {
		fe.Body = append(json.RawMessage(nil), body...)
	}
	return fe
}

// Results returns the result of every invocation, in the order enqueued;
// one not answered yet has a zero Answered (and one not handed out a zero
// HandedOut).
func (s *Server) Results() []Result {
	s.mu.Lock()
	defer s.mu.Unlock()
	out := make([]Result, len(s.order))
	for i, c := range s.order {
		out[i] = c.res
	}
	return out
}

// MaxInFlight returns the most invocations that were handed out and not
// yet answered at one moment.
func (s *Server) MaxInFlight() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.maxInFlight
}

// Polling returns how many /next requests are waiting for an invocation now:
// the runtime's idle workers.
func (s *Server) Polling() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.polling
}

// WaitPolling waits until at least n /next requests are waiting at once:
// the runtime has finished its init and has n idle workers.
func (s *Server) WaitPolling(ctx context.Context, n int) error {
	for {
		s.mu.Lock()
		ok, ch := s.polling >= n, s.changed
		s.mu.Unlock()
		if ok {
			return nil
		}
		select {
		case <-ch:
		case <-ctx.Done():
			return fmt.Errorf("runtimeapi: waiting for %d /next requests (%d now): %w", n, s.Polling(), ctx.Err())
		}
	}
}

// InitError returns what the runtime posted to /init/error, or nil.
func (s *Server) InitError() *FunctionError {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.initErr
}

// Err returns the protocol errors seen, joined: answers for an unknown
// request id, for one not handed out, or a second answer for one. Nil
// when the runtime kept to the protocol.
func (s *Server) Err() error {
	s.mu.Lock()
	defer s.mu.Unlock()
	return errors.Join(s.errs...)
}

// Gone returns how many /next requests were answered 410 Gone.
func (s *Server) Gone() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.gone
}

// Shutdown makes the server refuse new invocations and answer every /next
// request 410 Gone once no invocation is queued or in flight: aws-lambda-go's
// runtime loop then returns its error and the process exits (status 1). It
// does not wait.
func (s *Server) Shutdown() {
	s.mu.Lock()
	s.shutdown = true
	s.broadcast()
	s.mu.Unlock()
}

// Close shuts the server down at once: the listener and every connection
// close, and the invocations not answered end with [ErrClosed].
func (s *Server) Close() error {
	s.mu.Lock()
	if s.closed {
		s.mu.Unlock()
		return nil
	}
	s.closed, s.shutdown = true, true
	for _, c := range s.order {
		if c.res.Answered.IsZero() {
			close(c.done)
		}
	}
	s.broadcast()
	s.mu.Unlock()
	err := s.srv.Close()
	<-s.served
	if err != nil {
		return fmt.Errorf("runtimeapi: %w", err)
	}
	return nil
}

// newUUID returns a random (version 4) UUID, as Lambda's request ids are.
func newUUID() string {
	var b [16]byte
	_, _ = rand.Read(b[:])
	b[6] = b[6]&0x0f | 0x40
	b[8] = b[8]&0x3f | 0x80
	h := hex.EncodeToString(b[:])
	return h[0:8] + "-" + h[8:12] + "-" + h[12:16] + "-" + h[16:20] + "-" + h[20:]
}

// newTraceID returns an X-Ray trace header, not sampled.
func newTraceID() string {
	var root [12]byte
	var parent [8]byte
	_, _ = rand.Read(root[:])
	_, _ = rand.Read(parent[:])
	return fmt.Sprintf("Root=1-%08x-%s;Parent=%s;Sampled=0", time.Now().Unix(), hex.EncodeToString(root[:]), hex.EncodeToString(parent[:]))
}
