//go:build deploylocal

package deploy_test

import (
	"bufio"
	"bytes"
	"context"
	"crypto/rand"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"text/tabwriter"
	"time"

	"github.com/aws/aws-lambda-go/events"
	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	ddbtypes "github.com/aws/aws-sdk-go-v2/service/dynamodb/types"
	"github.com/aws/aws-sdk-go-v2/service/lambda"
	"github.com/aws/aws-sdk-go-v2/service/s3"
	"github.com/aws/aws-sdk-go-v2/service/sqs"
	sqstypes "github.com/aws/aws-sdk-go-v2/service/sqs/types"

	"github.com/sqsonce/sqsonce/handler"
	"github.com/sqsonce/sqsonce/internal/testenv/esm"
	"github.com/sqsonce/sqsonce/internal/testenv/rie"
)

// delivery is a settled delivery and when it was settled.
type delivery struct {
	esm.Delivery
	at time.Time
}

// ledger keeps every delivery the poller settled.
type ledger struct {
	mu sync.Mutex
	ds []delivery
}

func (l *ledger) add(d esm.Delivery) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.ds = append(l.ds, delivery{Delivery: d, at: time.Now()})
}

// of returns the deliveries of the message with id.
func (l *ledger) of(id string) []delivery {
	l.mu.Lock()
	defer l.mu.Unlock()
	var out []delivery
	for _, d := range l.ds {
		if d.MessageID == id {
			out = append(out, d)
		}
	}
	return out
}

// acked reports whether the message's last delivery was acknowledged and
// not lost.
func (l *ledger) acked(id string) bool {
	ds := l.of(id)
	return len(ds) > 0 && ds[len(ds)-1].Acked && !ds[len(ds)-1].Lost
}

// feed is the deployed stack, fed from its own queue.
type feed struct {
	c          clients
	queueURL   string
	dlqURL     string
	requestLog string
	ledger     *ledger
	lose       sync.Map // message ids whose first acknowledgement is lost
	nonce      string
}

// waitFor polls cond every interval until it holds, failing t after
// timeout.
func waitFor(t *testing.T, timeout, interval time.Duration, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(timeout)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("%s: not within %v", what, timeout)
		}
		time.Sleep(interval)
	}
}

// body is a summarise request for document doc, version 1.
func (f *feed) body(key, doc, requestID string) string {
	b, _ := json.Marshal(map[string]any{
		"idempotency_key": key + "-" + f.nonce,
		"document":        map[string]any{"id": doc + "-" + f.nonce, "version": "1"},
		"prompt_version":  "v1",
		"request_id":      requestID,
	})
	return string(b)
}

func (f *feed) send(t *testing.T, body string) string {
	t.Helper()
	out, err := f.c.sqs.SendMessage(context.Background(), &sqs.SendMessageInput{QueueUrl: aws.String(f.queueURL), MessageBody: aws.String(body)})
	if err != nil {
		t.Fatalf("SendMessage: %v", err)
	}
	return aws.ToString(out.MessageId)
}

// calls returns the request log's lines: one per provider call.
func (f *feed) calls(t *testing.T) []handler.CallRecord {
	t.Helper()
	b, err := os.ReadFile(f.requestLog)
	if errors.Is(err, os.ErrNotExist) {
		return nil
	}
	if err != nil {
		t.Fatal(err)
	}
	var out []handler.CallRecord
	sc := bufio.NewScanner(bytes.NewReader(b))
	for sc.Scan() {
		var c handler.CallRecord
		if err := json.Unmarshal(sc.Bytes(), &c); err != nil {
			t.Fatalf("request log line %q: %v", sc.Text(), err)
		}
		out = append(out, c)
	}
	return out
}

// callsFor returns the provider calls made for the key that the message
// with id made a call for, and that key's record id.
func (f *feed) callsFor(t *testing.T, messageID string) (int, string) {
	t.Helper()
	calls := f.calls(t)
	recordID := ""
	for _, c := range calls {
		if c.MessageID == messageID {
			recordID = c.RecordID
		}
	}
	if recordID == "" {
		return 0, ""
	}
	n := 0
	for _, c := range calls {
		if c.RecordID == recordID {
			n++
		}
	}
	return n, recordID
}

