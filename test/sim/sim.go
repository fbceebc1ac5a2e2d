package sim

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing/synctest"
	"time"

	"github.com/anishathalye/porcupine"
	"github.com/aws/aws-lambda-go/events"
	"github.com/aws/aws-lambda-go/lambdacontext"

	"github.com/sqsonce/sqsonce/middleware/batch"
	"github.com/sqsonce/sqsonce/middleware/batch/sqsdlq"
	"github.com/sqsonce/sqsonce/middleware/idempotency"
	"github.com/sqsonce/sqsonce/middleware/idempotency/driver"
	"github.com/sqsonce/sqsonce/middleware/idempotency/memstore"
	"github.com/sqsonce/sqsonce/middleware/idempotency/storetest/linearize"
	"github.com/sqsonce/sqsonce/test/history"
)

// The simulated deployment: Lambda's default timeout, the event source
// mapping's recommended visibility (six times it), a redrive policy.
const (
	Deadline          = 3 * time.Second
	VisibilityTimeout = 6 * Deadline
	MaxReceiveCount   = 4
	horizon           = 4 * time.Minute // of simulated time; a run ends sooner when every message is settled
	tick              = 10 * time.Millisecond
	maxKills, maxSkew = 3, 2
)

// Linearizability is the pseudo-property a run breaks when porcupine finds
// the store operations the network delivered not linearizable.
const Linearizability history.Property = "linearizable"

// Run is one simulated run: what it recorded and what the checks found.
type Run struct {
	Seed     uint64
	Config   Config
	Events   []history.Event
	Header   history.Header
	Verdict  *history.Verdict
	Steps    int    // scheduler steps taken
	Digest   string // sha256 of the history: the same for every run of one tape
	LinOps   int    // store operations checked by porcupine
	LinOK    bool   // porcupine found them linearizable
	Tape     []uint64
	Schedule []string // one line per step, for a person
}

// Failed returns the first property the run broke, or "".
func (r *Run) Failed() history.Property {
	for _, res := range r.Verdict.Results {
		if len(res.Violations) > 0 {
			return res.Property
		}
	}
	if !r.LinOK {
		return Linearizability
	}
	return ""
}

// Simulate runs the tape in the calling goroutine, which must be in a
// synctest bubble (synctest.Test): every effect of every simulated process
// crosses one scheduler that picks the next from the tape.
func Simulate(seed uint64, tape *Tape, cfg Config) *Run {
	w := &world{
		cfg:    cfg,
		tape:   tape,
		store:  memstore.New(),
		owners: map[string]string{},
		ids:    map[string]string{},
		start:  time.Now(),
		msgs:   map[string]*qmsg{},
		dmsg:   map[string]*qmsg{},
		moved:  map[string]bool{},
		kms:    &fakeKMS{},
	}
	w.opener = w.newSealer()
	w.scenario()
	for _, p := range w.procs {
		w.spawn(func() { w.runProc(p, 0) })
	}
	w.schedule()
	w.wg.Wait() // every goroutine of the run sees the run over and ends
	w.finals()

	hdr := history.Header{
		Ev: history.KindHeader, Version: history.Version, Run: "sim-" + strconv.FormatUint(seed, 10), Seed: seed,
		Profile: "sim " + cfg.String(), Proc: "sim", T: w.start.UnixNano(), SkewMargin: int64(cfg.margin()),
		LeaseExtension: cfg.KeepAlive != "off",
		Replay:         fmt.Sprintf("go test ./test/sim -run TestSim -sim.seed %d", seed),
	}
	r := &Run{Seed: seed, Config: cfg, Events: w.events, Header: hdr, Steps: w.steps, Tape: tape.Values(), Schedule: w.sched}
	r.Verdict = history.Check(history.New(hdr, w.events))
	r.LinOps = len(w.lin)
	res, _ := linearize.Check(w.lin, 0, 10*time.Second)
	r.LinOK = res == porcupine.Ok
	h := sha256.New()
	for _, e := range w.events {
		b, _ := json.Marshal(e)
		h.Write(b)
	}
	r.Digest = hex.EncodeToString(h.Sum(nil))
	return r
}

