// Command benchpeer runs one SQS workload through Powertools for AWS Lambda
// (TypeScript) and through sqsonce, alternately, against one moto_server
// behind a proxy of its own that adds a fixed latency to every DynamoDB call
// and counts the calls by operation. It prints, for each side and as a
// ratio: process CPU and peak RSS per 1,000 records, the p50 of a batch of
// new keys, DynamoDB round trips per record for new keys, replays and
// in-batch duplicates, and batch item failures. make bench-peer runs it.
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
	"slices"
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
	keyPrefix   = "bench"
	keyJMESPath = "powertools_json(body).idempotency_key"
	batchSize   = 10 // SQS's default batch for Lambda
)

func main() {
	worker := flag.Bool("worker", false, "run as the sqsonce worker: a driver request on stdin, a report on stdout")
	driver := flag.String("driver", "internal/testenv/powertools/testdata", "the folder of driver.mjs and its installed packages")
	rounds := flag.Int("rounds", 3, "rounds; each runs both sides, in alternating order")
	batches := flag.Int("batches", 20, "batches of 10 records per phase")
	model := flag.Duration("model", 200*time.Millisecond, "the model call's duration")
	latency := flag.Duration("latency", 5*time.Millisecond, "latency the proxy adds to every DynamoDB call")
	flag.Parse()
	if *worker {
		if err := runWorker(os.Stdin, os.Stdout); err != nil {
			log.Fatal(err)
		}
		return
	}
	if *rounds < 1 || *batches < 1 || *model < 0 || *latency < 0 {
		log.Fatal("benchpeer: -rounds and -batches must be positive, -model and -latency not negative")
	}
	if err := powertools.Available(*driver); err != nil {
		log.Fatal(err)
	}
	if err := bench(*driver, *rounds, *batches, *model, *latency); err != nil {
		log.Fatal(err)
	}
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

// phase is one part of the workload.
type phase struct {
	name   string
	events []events.SQSEvent
	unique int // records whose key is new to the table
	dups   int // records whose key another record of the same batch carries
}

// workload makes round's phases: new keys; the same keys again (a
// producer's re-send: new message ids); and new keys each sent twice in the
// same batch.
func workload(round, batches int) []phase {
	msg := func(key string) events.SQSMessage {
		body, _ := json.Marshal(map[string]any{
			"idempotency_key": key,
			"result":          map[string]any{"document_id": key, "summary": strings.Repeat("a summary of the document ", 12), "tokens": 312},
		})
		return events.SQSMessage{
			MessageId: "m-" + rand.Text(), Body: string(body), EventSource: "aws:sqs",
			EventSourceARN: "arn:aws:sqs:us-east-1:123456789012:bench", AWSRegion: "us-east-1",
			Attributes: map[string]string{"ApproximateReceiveCount": "1"},
		}
	}
	run := rand.Text()[:8]
	newKeys := make([][]string, batches)
	for b := range newKeys {
		for i := range batchSize {
			newKeys[b] = append(newKeys[b], fmt.Sprintf("%s-r%d-new-%d-%d", run, round, b, i))
		}
	}
	mk := func(keys [][]string) []events.SQSEvent {
		evs := make([]events.SQSEvent, len(keys))
		for b, ks := range keys {
			for _, k := range ks {
				evs[b].Records = append(evs[b].Records, msg(k))
			}
		}
		return evs
	}
	dupKeys := make([][]string, batches)
	for b := range dupKeys {
		for i := range batchSize {
			dupKeys[b] = append(dupKeys[b], fmt.Sprintf("%s-r%d-dup-%d-%d", run, round, b, i/2))
		}
	}
	n := batches * batchSize
	return []phase{
		{name: "new", events: mk(newKeys), unique: n},
		{name: "replay", events: mk(newKeys)},
		{name: "dup", events: mk(dupKeys), unique: n / 2, dups: n / 2},
	}
}

// tally adds up one side's measurements.
type tally struct {
	records      int
	cpu          time.Duration
	maxRSS       int64
	newBatch     []float64 // ms of each batch of new keys
	calls        map[string]int
	phaseRecords map[string]int // records per phase
	failures     map[string]int
	unique       map[string]int
	dups         map[string]int
	startCPU     time.Duration // CPU of processes that ran no event: start-up and exit
	starts       int           // processes that ran events
	idles        int           // processes that ran no event
}

func newTally() *tally {
	return &tally{calls: map[string]int{}, phaseRecords: map[string]int{}, failures: map[string]int{}, unique: map[string]int{}, dups: map[string]int{}}
}

func bench(driver string, rounds, batches int, model, latency time.Duration) error {
	endpoint, stop, err := motoserver.Start()
	if err != nil {
		return err
	}
	defer func() { _ = stop() }()
	target, err := url.Parse(endpoint)
	if err != nil {
		return err
	}
	px := &proxy{next: httputil.NewSingleHostReverseProxy(target), delay: latency, ops: map[string]int{}}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return err
	}
	srv := &http.Server{Handler: px, ReadHeaderTimeout: 10 * time.Second}
	go func() { _ = srv.Serve(ln) }()
	defer srv.Close()
	proxied := "http://" + ln.Addr().String()

	db := client(endpoint)
	table := "bench-" + strings.ToLower(rand.Text()[:8])
	if err := createTable(db, table); err != nil {
		return err
	}
	self, err := os.Executable()
	if err != nil {
		return err
	}
	sides := []struct {
		name string
		cmd  func(ctx context.Context) *exec.Cmd
	}{
		{"Powertools TS", func(ctx context.Context) *exec.Cmd {
			c := exec.CommandContext(ctx, "node", "driver.mjs")
			c.Dir = driver
			c.Env = append(os.Environ(), "AWS_REGION=us-east-1", "POWERTOOLS_IDEMPOTENCY_DISABLED=false")
			return c
		}},
		{"sqsonce", func(ctx context.Context) *exec.Cmd { return exec.CommandContext(ctx, self, "-worker") }},
	}
	tallies := []*tally{newTally(), newTally()}
	for r := range rounds {
		order := []int{0, 1}
		if r%2 == 1 {
			order = []int{1, 0}
		}
		for _, si := range order {
			t := tallies[si]
			for _, ph := range workload(r, batches) {
				req := powertools.Request{
					Endpoint: proxied, Table: table, KeyPrefix: keyPrefix, EventKeyJMESPath: keyJMESPath,
					RemainingMs: 120_000, ModelMs: int(model / time.Millisecond), Events: ph.events,
				}
				ctx, cancel := context.WithTimeout(context.Background(), 10*time.Minute)
				px.take()
				rep, err := powertools.RunProcess(sides[si].cmd(ctx), req)
				ops := px.take()
				cancel()
				if err != nil {
					return fmt.Errorf("%s, round %d, phase %s: %w", sides[si].name, r, ph.name, err)
				}
				n := len(ph.events) * batchSize
				t.records += n
				t.cpu += rep.Usage.CPU
				t.maxRSS = max(t.maxRSS, rep.Usage.MaxRSS)
				t.calls[ph.name] += total(ops)
				t.phaseRecords[ph.name] += n
				t.unique[ph.name] += ph.unique
				t.dups[ph.name] += ph.dups
				for _, ev := range rep.Events {
					t.failures[ph.name] += len(ev.BatchItemFailures)
					if ph.name == "new" {
						t.newBatch = append(t.newBatch, ev.Ms)
					}
				}
				fmt.Fprintf(os.Stderr, "round %d %-13s %-6s %4d records, %5d calls %v, %3d failures, cpu %v\n",
					r, sides[si].name, ph.name, n, total(ops), ops, failuresOf(rep), rep.Usage.CPU.Round(time.Millisecond))
				t.starts++
			}
			// The same process with no event: what start-up and exit cost.
			ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
			rep, err := powertools.RunProcess(sides[si].cmd(ctx), powertools.Request{Endpoint: proxied, Table: table,
				KeyPrefix: keyPrefix, EventKeyJMESPath: keyJMESPath, Events: []events.SQSEvent{}})
			cancel()
			if err != nil {
				return fmt.Errorf("%s, round %d, no events: %w", sides[si].name, r, err)
			}
			t.startCPU += rep.Usage.CPU
			t.idles++
		}
	}
	report(os.Stdout, rounds, batches, model, latency, tallies[0], tallies[1])
	return nil
}

