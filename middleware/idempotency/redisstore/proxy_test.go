package redisstore_test

import (
	"bytes"
	"net"
	"sync"
	"sync/atomic"
	"testing"
	"time"
)

// proxy is a TCP proxy in front of the Redis server that can hold back
// replies: requests reach the server at once (so a command runs), and the
// next reply is delayed (delayNext) or held until the test ends (stall).
// It counts the requests that name a command.
type proxy struct {
	ln     net.Listener
	target string

	delay   atomic.Int64 // nanoseconds to hold back the next reply; 0: none
	stalled atomic.Bool  // hold back every reply until close

	mu    sync.Mutex
	conns []net.Conn
	sent  map[string]int // requests naming a command, by name

	done chan struct{}
}

func newProxy(t *testing.T, target string) *proxy {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	p := &proxy{ln: ln, target: target, sent: map[string]int{}, done: make(chan struct{})}
	go p.accept()
	t.Cleanup(p.close)
	return p
}

func (p *proxy) Addr() string { return p.ln.Addr().String() }

// delayNext holds back the next reply any connection receives by d.
func (p *proxy) delayNext(d time.Duration) { p.delay.Store(int64(d)) }

// stall holds back every reply until the test ends.
func (p *proxy) stall() { p.stalled.Store(true) }

// count returns how many requests named cmd (case-insensitive) so far.
func (p *proxy) count(cmd string) int {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.sent[string(bytes.ToUpper([]byte(cmd)))]
}

func (p *proxy) accept() {
	for {
		c, err := p.ln.Accept()
		if err != nil {
			return
		}
		s, err := net.Dial("tcp", p.target)
		if err != nil {
			c.Close()
			continue
		}
		p.mu.Lock()
		p.conns = append(p.conns, c, s)
		p.mu.Unlock()
		go p.requests(s, c)
		go p.replies(c, s)
	}
}

// requests copies client to server, counting the commands named in RESP
// arrays (the first bulk string of "*N\r\n$L\r\nNAME\r\n").
func (p *proxy) requests(server, client net.Conn) {
	defer server.Close()
	buf := make([]byte, 64<<10)
	for {
		n, err := client.Read(buf)
		if n > 0 {
			p.note(buf[:n])
			if _, werr := server.Write(buf[:n]); werr != nil {
				return
			}
		}
		if err != nil {
			return
		}
	}
}

func (p *proxy) note(chunk []byte) {
	if len(chunk) == 0 || chunk[0] != '*' {
		return
	}
	parts := bytes.SplitN(chunk, []byte("\r\n"), 4)
	if len(parts) < 3 {
		return
	}
	p.mu.Lock()
	p.sent[string(bytes.ToUpper(parts[2]))]++
	p.mu.Unlock()
}

// replies copies server to client, holding back what delay and stall say.
func (p *proxy) replies(client, server net.Conn) {
	defer client.Close()
	buf := make([]byte, 64<<10)
	for {
		n, err := server.Read(buf)
		if n > 0 {
			if d := p.delay.Swap(0); d > 0 {
				select {
				case <-time.After(time.Duration(d)):
				case <-p.done:
					return
				}
			}
			if p.stalled.Load() {
				<-p.done
				return
			}
			if _, werr := client.Write(buf[:n]); werr != nil {
				return
			}
		}
		if err != nil {
			return
		}
	}
}

func (p *proxy) close() {
	select {
	case <-p.done:
		return
	default:
	}
	close(p.done)
	p.ln.Close()
	p.mu.Lock()
	defer p.mu.Unlock()
	for _, c := range p.conns {
		c.Close()
	}
}