// outcome is one scenario's counts.
type outcome struct {
	name          string
	sent          int
	receiveCounts []string // per message: the receive counts of its deliveries, "!" after a failed one
	acked         int
	calls         int
	recordID      string // the record's id, from the request log
	dlq           int
	note          string
}

func (f *feed) deliveriesOf(ids ...string) ([]string, int) {
	var counts []string
	acked := 0
	for _, id := range ids {
		var c []string
		for _, d := range f.ledger.of(id) {
			s := strconv.Itoa(d.ReceiveCount)
			switch {
			case d.Lost:
				s += "(ack lost)"
			case !d.Acked:
				s += "!"
			default:
				acked++
			}
			c = append(c, s)
		}
		counts = append(counts, strings.Join(c, ","))
	}
	return counts, acked
}

// feedFromQueue runs the deployed function's code under the emulator, fed
// from the deployed queue by the deployed mapping's settings, and runs the
// scenarios.
func feedFromQueue(t *testing.T, c clients, tpl template, d deployed, fn function, riePath, endpoint string) {
	ctx := context.Background()
	fnName := d.physical[tpl.only(t, "AWS::Lambda::Function")]
	cfg, err := c.lambda.GetFunctionConfiguration(ctx, &lambda.GetFunctionConfigurationInput{FunctionName: aws.String(fnName)})
	if err != nil {
		t.Fatalf("GetFunctionConfiguration: %v", err)
	}
	m := mappingOf(t, c, fnName)
	// moto runs its own copy of the mapping: on every SendMessage it
	// receives a batch from the queue, cannot invoke the function without
	// Docker, and makes the batch visible again, so each send takes one
	// receive of every visible message's maxReceiveCount. The test's
	// poller takes its place: moto's is disabled.
	if _, err := c.lambda.UpdateEventSourceMapping(ctx, &lambda.UpdateEventSourceMappingInput{UUID: m.UUID, Enabled: aws.Bool(false)}); err != nil {
		t.Fatalf("disable moto's event source mapping: %v", err)
	}
	var dlqID, queueID string
	for _, id := range tpl.ofType("AWS::SQS::Queue") {
		if strings.Contains(id, "DeadLetter") {
			dlqID = id
		} else {
			queueID = id
		}
	}
	f := &feed{
		c:          c,
		queueURL:   d.physical[queueID],
		dlqURL:     d.physical[dlqID],
		requestLog: filepath.Join(t.TempDir(), "requests.jsonl"),
		ledger:     &ledger{},
		nonce:      strings.ToLower(rand.Text()[:6]),
	}

	// The deployed function's environment as moto holds it, and what the
	// emulator needs besides: moto as the AWS endpoint, test credentials,
	// the request log, a stub call slower than the batching window.
	env := map[string]string{}
	for k, v := range cfg.Environment.Variables {
		env[k] = v
	}
	for k, v := range map[string]string{
		"AWS_ENDPOINT_URL":      endpoint,
		"AWS_ACCESS_KEY_ID":     "test",
		"AWS_SECRET_ACCESS_KEY": "test",
		"AWS_REGION":            d.region,
		"SQSONCE_REQUEST_LOG":   f.requestLog,
		"SQSONCE_STUB_DELAY":    stubDelay.String(),
	} {
		if _, ok := env[k]; ok {
			t.Fatalf("the deployed environment sets %s, which the test sets for the emulator", k)
		}
		env[k] = v
	}
	n := int(aws.ToInt32(m.ScalingConfig.MaximumConcurrency))
	invokers := make([]esm.Invoker, n)
	fns := make([]*rie.Function, n)
	t.Cleanup(func() {
		var wg sync.WaitGroup
		for i, f := range fns {
			if f == nil {
				continue
			}
			if t.Failed() {
				t.Logf("execution environment %d:\n%s", i, f.Output())
			}
			wg.Go(func() {
				if err := f.Close(); err != nil {
					t.Error(err)
				}
			})
		}
		wg.Wait()
	})
	for i := range invokers {
		f, err := rie.Start(rie.Config{
			RIE: riePath, Bootstrap: fn.bootstrap, Env: env,
			Timeout:      time.Duration(aws.ToInt32(cfg.Timeout)) * time.Second,
			FunctionName: fnName, MemorySize: int(aws.ToInt32(cfg.MemorySize)),
		})
		if err != nil {
			t.Fatal(err)
		}
		fns[i], invokers[i] = f, f
	}
	p := &esm.Poller{
		Mapping: esm.Mapping{
			QueueURL:          f.queueURL,
			QueueARN:          aws.ToString(m.EventSourceArn),
			BatchSize:         int(aws.ToInt32(m.BatchSize)),
			MaxBatchingWindow: time.Duration(aws.ToInt32(m.MaximumBatchingWindowInSeconds)) * time.Second,
			MaxConcurrency:    n,
		},
		SQS:        c.sqs,
		Invokers:   invokers,
		OnDelivery: f.ledger.add,
		LoseAck: func(m events.SQSMessage) bool {
			_, lose := f.lose.LoadAndDelete(m.MessageId)
			return lose
		},
	}
	pctx, stop := context.WithCancel(ctx)
	done := make(chan error, 1)
	go func() { done <- p.Run(pctx) }()
	t.Cleanup(func() {
		stop()
		if err := <-done; err != nil {
			t.Error(err)
		}
	})
	t.Logf("fed by %d execution environments from %s: batch size %d, batching window %v, maximum concurrency %d, function timeout %ds",
		n, queueName(f.queueURL), p.Mapping.BatchSize, p.Mapping.MaxBatchingWindow, n, aws.ToInt32(cfg.Timeout))

	// The documents, in the deployed bucket under the deployed prefix.
	bucket, prefix := cfg.Environment.Variables["SQSONCE_DOCUMENTS_BUCKET"], cfg.Environment.Variables["SQSONCE_DOCUMENTS_PREFIX"]
	for _, doc := range []string{"dup", "resend", "inprogress"} {
		if _, err := c.s3.PutObject(ctx, &s3.PutObjectInput{
			Bucket: aws.String(bucket), Key: aws.String(prefix + doc + "-" + f.nonce + "/1.txt"),
			Body: strings.NewReader("A document to summarise, named " + doc + ". It has a few sentences. That is all."),
		}); err != nil {
			t.Fatalf("PutObject: %v", err)
		}
	}

	start := time.Now()
	var mu sync.Mutex
	var outcomes []outcome
	report := func(o outcome) {
		mu.Lock()
		defer mu.Unlock()
		outcomes = append(outcomes, o)
	}
	// The scenarios run at once, as a queue's traffic would (t.Run from
	// goroutines: t.Parallel would hold them to -parallel at a time).
	timeout := time.Duration(aws.ToInt32(cfg.Timeout)) * time.Second
	maxReceive := int(maxReceiveCount(t, c, f.queueURL))
	var wg sync.WaitGroup
	for name, run := range map[string]func(*testing.T) outcome{
		"duplicate delivery":    f.duplicate,
		"producer re-send":      f.resend,
		"in-progress duplicate": func(t *testing.T) outcome { return f.inProgress(t, timeout) },
		"poison message":        func(t *testing.T) outcome { return f.poison(t, maxReceive) },
	} {
		wg.Go(func() { t.Run(name, func(t *testing.T) { report(run(t)) }) })
	}
	wg.Wait()
	elapsed := time.Since(start)
	slices.SortFunc(outcomes, func(a, b outcome) int { return strings.Compare(a.name, b.name) })

	var b strings.Builder
	w := tabwriter.NewWriter(&b, 0, 0, 2, ' ', 0)
	fmt.Fprintln(w, "scenario\tmessages sent\tdeliveries (receive counts; ! failed)\tacknowledged\tprovider calls\tDLQ messages\t")
	for _, o := range outcomes {
		fmt.Fprintf(w, "%s\t%d\t%s\t%d\t%d\t%d\t%s\n", o.name, o.sent, strings.Join(o.receiveCounts, " / "), o.acked, o.calls, o.dlq, o.note)
	}
	w.Flush()
	t.Logf("scenarios through the deployed stack, %.1fs:\n%s", elapsed.Seconds(), b.String())

	if t.Failed() {
		return
	}
	t.Run("accounting", func(t *testing.T) { f.account(t, outcomes, cfg.Environment.Variables, start) })
}