// world is one run's simulated deployment.
type world struct {
	cfg   Config
	tape  *Tape
	store *memstore.Store
	start time.Time

	wg      sync.WaitGroup
	mu      sync.Mutex
	pending []*action
	stopped bool

	procs  []*proc // the first incarnation of each slot
	live   []*proc // every incarnation started
	queue  []*qmsg
	msgs   map[string]*qmsg
	keys   []string
	events []history.Event
	sched  []string
	owners map[string]string // owner token -> o1, o2, ... by first appearance
	ids    map[string]string // key -> record id
	lin    []linearize.Op
	steps  int
	kills  int
	skews  int
	deliv  int
	dmsg   map[string]*qmsg // delivery -> its message
	dlq    []*qmsg          // the dead-letter queue
	moved  map[string]bool  // deliveries whose message the mover sent to the dead-letter queue and deleted
	redriv int              // redrives made
	nmsgs  int              // messages sent (ids)
	held   atomic.Int64     // store requests held on the network: a run ends only after they arrived
	kms    *fakeKMS         // the deployment's KMS (sealed results)
	opener driver.Sealer    // the harness's own Sealer: the recorder reads sealed results opened
}

// action is one step a process waits for the scheduler to take.
type action struct {
	key  string
	p    *proc
	fn   func()
	ok   bool
	net  bool // a request in flight: a kill of its process does not stop it
	done chan struct{}
}

type qmsg struct {
	id, key, payload string
	tenant           string // the invocation's tenant (Tenancy "invocation") or the message's group ("group")
	group            string // the MessageGroupId it carries: tenant, unless a move dropped it
	last             string // its latest delivery: the receipt handle SQS still accepts
	rc               int
	visibleAt        time.Time
	deleted, dlq     bool
}

// hkey is the history's key of m: the producer's key, scoped by its tenant
// when record ids are (two tenants with one key are two records).
func (w *world) hkey(m *qmsg) string {
	if w.cfg.scoped() && m.tenant != "" {
		return m.tenant + "/" + m.key
	}
	return m.key
}

// proc is one incarnation of a worker (a Lambda execution environment).
type proc struct {
	w       *world
	slot    int
	inc     int
	client  int
	name    string
	strict  bool
	off     atomic.Int64 // the guard's clock offset, ns
	dead    bool         // under w.mu
	handler func(context.Context, events.SQSEvent) (events.SQSEventResponse, error)

	mu      sync.Mutex
	results map[string]string // delivery -> the record function's result
	reqs    map[string]int    // delivery -> store requests made
	exts    map[string]int    // delivery -> extensions sent (by the keep-alive's goroutine)
	vis     map[string]int    // visibility changes sent, by what they change
}

func (p *proc) now() time.Time { return time.Now().Add(time.Duration(p.off.Load())) }

type ctxKey struct{}

func deliveryOf(ctx context.Context) string { d, _ := ctx.Value(ctxKey{}).(string); return d }

var errNet = errors.New("sim: connection reset")
var errDead = errors.New("sim: process killed")

// scenario draws the deployment: processes, keys, messages (and, with
// tenants, each message's tenant).
func (w *world) scenario() {
	t := w.tape
	nproc := t.Range(2, 3)
	for i := range nproc {
		w.procs = append(w.procs, w.newProc(i+1, 1, t.Chance(w.cfg.Strict)))
	}
	nkeys := t.Range(2, 4)
	var keys []string
	for i := range nkeys {
		keys = append(keys, "k"+strconv.Itoa(i+1))
	}
	nmsg := t.Range(nkeys+1, 14)
	spread := 3000
	if !w.cfg.deadline() {
		spread = 12000 // operations of several seconds: duplicates come while they run
	}
	seen := map[string]bool{}
	for i := range nmsg {
		k := keys[i%nkeys]
		if i >= nkeys {
			k = keys[t.Draw(nkeys)]
		}
		p := "p0"
		if t.Chance(10) {
			p = "p1"
		}
		m := &qmsg{id: fmt.Sprintf("m%02d", i+1), key: k, payload: p, visibleAt: w.start.Add(time.Duration(t.Draw(spread)) * time.Millisecond)}
		if w.cfg.scoped() {
			m.tenant = []string{"t1", "t2"}[t.Draw(2)]
			if w.cfg.Tenancy == "group" {
				m.tenant = "g" + m.tenant[1:]
				m.group = m.tenant
			}
		}
		w.queue = append(w.queue, m)
		w.msgs[m.id] = m
		if hk := w.hkey(m); !seen[hk] {
			seen[hk] = true
			w.keys = append(w.keys, hk)
		}
	}
	w.nmsgs = nmsg
}

