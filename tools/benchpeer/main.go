// Command benchpeer runs one SQS workload through Powertools for AWS Lambda
// (TypeScript) and through sqsonce, alternately, against one moto_server
// behind a proxy of its own that adds a fixed latency to every DynamoDB call
// and counts the calls by operation. make bench-peer runs it.
//
// A third side, "by hand", does the same work with the DynamoDB calls any
// implementation on aws-sdk-go-v2 needs, written by hand (bare.go): the
// floor. It prints a Markdown table, the three side by side with sqsonce's
// ratio to Powertools and to the floor: process CPU and peak RSS per 1,000 records, the batch p50 of
// new keys, the time until every record of a batch with in-batch duplicates
// is acknowledged through a real queue (Powertools' redelivery included),
// DynamoDB round trips per record, moto's own CPU on each side's requests,
// heap allocations per record of the Go sides and batch item failures. Every measured
// row is the median of the rounds with its range (min–max), flagged when the
// range exceeds 20 % of the median; latency rows show their floor (model
// time + 2 × store latency); a ratio is shown only where the two sides'
// ranges do not overlap. Above the table it prints the load average at the
// start and end, and a "machine was busy" line when it was.
//
// Each side runs as its own process (node for Powertools, this program with
// -worker for sqsonce), one process per phase, so CPU and RSS are the
// process's own, start-up included, measured by the kernel (getrusage).
package main

import (
	"context"
	"crypto/rand"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"log"
	"log/slog"
	"net"
	"net/http"
	"net/http/httputil"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"runtime/pprof"
	"strings"
	"sync"
	"time"

	"github.com/aws/aws-lambda-go/events"
	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/credentials"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"github.com/sqsonce/sqsonce/internal/testenv/motoserver"
	"github.com/sqsonce/sqsonce/internal/testenv/powertools"
	"github.com/sqsonce/sqsonce/middleware/batch"
	"github.com/sqsonce/sqsonce/middleware/idempotency"
	"github.com/sqsonce/sqsonce/middleware/idempotency/dynamostore"
	"github.com/sqsonce/sqsonce/middleware/idempotency/jmespath"
)

const (
	keyPrefix     = "bench"
	keyJMESPath   = "powertools_json(body).idempotency_key"
	batchSize     = 10 // SQS's default batch for Lambda
	minRounds     = 3  // fewer gives no range worth the name
	defaultDriver = "internal/testenv/powertools/testdata"
)

// settings is one run's configuration.
type settings struct {
	driver     string
	rounds     int
	batches    int           // batches of batchSize records per phase
	ackBatches int           // batches with duplicates through the queue, per side and round
	model      time.Duration // the model call's duration
	latency    time.Duration // what the proxy adds to every DynamoDB call
	visibility time.Duration // the queue's visibility timeout, whole seconds
}

func main() {
	worker := flag.Bool("worker", false, "run as the sqsonce worker: a driver request on stdin, a report on stdout")
	stream := flag.Bool("stream", false, "with -worker: a request line, then one event a line, one reply a line")
	flag.BoolVar(&bareArm, "bare", false, "with -worker: the bare arm, the same DynamoDB calls written by hand (the floor), instead of sqsonce")
	var s settings
	flag.StringVar(&s.driver, "driver", defaultDriver, "the folder of driver.mjs and its installed packages")
	flag.IntVar(&s.rounds, "rounds", 5, "rounds, at least 3; each runs every side, in rotating order")
	flag.IntVar(&s.batches, "batches", 20, "batches of 10 records per phase")
	flag.IntVar(&s.ackBatches, "ack-batches", 3, "batches with in-batch duplicates sent through the queue, per side and round")
	flag.DurationVar(&s.model, "model", 200*time.Millisecond, "the model call's duration")
	flag.DurationVar(&s.latency, "latency", 5*time.Millisecond, "latency the proxy adds to every DynamoDB call")
	flag.DurationVar(&s.visibility, "visibility", 2*time.Second, "the queue's visibility timeout (whole seconds)")
	flag.Parse()
	if *worker {
		run := runWorker
		if *stream {
			run = runStream
		}
		stop, err := profileWorker()
		if err != nil {
			log.Fatal(err)
		}
		err = run(os.Stdin, os.Stdout)
		stop()
		if err != nil {
			log.Fatal(err)
		}
		return
	}
	if s.rounds < minRounds || s.batches < 1 || s.ackBatches < 1 || s.model < 0 || s.latency < 0 ||
		s.visibility < time.Second || s.visibility%time.Second != 0 {
		log.Fatalf("benchpeer: -rounds must be at least %d, -batches and -ack-batches positive, -model and -latency not negative, -visibility whole seconds, at least 1s", minRounds)
	}
	if err := powertools.Available(s.driver); err != nil {
		log.Fatal(err)
	}
	if err := bench(os.Stdout, s); err != nil {
		log.Fatal(err)
	}
}