// maxReceiveCount reads the queue's redrive policy.
func maxReceiveCount(t *testing.T, c clients, queueURL string) float64 {
	t.Helper()
	out, err := c.sqs.GetQueueAttributes(context.Background(), &sqs.GetQueueAttributesInput{
		QueueUrl: aws.String(queueURL), AttributeNames: []sqstypes.QueueAttributeName{sqstypes.QueueAttributeNameRedrivePolicy},
	})
	if err != nil {
		t.Fatal(err)
	}
	var rp struct {
		MaxReceiveCount float64 `json:"maxReceiveCount"`
	}
	if err := json.Unmarshal([]byte(out.Attributes[string(sqstypes.QueueAttributeNameRedrivePolicy)]), &rp); err != nil || rp.MaxReceiveCount < 1 {
		t.Fatalf("redrive policy %q: %v", out.Attributes[string(sqstypes.QueueAttributeNameRedrivePolicy)], err)
	}
	return rp.MaxReceiveCount
}

const scenarioTimeout = 100 * time.Second

// duplicate: the first delivery's acknowledgement is lost, so SQS
// delivers the same message again; the redelivery is answered from the
// record.
func (f *feed) duplicate(t *testing.T) outcome {
	body := f.body("dup", "dup", "r-dup")
	id := f.send(t, body)
	f.lose.Store(id, true)
	waitFor(t, scenarioTimeout, 100*time.Millisecond, "the duplicate acknowledged", func() bool { return f.ledger.acked(id) })
	ds := f.ledger.of(id)
	if len(ds) != 2 || !ds[0].Lost || ds[0].ReceiveCount != 1 || ds[1].ReceiveCount != 2 {
		t.Errorf("deliveries %+v, want the first acknowledged and lost, the second acknowledged", ds)
	}
	calls, recordID := f.callsFor(t, id)
	if calls != 1 {
		t.Errorf("%d provider calls for the key, want 1", calls)
	}
	counts, acked := f.deliveriesOf(id)
	return outcome{name: "duplicate delivery", sent: 1, receiveCounts: counts, acked: acked, calls: calls, recordID: recordID, note: "one message delivered twice"}
}