// The simulated queues' ARNs.
const (
	queueARN      = "arn:aws:sqs:us-east-1:000000000000:sim"
	deadLetterARN = "arn:aws:sqs:us-east-1:000000000000:sim-dlq"
)

// simReq is the body's request type, for WrapJSON and Do.
type simReq struct {
	K string `json:"k"`
	P string `json:"p"`
}

func (w *world) newProc(slot, inc int, strict bool) *proc {
	p := &proc{w: w, slot: slot, inc: inc, client: len(w.live), name: fmt.Sprintf("w%d.%d", slot, inc), strict: strict,
		results: map[string]string{}, reqs: map[string]int{}, exts: map[string]int{}, vis: map[string]int{}}
	w.live = append(w.live, p)
	c := w.cfg
	var store driver.Store = &shim{p: p}
	if c.KeepAlive != "off" {
		store = &extShim{shim{p: p}}
	}
	gc := idempotency.Config{
		Store: store, Namespace: "sim",
		Now:        p.now,
		Logger:     slog.New(slog.DiscardHandler),
		OnOutcome:  p.onOutcome,
		SkewMargin: c.margin(),
	}
	switch c.Tenancy {
	case "off":
		gc.Tenancy = idempotency.TenancyOff
	case "group":
		gc.Tenancy = idempotency.TenancyMessageGroup
	}
	if c.KeepAlive == "limit" {
		gc.Lease, gc.ExpiresAfter, gc.KeepAliveLimit = 2*time.Second, c.ExpiresAfter, c.KeepAliveLimit
	}
	gc.KeepAliveEvery = c.KeepAliveEvery
	if c.Cache {
		gc.CacheBytes = 1 << 20
		if c.SmallCache {
			gc.CacheBytes = 1 << 10
		}
	}
	gc.Strict = strict && c.StrictGuard
	if c.OneCompleteAttempt {
		gc.CompleteAttempts = 1
	}
	if c.sealed(slot) {
		gc.Sealer = w.newSealer()
	}
	g, err := idempotency.New(gc)
	if err != nil {
		panic(err)
	}
	var opts []idempotency.Option
	if c.Payload && c.Wrapper != "do" {
		opts = append(opts, idempotency.WithPayload(idempotency.BodyField("p")))
	}
	if strict && !c.StrictGuard {
		opts = append(opts, idempotency.Strict())
	}
	var wrapped func(context.Context, events.SQSMessage) (string, error)
	switch c.Wrapper {
	case "json":
		if c.JSONChecked {
			check := func(r simReq) error {
				if r.K == "" {
					return errors.New("k: empty") // the key was taken first: never
				}
				return nil
			}
			opts = append(opts, idempotency.WithCheck(check), idempotency.DisallowUnknownFields())
		}
		wrapped = idempotency.WrapJSON(g, idempotency.BodyField("k"), func(ctx context.Context, _ simReq, m events.SQSMessage) (string, error) {
			return p.op(ctx, m)
		}, opts...)
	case "do":
		wrapped = func(ctx context.Context, m events.SQSMessage) (string, error) {
			var r simReq
			if err := json.Unmarshal([]byte(m.Body), &r); err != nil {
				return "", err
			}
			key := r.K
			if g := m.Attributes["MessageGroupId"]; g != "" && c.Tenancy == "group" {
				key = g + "/" + key // Do reads no group: the key carries it
			}
			kb, _ := json.Marshal(key)
			o := slices.Clone(opts)
			if c.Payload {
				pb, _ := json.Marshal(r.P)
				o = append(o, idempotency.WithPayload(idempotency.Selection{Selector: `body ["p"]`, Value: pb}))
			}
			return idempotency.Do(ctx, g, idempotency.Selection{Selector: `body ["k"]`, Value: kb}, func(ctx context.Context) (string, error) {
				return p.op(ctx, m)
			}, o...)
		}
	default:
		wrapped = idempotency.Wrap(g, idempotency.BodyField("k"), p.op, opts...)
	}
	rf := func(ctx context.Context, m events.SQSMessage) (string, error) {
		d := m.ReceiptHandle
		ctx = context.WithValue(ctx, ctxKey{}, d)
		if !w.step(p, "call/"+d, func() {}) {
			return "", errDead
		}
		v, err := wrapped(ctx, m)
		p.mu.Lock()
		p.results[d] = digestResult(v)
		p.mu.Unlock()
		return v, err
	}
	// Zero-value options but for a discarding logger: MinRemaining's zero
	// follows the 3 s invocation.
	bo := batch.Options{Logger: slog.New(slog.DiscardHandler)}
	if c.Pacing {
		// A practically zero jitter: a seed's run is deterministic.
		bo.Pacing.Changer, bo.Pacing.Jitter = &changer{p: p}, 1e-9
		if c.QueueTimeout {
			bo.KeepVisible.QueueTimeout = VisibilityTimeout
		}
		bo.KeepVisible.Every = c.KeepVisibleEvery
	}
	bo.AlwaysFullBatchError, bo.NoFullBatchError = c.FullBatchError, c.NoFullBatchError
	if c.Sequential {
		bo.Concurrency = 1
	}
	if c.DeadLetter {
		mv, err := sqsdlq.New(&sqsAPI{p: p}, sqsdlq.WithQueueURL(func(arn string) (string, error) { return arn, nil }),
			sqsdlq.WithDeadLetterQueue(queueARN, deadLetterARN))
		if err != nil {
			panic(err)
		}
		bo.DeadLetter.Mover = mv
	}
	p.handler = batch.SQS(rf, bo)
	return p
}