// profileEnv names a folder in which each Go worker process writes its CPU
// profile, arm-pid.pprof (arm is sqsonce or bare): where a side's CPU goes
// in the benchmark itself. Merge one arm's with go tool pprof.
const profileEnv = "BENCHPEER_CPUPROFILE"

// profileWorker starts the worker's CPU profile when profileEnv is set; stop
// ends it.
func profileWorker() (stop func(), err error) {
	dir := os.Getenv(profileEnv)
	if dir == "" {
		return func() {}, nil
	}
	arm := "sqsonce"
	if bareArm {
		arm = "bare"
	}
	f, err := os.Create(filepath.Join(dir, fmt.Sprintf("%s-%d.pprof", arm, os.Getpid())))
	if err != nil {
		return nil, err
	}
	if err := pprof.StartCPUProfile(f); err != nil {
		f.Close()
		return nil, err
	}
	return func() {
		pprof.StopCPUProfile()
		f.Close()
	}, nil
}

// proxy forwards to moto after a fixed delay, counting DynamoDB operations.
type proxy struct {
	next  http.Handler
	delay time.Duration
	mu    sync.Mutex
	ops   map[string]int
}

func (p *proxy) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	op := strings.TrimPrefix(r.Header.Get("X-Amz-Target"), "DynamoDB_20120810.")
	p.mu.Lock()
	p.ops[op]++
	p.mu.Unlock()
	time.Sleep(p.delay) // the store's latency, simulated
	p.next.ServeHTTP(w, r)
}

// take returns the counts since the last take and resets them.
func (p *proxy) take() map[string]int {
	p.mu.Lock()
	defer p.mu.Unlock()
	ops := p.ops
	p.ops = map[string]int{}
	return ops
}

func total(ops map[string]int) int {
	n := 0
	for _, v := range ops {
		n += v
	}
	return n
}

func randomText(n int) string { return strings.ToLower(rand.Text()[:n]) }

// body is a message body carrying key, with a result of a realistic size.
func body(key string) string {
	b, _ := json.Marshal(map[string]any{
		"idempotency_key": key,
		"result":          map[string]any{"document_id": key, "summary": strings.Repeat("a summary of the document ", 12), "tokens": 312},
	})
	return string(b)
}

// phase is one part of the workload.
type phase struct {
	name   string
	events []events.SQSEvent
	unique int // records whose key is new to the table
	dups   int // records whose key another record of the same batch carries
}

// newKeys returns batches of batchSize keys unique to run, round and kind;
// with pairs, each key comes twice in its batch.
func newKeys(run string, round int, kind string, batches int, pairs bool) [][]string {
	keys := make([][]string, batches)
	for b := range keys {
		for i := range batchSize {
			k := i
			if pairs {
				k = i / 2
			}
			keys[b] = append(keys[b], fmt.Sprintf("%s-r%d-%s-%d-%d", run, round, kind, b, k))
		}
	}
	return keys
}