// resend: the producer sends the same request again, a new message with
// the same key, after the first was answered.
func (f *feed) resend(t *testing.T) outcome {
	first := f.send(t, f.body("resend", "resend", "r-resend-1"))
	waitFor(t, scenarioTimeout, 100*time.Millisecond, "the first send acknowledged", func() bool { return f.ledger.acked(first) })
	second := f.send(t, f.body("resend", "resend", "r-resend-2"))
	waitFor(t, scenarioTimeout, 100*time.Millisecond, "the re-send acknowledged", func() bool { return f.ledger.acked(second) })
	calls, recordID := f.callsFor(t, first)
	if calls != 1 {
		t.Errorf("%d provider calls for the key, want 1", calls)
	}
	if n, _ := f.callsFor(t, second); n != 0 {
		t.Errorf("the re-send made a provider call")
	}
	counts, acked := f.deliveriesOf(first, second)
	return outcome{name: "producer re-send", sent: 2, receiveCounts: counts, acked: acked, calls: calls, recordID: recordID, note: "two messages, one key"}
}

// inProgress: a re-send arrives while the first is in its provider call.
// Its delivery fails as in progress, the function paces it to come back
// just after the holder's lease can end (deadline + 5 s), and then it is
// answered from the record, before the queue's visibility timeout would
// have returned it.
func (f *feed) inProgress(t *testing.T, timeout time.Duration) outcome {
	first := f.send(t, f.body("inprogress", "inprogress", "r-inprogress-1"))
	waitFor(t, scenarioTimeout, 100*time.Millisecond, "the first send's provider call", func() bool {
		n, _ := f.callsFor(t, first)
		return n > 0
	})
	second := f.send(t, f.body("inprogress", "inprogress", "r-inprogress-2"))
	waitFor(t, scenarioTimeout, 100*time.Millisecond, "the duplicate acknowledged", func() bool { return f.ledger.acked(second) })
	ds := f.ledger.of(second)
	if len(ds) != 2 || ds[0].Acked || !ds[1].Acked {
		t.Fatalf("duplicate's deliveries %+v, want one failed (in progress), then one acknowledged", ds)
	}
	holder := f.ledger.of(first)
	if len(holder) != 1 || !holder[0].Acked {
		t.Errorf("holder's deliveries %+v, want one, acknowledged", holder)
	}
	if !holder[0].at.Before(ds[1].at) || !ds[0].at.Before(holder[0].at) {
		t.Errorf("the duplicate failed at %v, the holder finished at %v, the duplicate was answered at %v: want that order",
			ds[0].at.Format(time.StampMilli), holder[0].at.Format(time.StampMilli), ds[1].at.Format(time.StampMilli))
	}
	gap := ds[1].at.Sub(ds[0].at)
	visibility := queueVisibility(t, f.c, f.queueURL)
	if gap >= visibility {
		t.Errorf("the duplicate came back after %v, not before the visibility timeout %v: not paced", gap, visibility)
	}
	calls, recordID := f.callsFor(t, first)
	if calls != 1 {
		t.Errorf("%d provider calls for the key, want 1", calls)
	}
	counts, acked := f.deliveriesOf(first, second)
	return outcome{name: "in-progress duplicate", sent: 2, receiveCounts: counts, acked: acked, calls: calls, recordID: recordID,
		note: fmt.Sprintf("back after %.1fs (lease: timeout %v + 5s; visibility timeout %v)", gap.Seconds(), timeout, visibility)}
}