// step blocks until the scheduler takes the step key of p (running fn in
// the scheduler's goroutine) and reports whether it was taken: false when p
// is dead or the run over (nothing p does is seen any more).
func (w *world) step(p *proc, key string, fn func()) bool {
	w.mu.Lock()
	if p.dead || w.stopped {
		w.mu.Unlock()
		return false
	}
	a := &action{key: p.name + "/" + key, p: p, fn: fn, done: make(chan struct{})}
	w.pending = append(w.pending, a)
	w.mu.Unlock()
	<-a.done
	return a.ok
}

// inflight is step for a request already on the network: it arrives even
// when its process has died since (not when the run is over).
func (w *world) inflight(p *proc, key string, fn func()) bool {
	w.mu.Lock()
	if w.stopped {
		w.mu.Unlock()
		return false
	}
	a := &action{key: p.name + "/" + key, p: p, fn: fn, done: make(chan struct{}), net: true}
	w.pending = append(w.pending, a)
	w.mu.Unlock()
	<-a.done
	return a.ok
}

// schedule is the scheduler: after every goroutine of the bubble is
// blocked, it takes one pending step chosen by the tape (or kills its
// process, or skews its clock first), until every message is settled.
func (w *world) schedule() {
	for {
		synctest.Wait()
		w.mu.Lock()
		pend := w.pending
		w.mu.Unlock()
		if len(pend) == 0 {
			if w.settled() && w.cfg.DeadLetter && len(w.dlq) > 0 && w.redriv < 2 && time.Since(w.start) < horizon {
				w.redrive()
				continue
			}
			if w.settled() || time.Since(w.start) > horizon {
				break
			}
			time.Sleep(tick)
			continue
		}
		slices.SortFunc(pend, func(a, b *action) int { return strings.Compare(a.key, b.key) })
		a := pend[w.tape.Draw(len(pend))]
		w.mu.Lock()
		w.pending = slices.DeleteFunc(w.pending, func(x *action) bool { return x == a })
		w.mu.Unlock()
		w.steps++
		if !a.net && w.kills < maxKills && w.tape.Chance(2) {
			w.kill(a.p, "at "+a.key)
			close(a.done)
			continue
		}
		// A clock jumps between invocations only, so that no reading
		// the guard took before it is recorded after it.
		if strings.Contains(a.key, "/recv") && w.skews < maxSkew && w.tape.Chance(map[bool]int{true: 6, false: 15}[w.cfg.Legacy]) {
			w.skews++
			offs := w.cfg.skews()
			off := offs[w.tape.Draw(len(offs))]
			a.p.off.Store(int64(off))
			w.record(history.Event{Proc: "harness", Ev: history.KindFault, Fault: history.FaultClockSkew, Target: a.p.name, Off: int64(off)})
			w.note("skew %s to %v", a.p.name, off)
		}
		w.note("%s", a.key)
		a.fn()
		a.ok = true
		close(a.done)
	}
	w.mu.Lock()
	w.stopped = true
	pend := w.pending
	w.pending = nil
	w.mu.Unlock()
	for _, a := range pend {
		close(a.done)
	}
}