// events builds one SQS event per batch of keys, as Lambda delivers them.
func eventsOf(keys [][]string) []events.SQSEvent {
	evs := make([]events.SQSEvent, len(keys))
	for b, ks := range keys {
		for _, k := range ks {
			evs[b].Records = append(evs[b].Records, events.SQSMessage{
				MessageId: "m-" + rand.Text(), Body: body(k), EventSource: "aws:sqs",
				EventSourceARN: "arn:aws:sqs:us-east-1:123456789012:bench", AWSRegion: "us-east-1",
				Attributes: map[string]string{"ApproximateReceiveCount": "1"},
			})
		}
	}
	return evs
}

// workload makes round's phases: new keys; the same keys again (a
// producer's re-send: new message ids); and new keys each sent twice in the
// same batch.
func workload(run string, round, batches int) []phase {
	fresh := newKeys(run, round, "new", batches, false)
	n := batches * batchSize
	return []phase{
		{name: "new", events: eventsOf(fresh), unique: n},
		{name: "replay", events: eventsOf(fresh)},
		{name: "dup", events: eventsOf(newKeys(run, round, "dup", batches, true)), unique: n / 2, dups: n / 2},
	}
}

// round is one side's measurements in one round.
type round struct {
	records  int
	procs    int           // processes that ran events
	cpu      time.Duration // theirs, summed
	storeCPU time.Duration // moto's, while they ran
	phaseCPU map[string]time.Duration
	phaseN   map[string]int
	mallocs  uint64        // heap allocations while they ran events (Go sides only)
	idleCPU  time.Duration // a process that ran no event: start-up and exit
	maxRSS   int64
	newBatch []float64 // ms of each batch of new keys
	ack      []float64 // ms until every record of a batch with duplicates was acknowledged
}

// tally is one side's measurements over the run.
type tally struct {
	rounds       []round
	calls        map[string]int // DynamoDB calls per phase
	phaseRecords map[string]int
	failures     map[string]int
	unique       map[string]int
	dups         map[string]int
	ackFailures  int // records the handler reported failed in the acknowledgement batches
	ackRecords   int
}

func newTally() *tally {
	return &tally{calls: map[string]int{}, phaseRecords: map[string]int{}, failures: map[string]int{}, unique: map[string]int{}, dups: map[string]int{}}
}

// side is one runtime under test.
type side struct {
	name   string
	cmd    func(ctx context.Context) *exec.Cmd // one request, one report
	stream func(ctx context.Context) *exec.Cmd // a streamer
}

