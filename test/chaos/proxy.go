package chaos

import (
	"bytes"
	"fmt"
	"io"
	"math/rand/v2"
	"net"
	"net/http"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/sqsonce/sqsonce/test/history"
)

// StoreFaults are the probabilities, per DynamoDB request, of each fault the
// proxy injects. At most one fault hits a request.
type StoreFaults struct {
	ServerError float64 // answer 500 InternalServerError without forwarding
	Throttle    float64 // answer 400 ThrottlingException without forwarding
	ResetBefore float64 // reset the connection without forwarding
	ResetAfter  float64 // forward, then reset the connection instead of answering: the write was applied
}

func (f StoreFaults) any() bool {
	return f.ServerError+f.Throttle+f.ResetBefore+f.ResetAfter > 0
}

// The faults, as counted.
const (
	faultServerError = "5xx"
	faultThrottle    = "throttle"
	faultResetBefore = "reset_before"
	faultResetAfter  = "reset_after"
)

// proxy is a fault-injecting HTTP proxy in front of DynamoDB. Faults are
// drawn from a seeded generator while on.
type proxy struct {
	upstream string
	faults   StoreFaults
	on       atomic.Bool
	client   *http.Client
	hist     *history.Writer // each fault injected; nil for none

	mu     sync.Mutex
	rng    *rand.Rand
	counts map[string]int // by fault
	total  int            // requests
}

func newProxy(upstream string, faults StoreFaults, seed uint64) *proxy {
	p := &proxy{
		upstream: strings.TrimSuffix(upstream, "/"),
		faults:   faults,
		rng:      rand.New(rand.NewPCG(seed, 0xfa17)),
		counts:   map[string]int{},
		client: &http.Client{
			Timeout:   30 * time.Second,
			Transport: &http.Transport{MaxIdleConnsPerHost: 64, IdleConnTimeout: 30 * time.Second},
		},
	}
	p.on.Store(faults.any())
	return p
}

// pick draws the fault for one request, "" for none.
func (p *proxy) pick() string {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.total++
	if !p.on.Load() {
		return ""
	}
	x := p.rng.Float64()
	f := ""
	for _, c := range []struct {
		p    float64
		name string
	}{
		{p.faults.ServerError, faultServerError},
		{p.faults.Throttle, faultThrottle},
		{p.faults.ResetBefore, faultResetBefore},
		{p.faults.ResetAfter, faultResetAfter},
	} {
		if x < c.p {
			f = c.name
			break
		}
		x -= c.p
	}
	if f != "" {
		p.counts[f]++
	}
	return f
}

func (p *proxy) stats() (map[string]int, int) {
	p.mu.Lock()
	defer p.mu.Unlock()
	m := make(map[string]int, len(p.counts))
	for k, v := range p.counts {
		m[k] = v
	}
	return m, p.total
}

func (p *proxy) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	body, err := io.ReadAll(r.Body)
	if err != nil {
		reset(w)
		return
	}
	fault := p.pick()
	p.record(fault, r)
	switch fault {
	case faultServerError:
		awsError(w, http.StatusInternalServerError, "com.amazonaws.dynamodb.v20120810#InternalServerError", "chaos: injected server error")
		return
	case faultThrottle:
		awsError(w, http.StatusBadRequest, "com.amazon.coral.availability#ThrottlingException", "chaos: injected throttling")
		return
	case faultResetBefore:
		reset(w)
		return
	}
	req, err := http.NewRequestWithContext(r.Context(), r.Method, p.upstream+r.URL.RequestURI(), bytes.NewReader(body))
	if err != nil {
		reset(w)
		return
	}
	req.Header = r.Header.Clone()
	resp, err := p.client.Do(req)
	if err != nil {
		reset(w)
		return
	}
	out, err := io.ReadAll(resp.Body)
	resp.Body.Close()
	if err != nil || fault == faultResetAfter {
		reset(w)
		return
	}
	for k, vs := range resp.Header {
		for _, v := range vs {
			w.Header().Add(k, v)
		}
	}
	w.WriteHeader(resp.StatusCode)
	_, _ = w.Write(out)
}

// faultKinds are the history's names of the proxy's faults.
var faultKinds = map[string]history.Fault{
	faultServerError: history.FaultErrorResponse,
	faultThrottle:    history.FaultErrorResponse,
	faultResetBefore: history.FaultDropRequest,
	faultResetAfter:  history.FaultDropResponse,
}

// record writes fault, injected into r, to the proxy's history: Op is the
// DynamoDB call, Class the proxy's own name of the fault. Every worker
// shares the proxy, so the fault names no target.
func (p *proxy) record(fault string, r *http.Request) {
	if fault == "" || p.hist == nil {
		return
	}
	op := r.Header.Get("X-Amz-Target")
	op = op[strings.LastIndexByte(op, '.')+1:]
	_ = p.hist.Write(history.Event{Ev: history.KindFault, Fault: faultKinds[fault], Op: op, Class: fault})
}

func awsError(w http.ResponseWriter, status int, typ, msg string) {
	w.Header().Set("Content-Type", "application/x-amz-json-1.0")
	w.Header().Set("X-Amzn-Errortype", typ[strings.LastIndexByte(typ, '#')+1:])
	w.WriteHeader(status)
	fmt.Fprintf(w, `{"__type":%q,"message":%q}`, typ, msg)
}

// reset closes the client's connection with a TCP RST.
func reset(w http.ResponseWriter) {
	hj, ok := w.(http.Hijacker)
	if !ok {
		panic(http.ErrAbortHandler)
	}
	conn, _, err := hj.Hijack()
	if err != nil {
		return
	}
	if tc, ok := conn.(*net.TCPConn); ok {
		_ = tc.SetLinger(0)
	}
	_ = conn.Close()
}