// kill marks p dead, as SIGKILL would: its waiting steps are never taken,
// and nothing it does later reaches the store, the queue or the history.
// A new incarnation of its slot starts after a while.
func (w *world) kill(p *proc, why string) {
	w.kills++
	w.mu.Lock()
	p.dead = true
	var mine []*action
	w.pending = slices.DeleteFunc(w.pending, func(x *action) bool {
		if x.p == p && !x.net {
			mine = append(mine, x)
			return true
		}
		return false
	})
	w.mu.Unlock()
	for _, a := range mine {
		close(a.done)
	}
	w.record(history.Event{Proc: "harness", Ev: history.KindFault, Fault: history.FaultProcKill, Target: p.name})
	w.note("kill %s %s", p.name, why)
	np := w.newProc(p.slot, p.inc+1, p.strict)
	np.off.Store(p.off.Load())
	delay := time.Duration(w.tape.Range(100, 2000)) * time.Millisecond
	w.spawn(func() { w.runProc(np, delay) })
}

func (w *world) spawn(f func()) {
	w.wg.Add(1)
	go func() {
		defer w.wg.Done()
		f()
	}()
}

func (w *world) over() bool {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.stopped
}

func (w *world) settled() bool {
	if !w.cfg.Legacy && w.held.Load() > 0 {
		return false
	}
	for _, m := range w.queue {
		if !m.deleted && !m.dlq {
			return false
		}
	}
	return true
}

func (w *world) record(e history.Event) {
	if e.T == 0 {
		e.T = time.Now().UnixNano()
	}
	e.Seq = uint64(len(w.events) + 1)
	w.events = append(w.events, e)
	if n := len(w.sched); n > 0 && e.Proc != "harness" && e.Ev != history.KindProc {
		w.sched[n-1] += " " + describe(e)
	}
}

// describe is e in a few words, for a schedule.
func describe(e history.Event) string {
	out := string(e.Ev)
	if e.Ev == history.KindDeliver || e.Ev == history.KindAck || e.Ev == history.KindFail {
		out += " " + e.D // a receive's or an acknowledgement's step names no delivery
	}
	if e.Key != "" && (e.Ev == history.KindDeliver || e.Ev == history.KindClaim) {
		out += " " + e.Key
	}
	for _, f := range []string{string(e.Resp), e.Outcome, e.Owner, e.Result} {
		if f != "" {
			out += " " + f
		}
	}
	if e.Prev != "" {
		out += " (found " + e.Prev + ")"
	}
	return "; " + out
}

func (w *world) note(format string, args ...any) {
	w.sched = append(w.sched, fmt.Sprintf("t=%.3fs ", time.Since(w.start).Seconds())+fmt.Sprintf(format, args...))
}

func (w *world) owner(tok string) string {
	if tok == "" {
		return ""
	}
	n, ok := w.owners[tok]
	if !ok {
		n = "o" + strconv.Itoa(len(w.owners)+1)
		w.owners[tok] = n
	}
	return n
}

