package main

import (
	"context"
	"encoding/json"
	"errors"
	"io"
	"log/slog"
	"net"
	"net/http"
	"os"
	"os/exec"
	"runtime/metrics"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/aws/aws-lambda-go/events"
	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"github.com/sqsonce/sqsonce/internal/testenv/powertools"
	"github.com/sqsonce/sqsonce/middleware/batch"
	"github.com/sqsonce/sqsonce/middleware/idempotency"
	"github.com/sqsonce/sqsonce/middleware/idempotency/driver"
	"github.com/sqsonce/sqsonce/middleware/idempotency/dynamostore"
	"github.com/sqsonce/sqsonce/middleware/idempotency/jmespath"
	"github.com/sqsonce/sqsonce/middleware/idempotency/memstore"
)

// fakeDynamo is a DynamoDB of canned answers for BenchmarkFloor: enough of
// PutItem and UpdateItem for both arms' calls, and little CPU of its own, so
// that the benchmark measures the client side. A PutItem on a record whose
// status is COMPLETED fails its condition with the record (ALL_OLD); any
// other PutItem is applied. An UpdateItem applies its SET clauses (values
// and names substituted) to the record it keys; its condition and REMOVE
// clauses are not evaluated. Records are kept only while keep is set.
type fakeDynamo struct {
	mu    sync.Mutex
	keep  bool
	items map[string]map[string]json.RawMessage
}

const completedS = `{"S":"COMPLETED"}`

func (f *fakeDynamo) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	if r.URL.Path == "/keep" { // the benchmark's switch
		f.mu.Lock()
		f.keep = r.URL.Query().Get("on") == "1"
		f.mu.Unlock()
		return
	}
	b, _ := io.ReadAll(r.Body)
	var in struct {
		Item                      map[string]json.RawMessage
		Key                       map[string]json.RawMessage
		UpdateExpression          string
		ExpressionAttributeNames  map[string]string
		ExpressionAttributeValues map[string]json.RawMessage
	}
	if err := json.Unmarshal(b, &in); err != nil {
		http.Error(w, err.Error(), http.StatusBadRequest)
		return
	}
	w.Header().Set("Content-Type", "application/x-amz-json-1.0")
	f.mu.Lock()
	defer f.mu.Unlock()
	switch strings.TrimPrefix(r.Header.Get("X-Amz-Target"), "DynamoDB_20120810.") {
	case "PutItem":
		id := string(in.Item["id"])
		if old, ok := f.items[id]; ok && string(old["status"]) == completedS {
			item, _ := json.Marshal(old)
			w.WriteHeader(http.StatusBadRequest)
			_, _ = io.WriteString(w, `{"__type":"com.amazonaws.dynamodb.v20120810#ConditionalCheckFailedException","message":"The conditional request failed","Item":`+string(item)+`}`)
			return
		}
		if f.keep {
			f.items[id] = in.Item
		}
	case "UpdateItem":
		id := string(in.Key["id"])
		item := f.items[id]
		if item == nil {
			item = map[string]json.RawMessage{}
			for k, v := range in.Key {
				item[k] = v
			}
		}
		set, _, _ := strings.Cut(strings.TrimPrefix(in.UpdateExpression, "SET "), " REMOVE ")
		for clause := range strings.SplitSeq(set, ", ") {
			name, value, _ := strings.Cut(clause, " = ")
			if n, ok := in.ExpressionAttributeNames[name]; ok {
				name = n
			}
			item[name] = in.ExpressionAttributeValues[value]
		}
		if f.keep {
			f.items[id] = item
		}
	default:
		http.Error(w, "fakeDynamo: unsupported operation", http.StatusBadRequest)
		return
	}
	_, _ = io.WriteString(w, "{}")
}