func bench(w io.Writer, s settings) (err error) {
	start := snapshot()
	endpoint, stopMoto, err := motoserver.Start()
	if err != nil {
		return err
	}
	stopped := false
	defer func() {
		if !stopped {
			err = errors.Join(err, stopMoto())
		}
	}()
	target, err := url.Parse(endpoint)
	if err != nil {
		return err
	}
	motoPID, err := serverPID(target.Port())
	if err != nil {
		return err
	}
	px := &proxy{next: httputil.NewSingleHostReverseProxy(target), delay: s.latency, ops: map[string]int{}}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return err
	}
	srv := &http.Server{Handler: px, ReadHeaderTimeout: 10 * time.Second}
	go func() { _ = srv.Serve(ln) }()
	defer srv.Close()
	proxied := "http://" + ln.Addr().String()

	table := "bench-" + randomText(8)
	if err := createTable(client(endpoint), table); err != nil {
		return err
	}
	q, err := createQueue(endpoint, s.visibility)
	if err != nil {
		return err
	}
	self, err := os.Executable()
	if err != nil {
		return err
	}
	streamDir, err := nodeStreamDir(s.driver)
	if err != nil {
		return err
	}
	defer os.RemoveAll(streamDir)
	nodeEnv := append(os.Environ(), "AWS_REGION=us-east-1", "POWERTOOLS_IDEMPOTENCY_DISABLED=false")
	sides := []side{
		{"Powertools TS", func(ctx context.Context) *exec.Cmd {
			c := exec.CommandContext(ctx, "node", "driver.mjs")
			c.Dir, c.Env = s.driver, nodeEnv
			return c
		}, func(ctx context.Context) *exec.Cmd {
			c := exec.CommandContext(ctx, "node", "stream.mjs")
			c.Dir, c.Env = streamDir, nodeEnv
			return c
		}},
		{"sqsonce", func(ctx context.Context) *exec.Cmd { return exec.CommandContext(ctx, self, "-worker") },
			func(ctx context.Context) *exec.Cmd { return exec.CommandContext(ctx, self, "-worker", "-stream") }},
		{"by hand", func(ctx context.Context) *exec.Cmd { return exec.CommandContext(ctx, self, "-worker", "-bare") },
			func(ctx context.Context) *exec.Cmd {
				return exec.CommandContext(ctx, self, "-worker", "-stream", "-bare")
			}},
	}
	base := powertools.Request{Endpoint: proxied, Table: table, KeyPrefix: keyPrefix, EventKeyJMESPath: keyJMESPath,
		RemainingMs: 120_000, ModelMs: int(s.model / time.Millisecond)}
	tallies := make([]*tally, len(sides))
	for i := range tallies {
		tallies[i] = newTally()
	}
	for r := range s.rounds {
		for j := range sides {
			si := (r + j) % len(sides) // each side first in turn
			run := randomText(8)       // keys new to the table, whichever side ran first
			rd, err := measure(sides[si], tallies[si], px, motoPID, base, run, r, s.batches)
			if err != nil {
				return err
			}
			rd.ack, err = measureAck(sides[si], tallies[si], q, base, run, r, s)
			if err != nil {
				return fmt.Errorf("%s, round %d, acknowledgement: %w", sides[si].name, r, err)
			}
			px.take()
			tallies[si].rounds = append(tallies[si].rounds, rd)
		}
	}
	srv.Close()
	stopped = true
	if err := stopMoto(); err != nil {
		return err
	}
	report(w, s, loadLines(start, snapshot()), tallies[0], tallies[1], tallies[2])
	return nil
}

// measure runs round r's three phases and one process with no event on sd.
func measure(sd side, t *tally, px *proxy, motoPID int, base powertools.Request, run string, r, batches int) (round, error) {
	var rd round
	for _, ph := range workload(run, r, batches) {
		req := base
		req.Events = ph.events
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Minute)
		px.take()
		motoBefore, err := processCPU(motoPID)
		if err != nil {
			cancel()
			return rd, err
		}
		rep, err := powertools.RunProcess(sd.cmd(ctx), req)
		ops := px.take()
		cancel()
		if err != nil {
			return rd, fmt.Errorf("%s, round %d, phase %s: %w", sd.name, r, ph.name, err)
		}
		motoAfter, err := processCPU(motoPID)
		if err != nil {
			return rd, err
		}
		rd.storeCPU += motoAfter - motoBefore
		rd.mallocs += rep.Mallocs
		if rd.phaseCPU == nil {
			rd.phaseCPU, rd.phaseN = map[string]time.Duration{}, map[string]int{}
		}
		rd.phaseCPU[ph.name] += rep.Usage.CPU
		rd.phaseN[ph.name] += len(ph.events) * batchSize
		n := len(ph.events) * batchSize
		rd.records += n
		rd.procs++
		rd.cpu += rep.Usage.CPU
		rd.maxRSS = max(rd.maxRSS, rep.Usage.MaxRSS)
		t.calls[ph.name] += total(ops)
		t.phaseRecords[ph.name] += n
		t.unique[ph.name] += ph.unique
		t.dups[ph.name] += ph.dups
		for _, ev := range rep.Events {
			t.failures[ph.name] += len(ev.BatchItemFailures)
			if ph.name == "new" {
				rd.newBatch = append(rd.newBatch, ev.Ms)
			}
		}
		fmt.Fprintf(os.Stderr, "round %d %-13s %-6s %4d records, %5d calls %v, %3d failures, cpu %v\n",
			r, sd.name, ph.name, n, total(ops), ops, failuresOf(rep), rep.Usage.CPU.Round(time.Millisecond))
	}
	// The same process with no event: what start-up and exit cost.
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	req := base
	req.Events = []events.SQSEvent{}
	rep, err := powertools.RunProcess(sd.cmd(ctx), req)
	if err != nil {
		return rd, fmt.Errorf("%s, round %d, no events: %w", sd.name, r, err)
	}
	rd.idleCPU = rep.Usage.CPU
	return rd, nil
}