func queueVisibility(t *testing.T, c clients, queueURL string) time.Duration {
	t.Helper()
	out, err := c.sqs.GetQueueAttributes(context.Background(), &sqs.GetQueueAttributesInput{
		QueueUrl: aws.String(queueURL), AttributeNames: []sqstypes.QueueAttributeName{sqstypes.QueueAttributeNameVisibilityTimeout},
	})
	if err != nil {
		t.Fatal(err)
	}
	s, _ := strconv.Atoi(out.Attributes[string(sqstypes.QueueAttributeNameVisibilityTimeout)])
	return time.Duration(s) * time.Second
}

// poison: a request for a document that does not exist fails on every
// delivery (its claim released each time) and reaches the deployed
// dead-letter queue after maxReceiveCount receives.
func (f *feed) poison(t *testing.T, maxReceive int) outcome {
	body := f.body("poison", "missing", "r-poison")
	id := f.send(t, body)
	var inDLQ []sqstypes.Message
	waitFor(t, scenarioTimeout, 500*time.Millisecond, "the poison message in the dead-letter queue", func() bool {
		out, err := f.c.sqs.ReceiveMessage(context.Background(), &sqs.ReceiveMessageInput{
			QueueUrl: aws.String(f.dlqURL), MaxNumberOfMessages: 10, VisibilityTimeout: 0,
		})
		if err != nil {
			t.Fatalf("receive from the dead-letter queue: %v", err)
		}
		inDLQ = out.Messages
		return len(out.Messages) > 0
	})
	if len(inDLQ) != 1 || aws.ToString(inDLQ[0].MessageId) != id || aws.ToString(inDLQ[0].Body) != body {
		t.Errorf("dead-letter queue holds %d messages, want the poison message alone", len(inDLQ))
	}
	ds := f.ledger.of(id)
	if len(ds) != maxReceive {
		t.Errorf("%d deliveries, want maxReceiveCount %d", len(ds), maxReceive)
	}
	for _, d := range ds {
		if d.Acked {
			t.Errorf("delivery %d acknowledged", d.ReceiveCount)
		}
	}
	calls, _ := f.callsFor(t, id)
	if calls != 0 {
		t.Errorf("%d provider calls, want none (the document is missing)", calls)
	}
	counts, acked := f.deliveriesOf(id)
	return outcome{name: "poison message", sent: 1, receiveCounts: counts, acked: acked, calls: calls, dlq: len(inDLQ),
		note: fmt.Sprintf("document missing; maxReceiveCount %d", maxReceive)}
}

