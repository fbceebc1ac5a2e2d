package linearize

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"math/rand/v2"
	"net"
	"net/http"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/anishathalye/porcupine"
	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/aws/ratelimit"
	"github.com/aws/aws-sdk-go-v2/aws/retry"
	awshttp "github.com/aws/aws-sdk-go-v2/aws/transport/http"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"

	"github.com/sqsonce/sqsonce/internal/testenv/motoserver"
	"github.com/sqsonce/sqsonce/middleware/idempotency/dynamostore"
)

// The faults of the DynamoDB proxy, per request: at most one hits it.
const (
	dropRequest   = 0.03 // reset the connection without forwarding
	dropResponse  = 0.03 // forward, then reset the connection: the write was applied
	errorResponse = 0.03 // forward, then answer 500: applied, and the SDK sends it again
	stallResponse = 0.01 // forward, then answer nothing until the client gives up

	// attemptTimeout is the client's limit on one HTTP attempt, which a
	// stalled answer reaches.
	attemptTimeout = 500 * time.Millisecond
)

// clientHeader names the client a request comes from, and opHeader the
// client's operation (a number), for the proxy's count of the writes each
// operation forwarded.
const (
	clientHeader = "X-Linearize-Client"
	opHeader     = "X-Linearize-Op"
)

// dynamoProxy is a fault-injecting HTTP proxy in front of moto_server. It
// counts, per client, the writes it forwarded during the client's
// operation (between begin and end), and forwards none of an operation
// that has ended (a request of an earlier operation of the client's, late
// to the proxy, is refused by its operation number), so that the count is
// all that operation's writes that may have been applied. It forwards one request of a client at a time,
// each to its answer even when the client is gone, and end waits for the
// one under way: an attempt the client sent again was answered by the
// server before the next was forwarded, and nothing of an operation lands
// after it returned.
type dynamoProxy struct {
	upstream string
	client   *http.Client
	faults   *tally
	srv      *http.Server
	ln       net.Listener

	mu    sync.Mutex
	rng   *rand.Rand
	open  map[string]bool   // by client: an operation is running
	op    map[string]string // by client: the operation running, or that ran last
	sent  map[string]int    // by client: writes forwarded in the running operation
	turn  map[string]*sync.Mutex
	conns map[net.Conn]bool
}

func newDynamoProxy(t *testing.T, upstream string, seed uint64, faults *tally) *dynamoProxy {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	p := &dynamoProxy{
		upstream: strings.TrimSuffix(upstream, "/"),
		client:   &http.Client{Transport: &http.Transport{MaxIdleConnsPerHost: 64}},
		faults:   faults,
		ln:       ln,
		rng:      rand.New(rand.NewPCG(seed, 0xd1a0)),
		open:     map[string]bool{},
		op:       map[string]string{},
		sent:     map[string]int{},
		turn:     map[string]*sync.Mutex{},
		conns:    map[net.Conn]bool{},
	}
	p.srv = &http.Server{Handler: p, ConnState: p.track}
	go func() { _ = p.srv.Serve(ln) }()
	t.Cleanup(func() { _ = p.srv.Close() })
	return p
}

func (p *dynamoProxy) URL() string { return "http://" + p.ln.Addr().String() }

func (p *dynamoProxy) track(c net.Conn, st http.ConnState) {
	p.mu.Lock()
	defer p.mu.Unlock()
	switch st {
	case http.StateNew:
		p.conns[c] = true
	case http.StateClosed, http.StateHijacked:
		delete(p.conns, c)
	}
}

// begin opens client's operation; end closes it and returns how many of
// its writes were forwarded.
func (p *dynamoProxy) begin(client string, op int64) {
	p.mu.Lock()
	p.open[client], p.sent[client], p.op[client] = true, 0, strconv.FormatInt(op, 10)
	p.mu.Unlock()
}

func (p *dynamoProxy) end(client string) int {
	turn := p.turnOf(client)
	turn.Lock() // the request under way, if any, answered
	defer turn.Unlock()
	p.mu.Lock()
	defer p.mu.Unlock()
	p.open[client] = false
	return p.sent[client]
}

// turnOf is the lock a client's requests take one at a time.
func (p *dynamoProxy) turnOf(client string) *sync.Mutex {
	p.mu.Lock()
	defer p.mu.Unlock()
	m := p.turn[client]
	if m == nil {
		m = &sync.Mutex{}
		p.turn[client] = m
	}
	return m
}

// killConns kills a random client connection (a reset), idle or in the
// middle of a request, every 50 to 200 ms until ctx ends.
func (p *dynamoProxy) killConns(ctx context.Context, _ func() float64) {
	for {
		p.mu.Lock()
		d := time.Duration(50+p.rng.IntN(151)) * time.Millisecond
		p.mu.Unlock()
		select {
		case <-ctx.Done():
			return
		case <-time.After(d):
		}
		p.mu.Lock()
		var victim net.Conn
		if n := len(p.conns); n > 0 {
			i := p.rng.IntN(n)
			for c := range p.conns {
				if i == 0 {
					victim = c
					break
				}
				i--
			}
			delete(p.conns, victim)
		}
		p.mu.Unlock()
		if victim != nil {
			if tc, ok := victim.(*net.TCPConn); ok {
				_ = tc.SetLinger(0)
			}
			_ = victim.Close()
			p.faults.add("conn_kill")
		}
	}
}