// runProc is one worker: it polls the queue, runs each batch through its
// handler under a 3 s deadline, and deletes what the handler acknowledged.
// Lambda ends an invocation at its deadline: the worker is killed.
func (w *world) runProc(p *proc, delay time.Duration) {
	time.Sleep(delay)
	if !w.step(p, "start", func() {
		w.record(history.Event{Proc: p.name, Ev: history.KindProc, Reader: reader(p.strict), Off: p.off.Load(), Sealer: w.cfg.sealed(p.slot)})
	}) {
		return
	}
	for inv := 1; ; inv++ {
		var got []*qmsg
		var ds []string
		var deadline, next time.Time
		invID := fmt.Sprintf("%s/i%d", p.name, inv)
		if !w.step(p, fmt.Sprintf("recv%03d", inv), func() {
			got, ds, deadline, next = w.receive(p, invID)
		}) {
			return
		}
		if len(got) == 0 {
			if w.over() {
				return
			}
			// A long poll: it returns when a message becomes visible, or
			// after 20 s.
			time.Sleep(min(time.Until(next), 20*time.Second) + time.Duration(p.slot)*time.Millisecond)
			continue
		}
		ev := events.SQSEvent{}
		for i, m := range got {
			sm := events.SQSMessage{MessageId: m.id, ReceiptHandle: ds[i],
				Body: fmt.Sprintf(`{"k":%q,"p":%q}`, m.key, m.payload)}
			if !w.cfg.Legacy {
				sm.EventSourceARN = queueARN
				sm.Attributes = map[string]string{"ApproximateReceiveCount": strconv.Itoa(m.rc)}
				if m.group != "" {
					sm.Attributes["MessageGroupId"] = m.group
				}
			}
			ev.Records = append(ev.Records, sm)
		}
		base := context.Background()
		if w.cfg.Tenancy == "invocation" && got[0].tenant != "" {
			base = lambdacontext.NewContext(base, &lambdacontext.LambdaContext{AwsRequestID: invID, TenantID: got[0].tenant})
		}
		var ctx context.Context
		var cancel context.CancelFunc
		var expire <-chan time.Time
		if !w.cfg.deadline() {
			ctx, cancel = context.WithCancel(base)
		} else {
			ctx, cancel = context.WithDeadline(base, deadline)
			timer := time.NewTimer(time.Until(deadline))
			defer timer.Stop()
			expire = timer.C
		}
		done := make(chan events.SQSEventResponse, 1)
		w.spawn(func() {
			resp, err := p.handler(ctx, ev)
			if err != nil {
				// The invocation failed: Lambda deletes none of its
				// messages.
				resp.BatchItemFailures = nil
				for _, m := range ev.Records {
					resp.BatchItemFailures = append(resp.BatchItemFailures, events.SQSBatchItemFailure{ItemIdentifier: m.MessageId})
				}
			}
			done <- resp
		})
		var resp events.SQSEventResponse
		select {
		case resp = <-done:
		case <-expire:
			cancel()
			w.step(p, fmt.Sprintf("timeout%03d", inv), func() { w.kill(p, "by Lambda at the deadline") })
			return
		}
		cancel()
		failed := map[string]bool{}
		for _, f := range resp.BatchItemFailures {
			failed[f.ItemIdentifier] = true
		}
		if !w.step(p, fmt.Sprintf("acks%03d", inv), func() {
			for i, m := range got {
				if w.moved[ds[i]] {
					continue // recorded as moved by the mover's delete
				}
				if failed[m.id] {
					w.record(history.Event{Proc: p.name, Ev: history.KindFail, D: ds[i], Class: "batch_item_failure"})
					continue
				}
				p.mu.Lock()
				res := p.results[ds[i]]
				p.mu.Unlock()
				w.record(history.Event{Proc: p.name, Ev: history.KindAck, D: ds[i], Result: res})
				m.deleted = true
			}
		}) {
			return
		}
	}
}

// receive takes up to a drawn number of visible messages, as SQS does:
// each becomes invisible for the visibility timeout; a message received
// MaxReceiveCount times already goes to the dead-letter queue instead.
func (w *world) receive(p *proc, inv string) (got []*qmsg, ds []string, deadline, next time.Time) {
	now := time.Now()
	deadline, next = now.Add(Deadline), now.Add(time.Hour)
	if !w.cfg.deadline() {
		deadline = time.Time{}
	}
	n := w.tape.Range(1, 4)
	tenant := ""
	for _, m := range w.queue {
		if len(got) == n {
			break
		}
		if m.deleted || m.dlq {
			continue
		}
		if w.cfg.Tenancy == "invocation" && tenant != "" && m.tenant != tenant {
			continue // an invocation carries one tenant's messages
		}
		if m.visibleAt.After(now) {
			if m.visibleAt.Before(next) {
				next = m.visibleAt
			}
			continue
		}
		if m.rc >= MaxReceiveCount {
			m.dlq = true
			if w.cfg.DeadLetter {
				w.dlq = append(w.dlq, m)
				w.record(history.Event{Proc: "harness", Ev: history.KindMove, Msg: m.id, Key: w.hkey(m), Op: "redrive_policy"})
			}
			continue
		}
		tenant = m.tenant
		m.rc++
		m.visibleAt = now.Add(VisibilityTimeout)
		w.deliv++
		d := fmt.Sprintf("%s/%d", p.name, w.deliv)
		got, ds = append(got, m), append(ds, d)
		m.last = d
		w.dmsg[d] = m
		pl := m.payload
		if !w.cfg.Payload {
			pl = ""
		}
		w.record(history.Event{Proc: p.name, Ev: history.KindDeliver, D: d, Msg: m.id, Rc: m.rc, Key: w.hkey(m),
			Payload: pl, Inv: inv, Deadline: ns(deadline)})
	}
	return got, ds, deadline, next
}