// measureAck starts sd's streamer, warms it with one batch of new keys,
// then sends s.ackBatches batches whose keys each come twice through q, one
// after another, and returns the ms until each batch was acknowledged.
func measureAck(sd side, t *tally, q queue, base powertools.Request, run string, r int, s settings) ([]float64, error) {
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Minute)
	defer cancel()
	st, err := startStreamer(sd.stream(ctx), base)
	if err != nil {
		return nil, err
	}
	warm, err := st.run(eventsOf(newKeys(run, r, "warm", 1, false))[0])
	if err == nil && len(warm.BatchItemFailures) > 0 {
		err = fmt.Errorf("warm-up: %d records failed", len(warm.BatchItemFailures))
	}
	if err != nil {
		return nil, errors.Join(err, st.close())
	}
	var ms []float64
	limit := 10*s.visibility + time.Minute
	for b, keys := range newKeys(run, r, "ack", s.ackBatches, true) {
		bodies := make([]string, len(keys))
		for i, k := range keys {
			bodies[i] = body(k)
		}
		res, err := ackBatch(ctx, q, st, bodies, limit)
		if err != nil {
			return nil, errors.Join(fmt.Errorf("batch %d: %w", b, err), st.close())
		}
		t.ackFailures += res.failures
		t.ackRecords += len(bodies)
		ms = append(ms, float64(res.elapsed.Microseconds())/1000)
		fmt.Fprintf(os.Stderr, "round %d %-13s ack    %4d records, %d deliveries, %3d failures, all acknowledged after %v\n",
			r, sd.name, len(bodies), res.deliveries, res.failures, res.elapsed.Round(time.Millisecond))
	}
	return ms, st.close()
}

func failuresOf(rep powertools.Report) int {
	n := 0
	for _, ev := range rep.Events {
		n += len(ev.BatchItemFailures)
	}
	return n
}

// row is one measured row: a value per round.
type row struct {
	name, format string
	latency      bool // its floor is model + 2 × store latency
	goOnly       bool // measured on the Go sides only
	of           func(round) float64
}

var rows = []row{
	{"process CPU per 1,000 records (ms)", "%.0f", false, false, func(r round) float64 {
		return ms(r.cpu) * 1000 / float64(r.records)
	}},
	{"process CPU per 1,000 records, start-up excluded (ms)", "%.0f", false, false, func(r round) float64 {
		return (ms(r.cpu) - ms(r.idleCPU)*float64(r.procs)) * 1000 / float64(r.records)
	}},
	phaseRow("new"),
	phaseRow("replay"),
	phaseRow("dup"),
	{"process start-up and exit, no event (ms CPU)", "%.0f", false, false, func(r round) float64 { return ms(r.idleCPU) }},
	{"peak RSS (MiB)", "%.1f", false, false, func(r round) float64 { return float64(r.maxRSS) / (1 << 20) }},
	{"the store's CPU (moto) per 1,000 records (ms)", "%.0f", false, false, func(r round) float64 {
		return ms(r.storeCPU) * 1000 / float64(r.records)
	}},
	{"heap allocations per record (Go sides)", "%.0f", false, true, func(r round) float64 {
		return float64(r.mallocs) / float64(r.records)
	}},
	{"batch p50, new keys (ms)", "%.0f", true, false, func(r round) float64 { return median(r.newBatch) }},
	{"batch with in-batch duplicates, until every record is acknowledged (ms)", "%.0f", true, false, func(r round) float64 { return median(r.ack) }},
}

