package linearize

import (
	"context"
	"math/rand/v2"
	"net"
	"sync"
	"time"
)

// tcpFaults is the way of every client of a TCP store (Redis,
// PostgreSQL) to its server: each connection a client's driver dials is
// the test's own, which it kills (a reset, idle or in the middle of a
// request) every 50 to 200 ms. It counts, per client, the writes the
// driver makes on its connections during the client's operation, so that
// an operation that wrote more than once (the driver sent it again after
// a killed connection) is recorded with its earlier attempts, and one
// that wrote nothing surely never reached the server. Writes that carry
// no operation (a connection's handshake) are not counted when counts
// says so.
type tcpFaults struct {
	faults *tally
	counts func(b []byte) bool // whether a write counts (nil: every one)

	mu    sync.Mutex
	rng   *rand.Rand
	conns map[*faultConn]bool
	open  map[int]bool // by client: an operation is running
	sent  map[int]int  // by client: writes in the running operation
}

func newTCPFaults(seed uint64, faults *tally) *tcpFaults {
	return &tcpFaults{faults: faults, rng: rand.New(rand.NewPCG(seed, 0x7c9)),
		conns: map[*faultConn]bool{}, open: map[int]bool{}, sent: map[int]int{}}
}

// faultConn is one connection of a client.
type faultConn struct {
	net.Conn
	f      *tcpFaults
	client int
}

func (c *faultConn) Write(b []byte) (int, error) {
	c.f.mu.Lock()
	if c.f.open[c.client] && (c.f.counts == nil || c.f.counts(b)) {
		c.f.sent[c.client]++
	}
	c.f.mu.Unlock()
	return c.Conn.Write(b)
}

func (c *faultConn) Close() error {
	c.f.mu.Lock()
	delete(c.f.conns, c)
	c.f.mu.Unlock()
	return c.Conn.Close()
}

// dial is the dialer of client's driver.
func (f *tcpFaults) dial(client int) func(ctx context.Context, network, addr string) (net.Conn, error) {
	return func(ctx context.Context, network, addr string) (net.Conn, error) {
		var d net.Dialer
		c, err := d.DialContext(ctx, network, addr)
		if err != nil {
			return nil, err
		}
		fc := &faultConn{Conn: c, f: f, client: client}
		f.mu.Lock()
		f.conns[fc] = true
		f.mu.Unlock()
		return fc, nil
	}
}

// begin opens client's operation; end closes it and returns how many
// writes it made.
func (f *tcpFaults) begin(client int) {
	f.mu.Lock()
	f.open[client], f.sent[client] = true, 0
	f.mu.Unlock()
}

func (f *tcpFaults) end(client int) int {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.open[client] = false
	return f.sent[client]
}

// killConns kills a random connection with a reset every 50 to 200 ms
// until ctx ends.
func (f *tcpFaults) killConns(ctx context.Context, _ func() float64) {
	for {
		f.mu.Lock()
		d := time.Duration(50+f.rng.IntN(151)) * time.Millisecond
		f.mu.Unlock()
		select {
		case <-ctx.Done():
			return
		case <-time.After(d):
		}
		f.mu.Lock()
		var victim *faultConn
		if n := len(f.conns); n > 0 {
			i := f.rng.IntN(n)
			for c := range f.conns {
				if i == 0 {
					victim = c
					break
				}
				i--
			}
			delete(f.conns, victim)
		}
		f.mu.Unlock()
		if victim != nil {
			if tc, ok := victim.Conn.(*net.TCPConn); ok {
				_ = tc.SetLinger(0)
			}
			_ = victim.Conn.Close()
			f.faults.add("conn_kill")
		}
	}
}

// at runs fault once the run's progress reaches each of the shares in
// order, until ctx ends; a fault that fails is reported to fail, and ends
// the series.
func at(shares []float64, fault func() error, fail func(error)) func(ctx context.Context, progress func() float64) {
	return func(ctx context.Context, progress func() float64) {
		for _, share := range shares {
			for progress() < share {
				select {
				case <-ctx.Done():
					return
				case <-time.After(10 * time.Millisecond):
				}
			}
			if err := fault(); err != nil {
				fail(err)
				return
			}
		}
	}
}