// account checks the tables and queues after the scenarios: one COMPLETED
// record and one summary per answered key, nothing for the poison key,
// every provider call accounted for, the queue empty.
func (f *feed) account(t *testing.T, outcomes []outcome, env map[string]string, start time.Time) {
	ctx := context.Background()
	want := map[string]bool{}
	for _, o := range outcomes {
		if o.recordID != "" {
			want[o.recordID] = true
		}
	}
	if len(want) != 3 {
		t.Fatalf("record ids %v, want three", want)
	}
	if calls := f.calls(t); len(calls) != 3 {
		t.Errorf("%d provider calls in all, want 3", len(calls))
	}
	expiresAfter, err := time.ParseDuration(env["SQSONCE_EXPIRES_AFTER"])
	if err != nil {
		t.Fatal(err)
	}
	scan := func(table string) []map[string]any {
		out, err := f.c.ddb.Scan(ctx, &dynamodb.ScanInput{TableName: aws.String(table)})
		if err != nil {
			t.Fatalf("Scan %s: %v", table, err)
		}
		var items []map[string]any
		for _, it := range out.Items {
			m := map[string]any{}
			for k, v := range it {
				switch v := v.(type) {
				case *ddbtypes.AttributeValueMemberS:
					m[k] = v.Value
				case *ddbtypes.AttributeValueMemberN:
					m[k] = v.Value
				}
			}
			items = append(items, m)
		}
		return items
	}
	records := scan(env["SQSONCE_TABLE"])
	if len(records) != len(want) {
		t.Errorf("%d idempotency records, want %d: the poison key must have none", len(records), len(want))
	}
	now := time.Now()
	for _, r := range records {
		id, _ := r["id"].(string)
		if !want[id] {
			t.Errorf("record %s belongs to no answered key", id)
		}
		if r["status"] != "COMPLETED" {
			t.Errorf("record %s: status %v, want COMPLETED", id, r["status"])
		}
		exp, err := strconv.ParseInt(fmt.Sprint(r["expiration"]), 10, 64)
		if err != nil {
			t.Errorf("record %s: expiration %v: %v", id, r["expiration"], err)
			continue
		}
		if lo, hi := start.Add(expiresAfter).Unix()-1, now.Add(expiresAfter).Unix()+1; exp < lo || exp > hi {
			t.Errorf("record %s: expiration %d, want now + SQSONCE_EXPIRES_AFTER (%v): %d..%d", id, exp, expiresAfter, lo, hi)
		}
	}
	summaries := scan(env["SQSONCE_SUMMARIES_TABLE"])
	if len(summaries) != len(want) {
		t.Errorf("%d summaries, want %d", len(summaries), len(want))
	}
	for _, s := range summaries {
		if id, _ := s["id"].(string); !want[id] {
			t.Errorf("summary %s belongs to no answered key", id)
		}
	}
	if n := approximate(t, f.c, f.queueURL); n != 0 {
		t.Errorf("%d messages left in the queue, want none", n)
	}
	if n := approximate(t, f.c, f.dlqURL); n != 1 {
		t.Errorf("%d messages in the dead-letter queue, want 1", n)
	}
	t.Logf("%d COMPLETED records, expiration now + %v; %d summaries; %d provider calls; queue empty; 1 message in the dead-letter queue",
		len(records), expiresAfter, len(summaries), len(f.calls(t)))
}

// approximate returns the messages in a queue, visible or not.
func approximate(t *testing.T, c clients, queueURL string) int {
	t.Helper()
	out, err := c.sqs.GetQueueAttributes(context.Background(), &sqs.GetQueueAttributesInput{
		QueueUrl: aws.String(queueURL),
		AttributeNames: []sqstypes.QueueAttributeName{
			sqstypes.QueueAttributeNameApproximateNumberOfMessages, sqstypes.QueueAttributeNameApproximateNumberOfMessagesNotVisible,
			sqstypes.QueueAttributeNameApproximateNumberOfMessagesDelayed,
		},
	})
	if err != nil {
		t.Fatal(err)
	}
	n := 0
	for _, v := range out.Attributes {
		k, _ := strconv.Atoi(v)
		n += k
	}
	return n
}