// phaseRow is the process CPU per 1,000 records of one phase, start-up
// excluded.
func phaseRow(ph string) row {
	return row{"process CPU per 1,000 records, " + ph + " phase, start-up excluded (ms)", "%.0f", false, false, func(r round) float64 {
		return (ms(r.phaseCPU[ph]) - ms(r.idleCPU)) * 1000 / float64(r.phaseN[ph])
	}}
}

func ms(d time.Duration) float64 { return float64(d) / float64(time.Millisecond) }

// stats is the row's stat over t's rounds.
func (rw row) stats(t *tally) stat { return summarize(rw.values(t)) }

// values is the row's value in each of t's rounds, in round order.
func (rw row) values(t *tally) []float64 {
	xs := make([]float64, len(t.rounds))
	for i, r := range t.rounds {
		xs[i] = rw.of(r)
	}
	return xs
}

func report(w io.Writer, s settings, load []string, pt, sq, bare *tally) {
	fmt.Fprintf(w, "%d rounds × (Powertools TS, sqsonce, by hand), each first in turn; per side and round: 3 phases (new, replay, dup) × %d batches of %d records, one process each, "+
		"then %d batches whose 5 keys each come twice through an SQS queue on the same moto (visibility timeout %v, polled every %v) to one warm process; model %v, store latency %v\n",
		s.rounds, s.batches, batchSize, s.ackBatches, s.visibility, pollEvery, s.model, s.latency)
	for _, l := range load {
		fmt.Fprintln(w, l)
	}
	fmt.Fprintf(w, "\nEach measured cell: the median of the %d rounds (min–max); ⚠ where max − min exceeds %.0f %% of the median. "+
		"Floor: model + 2 × store latency. \"By hand\": the same DynamoDB calls written by hand (a conditional PutItem, the model, an UpdateItem), the floor of any implementation. "+
		"A ratio only where the two ranges do not overlap.\n\n", s.rounds, maxSpread*100)
	fmt.Fprintln(w, "| per side | Powertools TS | sqsonce | by hand | floor | sqsonce / Powertools | sqsonce / by hand |")
	fmt.Fprintln(w, "|---|---:|---:|---:|---:|---:|---:|")
	floor := fmt.Sprintf("%.0f", ms(latencyFloor(s.model, s.latency)))
	var warnings []string
	for _, rw := range rows {
		a, b, c := rw.stats(pt), rw.stats(sq), rw.stats(bare)
		f := ""
		if rw.latency {
			f = floor
		}
		ptCell, ptRatio := cell(a, rw.format), ratioCell(a, b)
		if rw.goOnly {
			ptCell, ptRatio = "—", ""
		}
		fmt.Fprintf(w, "| %s | %s | %s | %s | %s | %s | %s |\n", rw.name, ptCell, cell(b, rw.format), cell(c, rw.format), f, ptRatio, ratioCell(c, b))
		for _, x := range []struct {
			side string
			st   stat
		}{{"Powertools TS", a}, {"sqsonce", b}, {"by hand", c}} {
			if x.st.wide() && !(rw.goOnly && x.side == "Powertools TS") {
				warnings = append(warnings, fmt.Sprintf("warning: %s, %s: max − min is %.0f %% of the median (over %.0f %%): this row does not reproduce at this load",
					rw.name, x.side, x.st.spread()*100, maxSpread*100))
			}
		}
	}
	count := func(name, format string, a, b, c float64) {
		fmt.Fprintf(w, "| %s | "+format+" | "+format+" | "+format+" |  | %s | %s |\n", name, a, b, c, ratio(a, b), ratio(c, b))
	}
	rate := func(t *tally, ph string) float64 { return float64(t.calls[ph]) / float64(t.phaseRecords[ph]) }
	// A duplicate's own round trips: the phase's calls less those of its
	// new keys, at the rate of the new phase.
	dup := func(t *tally) float64 {
		return (float64(t.calls["dup"]) - rate(t, "new")*float64(t.unique["dup"])) / float64(t.dups["dup"])
	}
	count("DynamoDB calls per new record", "%.2f", rate(pt, "new"), rate(sq, "new"), rate(bare, "new"))
	count("DynamoDB calls per replayed record", "%.2f", rate(pt, "replay"), rate(sq, "replay"), rate(bare, "replay"))
	count("DynamoDB calls per in-batch duplicate", "%.2f", dup(pt), dup(sq), dup(bare))
	for _, ph := range []string{"new", "replay", "dup"} {
		of := fmt.Sprintf("of %d records", pt.phaseRecords[ph])
		if pt.dups[ph] > 0 {
			of += fmt.Sprintf(", %d duplicates", pt.dups[ph])
		}
		count(fmt.Sprintf("batch item failures, %s phase (%s)", ph, of), "%.0f", float64(pt.failures[ph]), float64(sq.failures[ph]), float64(bare.failures[ph]))
	}
	count(fmt.Sprintf("batch item failures, queued batches with duplicates (of %d records, %d duplicates)", pt.ackRecords, pt.ackRecords/2),
		"%.0f", float64(pt.ackFailures), float64(sq.ackFailures), float64(bare.ackFailures))
	fmt.Fprintf(w, "\nThe same rows as ratios paired by round (round i of one side over round i of the other, which ran in the same stretch of the run): median (min–max) of the %d rounds' ratios.\n\n", s.rounds)
	fmt.Fprintln(w, "| paired by round | sqsonce / Powertools | sqsonce / by hand |")
	fmt.Fprintln(w, "|---|---:|---:|")
	for _, rw := range rows {
		a, b, c := rw.values(pt), rw.values(sq), rw.values(bare)
		toPT := pairedCell(pairedRatios(a, b))
		if rw.goOnly {
			toPT = "—"
		}
		fmt.Fprintf(w, "| %s | %s | %s |\n", rw.name, toPT, pairedCell(pairedRatios(c, b)))
	}
	if len(warnings) > 0 {
		fmt.Fprintln(w)
		for _, l := range warnings {
			fmt.Fprintln(w, l)
		}
	}
}