// decide draws the fault for one request and, for a write to be
// forwarded, counts it; it refuses to forward a write of an operation
// that has ended.
func (p *dynamoProxy) decide(r *http.Request) (fault string, forward bool) {
	target := r.Header.Get("X-Amz-Target")
	write := false
	for _, op := range []string{".PutItem", ".UpdateItem", ".DeleteItem", ".TransactWriteItems"} {
		write = write || strings.HasSuffix(target, op)
	}
	client := r.Header.Get(clientHeader)
	p.mu.Lock()
	defer p.mu.Unlock()
	switch x := p.rng.Float64(); {
	case x < dropRequest:
		fault = "drop_request"
	case x < dropRequest+dropResponse:
		fault = "drop_response"
	case x < dropRequest+dropResponse+errorResponse:
		fault = "error_response"
	case x < dropRequest+dropResponse+errorResponse+stallResponse:
		fault = "stall_response"
	}
	if fault == "drop_request" {
		return fault, false
	}
	if write {
		if !p.open[client] || r.Header.Get(opHeader) != p.op[client] {
			return "", false // its operation gave up: the write must not land after
		}
		p.sent[client]++
	}
	return fault, true
}

func (p *dynamoProxy) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	body, err := io.ReadAll(r.Body)
	if err != nil {
		reset(w)
		return
	}
	turn := p.turnOf(r.Header.Get(clientHeader))
	turn.Lock()
	fault, forward := p.decide(r)
	if fault != "" {
		p.faults.add(fault)
	}
	if !forward {
		turn.Unlock()
		reset(w)
		return
	}
	out, resp, err := p.forward(r, body)
	turn.Unlock()
	switch {
	case err != nil || fault == "drop_response":
		reset(w)
		return
	case fault == "error_response":
		w.Header().Set("Content-Type", "application/x-amz-json-1.0")
		w.WriteHeader(http.StatusInternalServerError)
		fmt.Fprint(w, `{"__type":"com.amazonaws.dynamodb.v20120810#InternalServerError","message":"injected: the answer was lost after the write"}`)
		return
	case fault == "stall_response":
		select {
		case <-r.Context().Done():
		case <-time.After(10 * time.Second):
		}
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

// forward sends the request to moto_server and reads its answer, to the
// end even when the client is gone.
func (p *dynamoProxy) forward(r *http.Request, body []byte) ([]byte, *http.Response, error) {
	req, err := http.NewRequestWithContext(context.WithoutCancel(r.Context()), r.Method, p.upstream+r.URL.RequestURI(), bytes.NewReader(body))
	if err != nil {
		return nil, nil, err
	}
	req.Header = r.Header.Clone()
	resp, err := p.client.Do(req)
	if err != nil {
		return nil, nil, err
	}
	defer resp.Body.Close()
	out, err := io.ReadAll(resp.Body)
	return out, resp, err
}

// reset closes the client's connection with a TCP RST.
func reset(w http.ResponseWriter) {
	hj, ok := w.(http.Hijacker)
	if !ok {
		panic(http.ErrAbortHandler)
	}
	c, _, err := hj.Hijack()
	if err != nil {
		return
	}
	if tc, ok := c.(*net.TCPConn); ok {
		_ = tc.SetLinger(0)
	}
	_ = c.Close()
}

// naming is an HTTP client that names its client and the client's
// operation to the proxy.
type naming struct {
	client string
	op     *atomic.Int64
	next   aws.HTTPClient
}

func (n naming) Do(req *http.Request) (*http.Response, error) {
	req.Header.Set(clientHeader, n.client)
	req.Header.Set(opHeader, strconv.FormatInt(n.op.Load(), 10))
	return n.next.Do(req)
}

// TestDynamoDB: dynamostore's record operations on moto_server, by
// concurrent clients through a proxy that drops requests and answers and
// kills connections, with the SDK's own retries sending applied writes
// again, are linearizable.
func TestDynamoDB(t *testing.T) {
	t.Parallel()
	cfg := defaults()
	base := moto.DynamoDB(t)
	table := motoserver.NewTable(t, base)
	s := subject{name: "dynamodb", adapter: adapter{unit: time.Millisecond, seconds: true}, settles: true, faults: newTally()}
	p := newDynamoProxy(t, moto.Endpoint(t), cfg.seed, s.faults)
	s.inject = append(s.inject, p.killConns)
	for i := range *flagClients {
		name := fmt.Sprintf("c%d", i)
		op := new(atomic.Int64)
		db := dynamodb.NewFromConfig(moto.Config(t), func(o *dynamodb.Options) {
			o.BaseEndpoint = aws.String(p.URL())
			o.HTTPClient = naming{client: name, op: op, next: awshttp.NewBuildableClient().WithTimeout(attemptTimeout)}
			// The standard retryer (three attempts), its backoff capped
			// and its retry quota off, so that a run of faults keeps
			// being retried.
			o.Retryer = retry.NewStandard(func(o *retry.StandardOptions) {
				o.MaxBackoff = 50 * time.Millisecond
				o.RateLimiter = ratelimit.None
			})
		})
		st, err := dynamostore.New(db, table)
		if err != nil {
			t.Fatal(err)
		}
		s.conns = append(s.conns, conn{store: st, inspect: st,
			begin: func() { p.begin(name, op.Add(1)) }, sent: func() int { return p.end(name) }})
	}
	exercise(t, s, cfg, porcupine.Ok)
}