// BenchmarkGuardOnly is BenchmarkFloor's sqsonce arm with memstore instead
// of DynamoDB, and its bare arm without the DynamoDB calls: what each arm
// costs besides its store calls.
func BenchmarkGuardOnly(b *testing.B) {
	for _, arm := range []string{"sqsonce", "bare"} {
		b.Run("new/"+arm, func(b *testing.B) {
			quiet := slog.New(slog.DiscardHandler)
			var h func(context.Context, events.SQSEvent) (events.SQSEventResponse, error)
			if arm == "sqsonce" {
				g, err := idempotency.New(idempotency.Config{Store: memstore.New(), Namespace: keyPrefix, Format: idempotency.FormatPowertoolsTypeScript, Logger: quiet})
				if err != nil {
					b.Fatal(err)
				}
				key, err := jmespath.Compile(keyJMESPath)
				if err != nil {
					b.Fatal(err)
				}
				h = sqsonceHandler(g, key.Selector(), 0, nil)
			} else {
				h = func(ctx context.Context, ev events.SQSEvent) (events.SQSEventResponse, error) {
					var wg sync.WaitGroup
					sem := make(chan struct{}, batch.DefaultConcurrency)
					for _, m := range ev.Records {
						sem <- struct{}{}
						wg.Go(func() {
							defer func() { <-sem }()
							var b struct {
								Key    string          `json:"idempotency_key"`
								Result json.RawMessage `json:"result"`
							}
							_ = json.Unmarshal([]byte(m.Body), &b)
							select {
							case <-time.After(0):
							case <-ctx.Done():
							}
						})
					}
					wg.Wait()
					return events.SQSEventResponse{}, nil
				}
			}
			n := 0
			b.ReportAllocs()
			start := cpu()
			for b.Loop() {
				n++
				keys := make([]string, batchSize)
				for i := range keys {
					keys[i] = "k-" + strconv.Itoa(n) + "-" + strconv.Itoa(i)
				}
				ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
				if _, err := h(ctx, eventsOf([][]string{keys})[0]); err != nil {
					b.Fatal(err)
				}
				cancel()
			}
			b.ReportMetric(float64(cpu()-start)/float64(b.N), "cpu-ns/op")
		})
	}
}

// fakeEnv, set, makes the test binary serve fakeDynamo on the address it
// prints, until its standard input closes: BenchmarkFloor runs the fake in a
// process of its own, so that its CPU is not the benchmark's.
const fakeEnv = "BENCHPEER_FAKE_DYNAMO"

// serveFake serves fakeDynamo when fakeEnv is set (called first by TestMain).
func serveFake() {
	if os.Getenv(fakeEnv) != "" {
		l, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			os.Exit(1)
		}
		os.Stdout.WriteString(l.Addr().String() + "\n")
		go func() { _, _ = io.Copy(io.Discard, os.Stdin); os.Exit(0) }()
		_ = http.Serve(l, &fakeDynamo{items: map[string]map[string]json.RawMessage{}})
		os.Exit(1)
	}
}

// startFake starts fakeDynamo in a child process and returns its URL.
func startFake(b *testing.B) string {
	cmd := exec.Command(os.Args[0])
	cmd.Env = append(os.Environ(), fakeEnv+"=1")
	stdin, err := cmd.StdinPipe()
	if err != nil {
		b.Fatal(err)
	}
	out, err := cmd.StdoutPipe()
	if err != nil {
		b.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { stdin.Close(); _ = cmd.Wait() })
	var addr [64]byte
	n, err := out.Read(addr[:])
	if err != nil {
		b.Fatal(err)
	}
	return "http://" + strings.TrimSpace(string(addr[:n]))
}

// schedCounts is the goroutines this process has created and the samples
// of the scheduler's latency histogram, from runtime/metrics: the runtime
// samples about one in eight times a goroutine is made runnable, so the
// second compares arms, not an absolute count of wakeups.
func schedCounts() [2]uint64 {
	s := []metrics.Sample{{Name: "/sched/goroutines-created:goroutines"}, {Name: "/sched/latencies:seconds"}}
	metrics.Read(s)
	var samples uint64
	for _, c := range s[1].Value.Float64Histogram().Counts {
		samples += c
	}
	return [2]uint64{s[0].Value.Uint64(), samples}
}