func client(endpoint string) *dynamodb.Client {
	return dynamodb.NewFromConfig(aws.Config{
		Region:       "us-east-1",
		Credentials:  credentials.NewStaticCredentialsProvider("test", "test", ""),
		BaseEndpoint: aws.String(endpoint),
	})
}

func createTable(db *dynamodb.Client, name string) error {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	_, err := db.CreateTable(ctx, &dynamodb.CreateTableInput{
		TableName:            aws.String(name),
		AttributeDefinitions: []types.AttributeDefinition{{AttributeName: aws.String("id"), AttributeType: types.ScalarAttributeTypeS}},
		KeySchema:            []types.KeySchemaElement{{AttributeName: aws.String("id"), KeyType: types.KeyTypeHash}},
		BillingMode:          types.BillingModePayPerRequest,
	})
	return err
}

// worker is the sqsonce side: the guard, the DynamoDB store and the batch
// handler configured to share the table with Powertools TypeScript, around
// a record function that sleeps for the model call and returns the body's
// result.
type worker struct {
	handler   func(context.Context, events.SQSEvent) (events.SQSEventResponse, error)
	remaining time.Duration
	mu        sync.Mutex
	ran       []string
}

// bareArm makes the worker the bare arm (newBareHandler) instead of sqsonce.
var bareArm bool