func failuresOf(rep powertools.Report) int {
	n := 0
	for _, ev := range rep.Events {
		n += len(ev.BatchItemFailures)
	}
	return n
}

func p50(ms []float64) float64 {
	s := slices.Clone(ms)
	slices.Sort(s)
	if len(s) == 0 {
		return 0
	}
	return s[len(s)/2]
}

func report(w io.Writer, rounds, batches int, model, latency time.Duration, pt, sq *tally) {
	perK := func(t *tally) float64 { return float64(t.cpu.Milliseconds()) * 1000 / float64(t.records) }
	start := func(t *tally) float64 { return float64(t.startCPU.Milliseconds()) / float64(t.idles) }
	perKRun := func(t *tally) float64 {
		return (float64(t.cpu.Milliseconds()) - start(t)*float64(t.starts)) * 1000 / float64(t.records)
	}
	rss := func(t *tally) float64 { return float64(t.maxRSS) / (1 << 20) }
	rate := func(t *tally, ph string) float64 { return float64(t.calls[ph]) / float64(t.phaseRecords[ph]) }
	// A duplicate's own round trips: the phase's calls less those of its
	// new keys, at the rate of the new phase.
	dup := func(t *tally) float64 {
		return (float64(t.calls["dup"]) - rate(t, "new")*float64(t.unique["dup"])) / float64(t.dups["dup"])
	}
	ratio := func(a, b float64) string {
		if a == 0 {
			if b == 0 {
				return "="
			}
			return "∞"
		}
		return fmt.Sprintf("%.2f", b/a)
	}
	fmt.Fprintf(w, "%d rounds × (Powertools TS, sqsonce) × 3 phases (new, replay, dup) × %d batches of %d records; model %v, store latency %v\n\n",
		rounds, batches, batchSize, model, latency)
	fmt.Fprintln(w, "| per side | Powertools TS | sqsonce | sqsonce / Powertools |")
	fmt.Fprintln(w, "|---|---:|---:|---:|")
	row := func(name, format string, a, b float64) {
		fmt.Fprintf(w, "| %s | "+format+" | "+format+" | %s |\n", name, a, b, ratio(a, b))
	}
	row("process CPU per 1,000 records (ms)", "%.0f", perK(pt), perK(sq))
	row("process CPU per 1,000 records, start-up excluded (ms)", "%.0f", perKRun(pt), perKRun(sq))
	row("process start-up and exit, no event (ms CPU)", "%.0f", start(pt), start(sq))
	row("peak RSS (MiB)", "%.1f", rss(pt), rss(sq))
	row("batch p50, new keys (ms)", "%.0f", p50(pt.newBatch), p50(sq.newBatch))
	row("DynamoDB calls per new record", "%.2f", rate(pt, "new"), rate(sq, "new"))
	row("DynamoDB calls per replayed record", "%.2f", rate(pt, "replay"), rate(sq, "replay"))
	row("DynamoDB calls per in-batch duplicate", "%.2f", dup(pt), dup(sq))
	for _, ph := range []string{"new", "replay", "dup"} {
		row("batch item failures, "+ph+" phase", "%.0f", float64(pt.failures[ph]), float64(sq.failures[ph]))
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

// runWorker is the sqsonce side: the driver's protocol, with the guard,
// the DynamoDB store and the batch handler configured to share the table
// with Powertools TypeScript.
func runWorker(in io.Reader, out io.Writer) error {
	var req powertools.Request
	if err := json.NewDecoder(in).Decode(&req); err != nil {
		return err
	}
	store, err := dynamostore.New(client(req.Endpoint), req.Table, dynamostore.WithDataFormat(dynamostore.DataPowertoolsTypeScript))
	if err != nil {
		return err
	}
	quiet := slog.New(slog.DiscardHandler)
	g, err := idempotency.New(idempotency.Config{Store: store, Namespace: req.KeyPrefix, Format: idempotency.FormatPowertoolsTypeScript, Logger: quiet})
	if err != nil {
		return err
	}
	key, err := jmespath.Compile(req.EventKeyJMESPath)
	if err != nil {
		return err
	}
	model := time.Duration(req.ModelMs) * time.Millisecond
	var mu sync.Mutex
	var ran []string
	handler := batch.SQS(idempotency.Wrap(g, key.Select, func(ctx context.Context, m events.SQSMessage) (json.RawMessage, error) {
		mu.Lock()
		ran = append(ran, m.MessageId)
		mu.Unlock()
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
	}), batch.Options{Logger: quiet})
	rep := powertools.Report{}
	for _, ev := range req.Events {
		ctx, cancel := context.WithTimeout(context.Background(), time.Duration(req.RemainingMs)*time.Millisecond)
		start := time.Now()
		resp, err := handler(ctx, ev)
		ms := float64(time.Since(start).Microseconds()) / 1000
		cancel()
		if err != nil {
			return err
		}
		rep.Events = append(rep.Events, powertools.EventReport{BatchItemFailures: resp.BatchItemFailures, Ms: ms})
	}
	rep.Ran = ran
	if rep.Ran == nil {
		rep.Ran = []string{}
	}
	return errors.Join(json.NewEncoder(out).Encode(rep))
}