func reader(strict bool) history.Reader {
	if strict {
		return history.ReaderSqsonceStrict
	}
	return history.ReaderSqsonce
}

// op is the operation: it runs for a drawn time (honouring its context,
// unless it is one of the few that do not), sometimes fails, and returns
// a result unique to its run.
func (p *proc) op(ctx context.Context, _ events.SQSMessage) (string, error) {
	w, d := p.w, deliveryOf(ctx)
	var dur time.Duration
	var stubborn, fail, perm bool
	if !w.step(p, "op_start/"+d, func() {
		switch t := w.tape; {
		case !w.cfg.deadline():
			// A worker without a deadline: operations of up to 14 s,
			// each honouring its context.
			if t.Chance(50) {
				dur = time.Duration(t.Range(5, 300)) * time.Millisecond
			} else {
				dur = time.Duration(t.Range(1000, 14000)) * time.Millisecond
			}
		case t.Chance(70):
			dur = time.Duration(t.Range(5, 300)) * time.Millisecond
		case t.Chance(67):
			dur = time.Duration(t.Range(500, 2500)) * time.Millisecond
		default:
			dur, stubborn = time.Duration(t.Range(2000, 6000))*time.Millisecond, true
		}
		fail = w.tape.Chance(8)
		perm = fail && w.cfg.DeadLetter && w.tape.Chance(50)
		w.record(history.Event{Proc: p.name, Ev: history.KindOpStart, D: d})
	}) {
		return "", errDead
	}
	t := time.NewTimer(dur)
	if stubborn {
		<-t.C
	} else {
		select {
		case <-t.C:
		case <-ctx.Done():
			t.Stop()
			fail = true
		}
	}
	res := "r:" + d
	if !w.step(p, "op_end/"+d, func() {
		if fail {
			w.record(history.Event{Proc: p.name, Ev: history.KindOpEnd, D: d, Resp: history.RespError})
			return
		}
		w.record(history.Event{Proc: p.name, Ev: history.KindOpEnd, D: d, Resp: history.RespOK, Result: res})
	}) {
		return "", errDead
	}
	if perm {
		return "", batch.Permanent(errors.New("sim: the operation failed for good"))
	}
	if fail {
		return "", errors.New("sim: the operation failed")
	}
	return res, nil
}

func (p *proc) onOutcome(ctx context.Context, r idempotency.Report) {
	d := deliveryOf(ctx)
	p.w.step(p, "outcome/"+d, func() {
		e := history.Event{Proc: p.name, Ev: history.KindOutcome, D: d, Outcome: string(r.Outcome), Ran: r.Ran, Source: r.Source}
		switch {
		case errors.Is(r.Err, driver.ErrUnsealed):
			e.Class = history.ClassUnsealed
		case r.Err != nil:
			e.Class = "error"
		}
		p.w.record(e)
	})
}

// finals records each key's record as the store keeps it at the end.
func (w *world) finals() {
	for _, k := range w.keys {
		e := history.Event{Proc: "harness", Ev: history.KindFinal, Key: k}
		if id, ok := w.ids[k]; ok {
			if rec, ok := w.store.Get(id); ok {
				e.Status, e.Owner, e.Quarantined = string(rec.Status), w.owner(rec.Owner), !rec.Quarantined.IsZero()
				e.Result = w.resultOf(id, rec.Data)
			}
		}
		w.record(e)
	}
}

func ms(t time.Time) int64 {
	if t.IsZero() {
		return 0
	}
	return t.UnixMilli()
}

func ns(t time.Time) int64 {
	if t.IsZero() {
		return 0
	}
	return t.UnixNano()
}