func newWorker(req powertools.Request) (*worker, error) {
	if bareArm {
		w := &worker{remaining: time.Duration(req.RemainingMs) * time.Millisecond, ran: []string{}}
		w.handler = newBareHandler(req, func(id string) {
			w.mu.Lock()
			w.ran = append(w.ran, id)
			w.mu.Unlock()
		})
		return w, nil
	}
	store, err := dynamostore.New(client(req.Endpoint), req.Table, dynamostore.WithDataFormat(dynamostore.DataPowertoolsTypeScript))
	if err != nil {
		return nil, err
	}
	quiet := slog.New(slog.DiscardHandler)
	g, err := idempotency.New(idempotency.Config{Store: store, Namespace: req.KeyPrefix, Format: idempotency.FormatPowertoolsTypeScript, Logger: quiet})
	if err != nil {
		return nil, err
	}
	key, err := jmespath.Compile(req.EventKeyJMESPath)
	if err != nil {
		return nil, err
	}
	model := time.Duration(req.ModelMs) * time.Millisecond
	w := &worker{remaining: time.Duration(req.RemainingMs) * time.Millisecond, ran: []string{}}
	w.handler = sqsonceHandler(g, key.Selector(), model, func(id string) {
		w.mu.Lock()
		w.ran = append(w.ran, id)
		w.mu.Unlock()
	})
	return w, nil
}

// sqsonceHandler is the sqsonce arm's handler: batch.SQS around the guard's
// Wrap of the operation, which records its run with ran (if not nil), calls
// the model (a sleep of model) and answers the body's "result"; batch
// reports failures as the driver's throwOnFullBatchFailure: false does.
func sqsonceHandler(g *idempotency.Guard, key idempotency.Selector, model time.Duration, ran func(messageID string)) func(context.Context, events.SQSEvent) (events.SQSEventResponse, error) {
	return batch.SQS(idempotency.Wrap(g, key, func(ctx context.Context, m events.SQSMessage) (json.RawMessage, error) {
		if ran != nil {
			ran(m.MessageId)
		}
		select {
		case <-time.After(model): // the model call
		case <-ctx.Done():
			return nil, ctx.Err()
		}
		var b struct {
			Result json.RawMessage `json:"result"`
		}
		if err := json.Unmarshal([]byte(m.Body), &b); err != nil {
			return nil, err
		}
		return b.Result, nil
	}), batch.Options{Logger: slog.New(slog.DiscardHandler), NoFullBatchError: true})
}

// run runs one event under the request's remaining time and returns its
// failures and duration in ms.
func (w *worker) run(ev events.SQSEvent) ([]events.SQSBatchItemFailure, float64, error) {
	ctx, cancel := context.WithTimeout(context.Background(), w.remaining)
	defer cancel()
	start := time.Now()
	resp, err := w.handler(ctx, ev)
	return resp.BatchItemFailures, float64(time.Since(start).Microseconds()) / 1000, err
}

// runWorker is the sqsonce side of the driver's protocol: one request on
// in, one report on out.
func runWorker(in io.Reader, out io.Writer) error {
	var req powertools.Request
	if err := json.NewDecoder(in).Decode(&req); err != nil {
		return err
	}
	w, err := newWorker(req)
	if err != nil {
		return err
	}
	rep := powertools.Report{}
	var before, after runtime.MemStats
	runtime.ReadMemStats(&before)
	for _, ev := range req.Events {
		failures, ms, err := w.run(ev)
		if err != nil {
			return err
		}
		rep.Events = append(rep.Events, powertools.EventReport{BatchItemFailures: failures, Ms: ms})
	}
	runtime.ReadMemStats(&after)
	rep.Mallocs = after.Mallocs - before.Mallocs
	rep.Ran = w.ran
	return json.NewEncoder(out).Encode(rep)
}