// cpu is this process's user and system CPU time so far.
func cpu() time.Duration {
	var ru syscall.Rusage
	_ = syscall.Getrusage(syscall.RUSAGE_SELF, &ru)
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

// BenchmarkFloor runs batches of 10 records through sqsonce's arm and the
// bare arm (bare.go) as bench-peer's worker builds them (newWorker), model
// 0, against fakeDynamo over HTTP in a process of its own: CPU (cpu-ns/op,
// this process's user and system time), allocations and bytes per batch of
// new keys, and per batch of replayed ones. The ratio sqsonce / bare is the
// client side of bench-peer's "sqsonce / by hand" row:
//
//	cd tools && go test -run '^$' -bench BenchmarkFloor -benchmem -count 6 ./benchpeer
func BenchmarkFloor(b *testing.B) {
	for _, phase := range []string{"new", "replay"} {
		arms := []string{"sqsonce", "bare"}
		if v := os.Getenv("BENCHPEER_VARIANTS"); v != "" {
			arms = append(arms, strings.Split(v, ",")...)
		}
		for _, arm := range arms {
			b.Run(phase+"/"+arm, func(b *testing.B) {
				url := startFake(b)
				keep := func(on string) {
					resp, err := http.Get(url + "/keep?on=" + on)
					if err != nil {
						b.Fatal(err)
					}
					resp.Body.Close()
				}
				bareArm = arm == "bare"
				defer func() { bareArm = false }()
				req := powertools.Request{Endpoint: url, Table: "bench", KeyPrefix: keyPrefix,
					EventKeyJMESPath: keyJMESPath, RemainingMs: 120_000}
				w, err := newWorker(req)
				if strings.Contains(arm, "-") {
					w, err = variantWorker(req, arm)
				}
				if err != nil {
					b.Fatal(err)
				}
				n := 0
				batch := func() events.SQSEvent {
					n++
					keys := make([]string, batchSize)
					for i := range keys {
						keys[i] = "k-" + strconv.Itoa(n) + "-" + strconv.Itoa(i)
					}
					return eventsOf([][]string{keys})[0]
				}
				run := func(ev events.SQSEvent) {
					ctx, cancel := context.WithTimeout(context.Background(), w.remaining)
					resp, err := w.handler(ctx, ev)
					cancel()
					if err != nil || len(resp.BatchItemFailures) > 0 {
						b.Fatalf("batch: %v, %d failures", err, len(resp.BatchItemFailures))
					}
					w.ran = w.ran[:0]
				}
				var replayed events.SQSEvent
				if phase == "replay" {
					keep("1")
					replayed = batch()
					run(replayed)
					keep("0")
				}
				evs := make([]events.SQSEvent, 64) // built before the timer, reused
				for i := range evs {
					evs[i] = batch()
				}
				run(evs[0]) // warm: connections, pools
				b.ReportAllocs()
				i := 0
				start, sched := cpu(), schedCounts()
				for b.Loop() {
					if phase == "replay" {
						run(replayed)
						continue
					}
					run(evs[i%len(evs)]) // records not kept: every claim finds no record
					i++
				}
				b.ReportMetric(float64(cpu()-start)/float64(b.N), "cpu-ns/op")
				after := schedCounts()
				b.ReportMetric(float64(after[0]-sched[0])/float64(b.N), "goroutines/op")
				b.ReportMetric(float64(after[1]-sched[1])/float64(b.N), "sched-samples/op")
			})
		}
	}
}

// BenchmarkStoreCalls is one record's DynamoDB calls alone, one after
// another on one goroutine: dynamostore's Acquire and Complete as sqsonce's
// arm makes them, against the bare arm's PutItem and UpdateItem.
func BenchmarkStoreCalls(b *testing.B) {
	url := startFake(b)
	db := client(url)
	data := json.RawMessage(`{"document_id":"k","summary":"a summary of the document a summary of the document ","tokens":312}`)
	b.Run("new/sqsonce", func(b *testing.B) {
		store, err := dynamostore.New(db, "bench", dynamostore.WithDataFormat(dynamostore.DataPowertoolsTypeScript))
		if err != nil {
			b.Fatal(err)
		}
		b.ReportAllocs()
		start := cpu()
		for b.Loop() {
			now := time.Now()
			rec := driver.Record{ID: "bench#abcdefghijklmnopqrstuv==", Status: driver.StatusInProgress, ExpiresAt: now.Add(time.Hour),
				LeaseUntil: now.Add(2 * time.Minute), Owner: "OWNEROWNEROWNEROWNEROWNER1"}
			if _, _, err := store.Acquire(context.Background(), rec, now, driver.Takeover); err != nil {
				b.Fatal(err)
			}
			rec.Status, rec.Data = driver.StatusCompleted, data
			if _, err := store.Complete(context.Background(), rec); err != nil {
				b.Fatal(err)
			}
		}
		b.ReportMetric(float64(cpu()-start)/float64(b.N), "cpu-ns/op")
	})
	b.Run("new/bare", func(b *testing.B) {
		b.ReportAllocs()
		start := cpu()
		for b.Loop() {
			id := &types.AttributeValueMemberS{Value: "bench#k-1-1"}
			_, err := db.PutItem(context.Background(), &dynamodb.PutItemInput{
				TableName: aws.String("bench"),
				Item: map[string]types.AttributeValue{
					"id":         id,
					"status":     &types.AttributeValueMemberS{Value: "INPROGRESS"},
					"expiration": &types.AttributeValueMemberN{Value: "1234567890"},
				},
				ConditionExpression:                 aws.String("attribute_not_exists(id)"),
				ReturnValuesOnConditionCheckFailure: types.ReturnValuesOnConditionCheckFailureAllOld,
			})
			if err != nil {
				b.Fatal(err)
			}
			_, err = db.UpdateItem(context.Background(), &dynamodb.UpdateItemInput{
				TableName:                aws.String("bench"),
				Key:                      map[string]types.AttributeValue{"id": id},
				UpdateExpression:         aws.String("SET #s = :c, #d = :d"),
				ExpressionAttributeNames: map[string]string{"#s": "status", "#d": "data"},
				ExpressionAttributeValues: map[string]types.AttributeValue{
					":c": &types.AttributeValueMemberS{Value: "COMPLETED"},
					":d": &types.AttributeValueMemberS{Value: string(data)},
				},
			})
			if err != nil {
				b.Fatal(err)
			}
		}
		b.ReportMetric(float64(cpu()-start)/float64(b.N), "cpu-ns/op")
	})
}

// variantWorker is newWorker's sqsonce arm with one thing changed, or the
// bare arm's record function run by batch.SQS, for finding what costs.
func variantWorker(req powertools.Request, variant string) (*worker, error) {
	quiet := slog.New(slog.DiscardHandler)
	w := &worker{remaining: time.Duration(req.RemainingMs) * time.Millisecond, ran: []string{}}
	if variant == "bare-batch" {
		bareArm = true
		bw, _ := newWorker(req)
		bareArm = false
		// The bare handler runs a whole event; run it one record at a time
		// inside batch.SQS's lanes.
		w.handler = batch.SQS(func(ctx context.Context, m events.SQSMessage) (struct{}, error) {
			resp, err := bw.handler(ctx, events.SQSEvent{Records: []events.SQSMessage{m}})
			if err == nil && len(resp.BatchItemFailures) > 0 {
				err = errors.New("failed")
			}
			return struct{}{}, err
		}, batch.Options{Logger: quiet, NoFullBatchError: true})
		return w, nil
	}
	format := dynamostore.DataPowertoolsTypeScript
	if variant == "sqsonce-json" {
		format = dynamostore.DataJSON
	}
	store, err := dynamostore.New(client(req.Endpoint), req.Table, dynamostore.WithDataFormat(format))
	if err != nil {
		return nil, err
	}
	cfg := idempotency.Config{Store: store, Namespace: req.KeyPrefix, Format: idempotency.FormatPowertoolsTypeScript, Logger: quiet}
	if variant == "sqsonce-nokeep" {
		cfg.KeepAliveEvery = -1
	}
	g, err := idempotency.New(cfg)
	if err != nil {
		return nil, err
	}
	expr, err := jmespath.Compile(req.EventKeyJMESPath)
	if err != nil {
		return nil, err
	}
	key := expr.Selector()
	if variant == "sqsonce-bodyfield" {
		key = idempotency.BodyField("idempotency_key")
	}
	w.handler = sqsonceHandler(g, key, 0, nil)
	return w, nil
}
