package esm_test

import (
	"context"
	"crypto/md5"
	"encoding/hex"
	"encoding/json"
	"errors"
	"os"
	"slices"
	"sort"
	"strconv"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/aws/aws-lambda-go/events"
	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/sqs"
	sqstypes "github.com/aws/aws-sdk-go-v2/service/sqs/types"

	"github.com/sqsonce/sqsonce/internal/testenv/esm"
	"github.com/sqsonce/sqsonce/internal/testenv/motoserver"
	"github.com/sqsonce/sqsonce/internal/testenv/poll"
	"github.com/sqsonce/sqsonce/internal/testenv/rie"
	"github.com/sqsonce/sqsonce/internal/testenv/runtimeapi"
)

var moto = motoserver.New()

// The test harness's two function runners are Invokers.
var (
	_ esm.Invoker = (*rie.Function)(nil)
	_ esm.Invoker = (*runtimeapi.Function)(nil)
)

func TestMain(m *testing.M) { os.Exit(moto.Run(m)) }

// recorder collects deliveries.
type recorder struct {
	mu sync.Mutex
	ds []esm.Delivery
}

func (r *recorder) add(d esm.Delivery) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.ds = append(r.ds, d)
}

func (r *recorder) all() []esm.Delivery {
	r.mu.Lock()
	defer r.mu.Unlock()
	return slices.Clone(r.ds)
}

func (r *recorder) of(body string) []esm.Delivery {
	var out []esm.Delivery
	for _, d := range r.all() {
		if d.Body == body {
			out = append(out, d)
		}
	}
	return out
}

// start runs p until the test ends.
func start(t *testing.T, p *esm.Poller) {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- p.Run(ctx) }()
	t.Cleanup(func() {
		cancel()
		if err := <-done; err != nil {
			t.Errorf("Run: %v", err)
		}
	})
}

func send(t *testing.T, client *sqs.Client, q esm.Queue, bodies ...string) {
	t.Helper()
	for _, b := range bodies {
		if _, err := client.SendMessage(context.Background(), &sqs.SendMessageInput{QueueUrl: aws.String(q.URL), MessageBody: aws.String(b)}); err != nil {
			t.Fatal(err)
		}
	}
}

func visible(t *testing.T, client *sqs.Client, q esm.Queue) int {
	t.Helper()
	out, err := client.GetQueueAttributes(context.Background(), &sqs.GetQueueAttributesInput{
		QueueUrl: aws.String(q.URL),
		AttributeNames: []sqstypes.QueueAttributeName{
			sqstypes.QueueAttributeNameApproximateNumberOfMessages, sqstypes.QueueAttributeNameApproximateNumberOfMessagesNotVisible,
		},
	})
	if err != nil {
		t.Fatal(err)
	}
	a, _ := strconv.Atoi(out.Attributes[string(sqstypes.QueueAttributeNameApproximateNumberOfMessages)])
	b, _ := strconv.Atoi(out.Attributes[string(sqstypes.QueueAttributeNameApproximateNumberOfMessagesNotVisible)])
	return a + b
}

// The event has the shape of the Lambda SQS events in events/ (which are
// Lambda's documented example with other values), field for field, and the
// values SQS gave.
func TestEventShape(t *testing.T) {
	client := esm.SQSClient(t, moto)
	q := esm.NewQueue(t, client, nil)
	body := `{"idempotency_key":"k1"}`
	if _, err := client.SendMessage(context.Background(), &sqs.SendMessageInput{
		QueueUrl: aws.String(q.URL), MessageBody: aws.String(body),
		MessageAttributes: map[string]sqstypes.MessageAttributeValue{
			"tenant": {DataType: aws.String("String"), StringValue: aws.String("t-1")},
		},
	}); err != nil {
		t.Fatal(err)
	}
	got := make(chan events.SQSEvent, 1)
	start(t, &esm.Poller{
		Mapping: esm.Mapping{QueueURL: q.URL, QueueARN: q.ARN},
		SQS:     client,
		Invokers: []esm.Invoker{esm.InvokerFunc(func(_ context.Context, ev events.SQSEvent) (events.SQSEventResponse, error) {
			got <- ev
			return events.SQSEventResponse{}, nil
		})},
	})
	var ev events.SQSEvent
	select {
	case ev = <-got:
	case <-time.After(20 * time.Second):
		t.Fatal("no invocation in 20s")
	}
	if len(ev.Records) != 1 {
		t.Fatalf("%d records, want 1", len(ev.Records))
	}
	r := ev.Records[0]
	sum := md5.Sum([]byte(body))
	for _, c := range []struct{ what, got, want string }{
		{"body", r.Body, body},
		{"md5OfBody", r.Md5OfBody, hex.EncodeToString(sum[:])},
		{"eventSource", r.EventSource, "aws:sqs"},
		{"eventSourceARN", r.EventSourceARN, q.ARN},
		{"awsRegion", r.AWSRegion, motoserver.Region},
		{"ApproximateReceiveCount", r.Attributes["ApproximateReceiveCount"], "1"},
		{"tenant", aws.ToString(r.MessageAttributes["tenant"].StringValue), "t-1"},
		{"tenant's type", r.MessageAttributes["tenant"].DataType, "String"},
	} {
		if c.got != c.want {
			t.Errorf("%s %q, want %q", c.what, c.got, c.want)
		}
	}
	for _, a := range []string{"SentTimestamp", "SenderId", "ApproximateFirstReceiveTimestamp"} {
		if r.Attributes[a] == "" {
			t.Errorf("attribute %s missing: %v", a, r.Attributes)
		}
	}
	if r.MessageId == "" || r.ReceiptHandle == "" || r.Md5OfMessageAttributes == "" {
		t.Errorf("messageId %q, receiptHandle %q, md5OfMessageAttributes %q: want all set", r.MessageId, r.ReceiptHandle, r.Md5OfMessageAttributes)
	}

	// The same JSON keys as a record Lambda delivers, and list values as
	// lists.
	fixture, err := os.ReadFile("../../../events/duplicate-delivery.json")
	if err != nil {
		t.Fatal(err)
	}
	var want struct{ Records []map[string]any }
	if err := json.Unmarshal(fixture, &want); err != nil {
		t.Fatal(err)
	}
	b, _ := json.Marshal(r)
	var rec map[string]any
	if err := json.Unmarshal(b, &rec); err != nil {
		t.Fatal(err)
	}
	if g, w := keys(rec), keys(want.Records[0]); !slices.Equal(g, w) {
		t.Errorf("record keys %v, want Lambda's %v", g, w)
	}
	attr, _ := rec["messageAttributes"].(map[string]any)["tenant"].(map[string]any)
	if attr["stringListValues"] == nil || attr["binaryListValues"] == nil {
		t.Errorf("message attribute %v: list values null, want []", attr)
	}
}

func keys(m map[string]any) []string {
	var ks []string
	for k := range m {
		ks = append(ks, k)
	}
	sort.Strings(ks)
	return ks
}

func TestAcknowledged(t *testing.T) {
	ev := events.SQSEvent{Records: []events.SQSMessage{{MessageId: "a"}, {MessageId: "b"}, {MessageId: "c"}}}
	fail := func(ids ...string) events.SQSEventResponse {
		var r events.SQSEventResponse
		for _, id := range ids {
			r.BatchItemFailures = append(r.BatchItemFailures, events.SQSBatchItemFailure{ItemIdentifier: id})
		}
		return r
	}
	for _, tc := range []struct {
		name string
		resp events.SQSEventResponse
		want []string
		err  error
	}{
		{"empty response: all acknowledged", events.SQSEventResponse{}, []string{"a", "b", "c"}, nil},
		{"one failure", fail("b"), []string{"a", "c"}, nil},
		{"all failed", fail("a", "b", "c"), nil, nil},
		{"empty identifier fails the batch", fail("a", ""), nil, esm.ErrBadResponse},
		{"unknown identifier fails the batch", fail("z"), nil, esm.ErrBadResponse},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got, err := esm.Acknowledged(ev, tc.resp)
			if !errors.Is(err, tc.err) {
				t.Fatalf("err %v, want %v", err, tc.err)
			}
			var ids []string
			for _, r := range got {
				ids = append(ids, r.MessageId)
			}
			if !slices.Equal(ids, tc.want) {
				t.Errorf("acknowledged %v, want %v", ids, tc.want)
			}
		})
	}
}

// Acknowledged records are deleted; failed ones and those of a failed
// invocation come back after the visibility timeout, with a higher
// receive count.
func TestPollerSettles(t *testing.T) {
	client := esm.SQSClient(t, moto)
	q := esm.NewQueue(t, client, map[string]string{"VisibilityTimeout": "1"})
	var calls atomic.Int32
	rec := &recorder{}
	start(t, &esm.Poller{
		Mapping: esm.Mapping{QueueURL: q.URL, QueueARN: q.ARN, BatchSize: 1},
		SQS:     client,
		Invokers: []esm.Invoker{esm.InvokerFunc(func(_ context.Context, ev events.SQSEvent) (events.SQSEventResponse, error) {
			calls.Add(1)
			r := ev.Records[0]
			n := r.Attributes["ApproximateReceiveCount"]
			switch {
			case r.Body == "fail-once" && n == "1":
				return events.SQSEventResponse{BatchItemFailures: []events.SQSBatchItemFailure{{ItemIdentifier: r.MessageId}}}, nil
			case r.Body == "error-once" && n == "1":
				return events.SQSEventResponse{}, errors.New("function error")
			}
			return events.SQSEventResponse{}, nil
		})},
		OnDelivery: rec.add,
	})
	send(t, client, q, "ok", "fail-once", "error-once")
	poll.Until(t, 30*time.Second, "every message acknowledged", func() bool {
		n := 0
		for _, d := range rec.all() {
			if d.Acked {
				n++
			}
		}
		return n == 3
	})
	for _, tc := range []struct {
		body    string
		counts  []int
		errored bool
	}{
		{"ok", []int{1}, false},
		{"fail-once", []int{1, 2}, false},
		{"error-once", []int{1, 2}, true},
	} {
		ds := rec.of(tc.body)
		var counts []int
		for _, d := range ds {
			counts = append(counts, d.ReceiveCount)
		}
		if !slices.Equal(counts, tc.counts) {
			t.Errorf("%s: receive counts %v, want %v", tc.body, counts, tc.counts)
			continue
		}
		for i, d := range ds {
			if want := i == len(ds)-1; d.Acked != want {
				t.Errorf("%s: delivery %d acknowledged %v, want %v", tc.body, i+1, d.Acked, want)
			}
		}
		if got := ds[0].Err != nil; got != tc.errored {
			t.Errorf("%s: first delivery's error %v, want an error: %v", tc.body, ds[0].Err, tc.errored)
		}
	}
	poll.Until(t, 10*time.Second, "the queue empty", func() bool { return visible(t, client, q) == 0 })
}

// A batch is gathered for the window after its first record; without a
// window it is what one receive returns.
func TestPollerBatchingWindow(t *testing.T) {
	client := esm.SQSClient(t, moto)
	q := esm.NewQueue(t, client, nil)
	sizes := make(chan int, 10)
	start(t, &esm.Poller{
		Mapping: esm.Mapping{QueueURL: q.URL, QueueARN: q.ARN, BatchSize: 10, MaxBatchingWindow: 2 * time.Second},
		SQS:     client,
		Invokers: []esm.Invoker{esm.InvokerFunc(func(_ context.Context, ev events.SQSEvent) (events.SQSEventResponse, error) {
			sizes <- len(ev.Records)
			return events.SQSEventResponse{}, nil
		})},
	})
	for i := range 3 {
		send(t, client, q, "m"+strconv.Itoa(i))
		time.Sleep(300 * time.Millisecond)
	}
	select {
	case n := <-sizes:
		if n != 3 {
			t.Errorf("first batch of %d records, want the 3 sent within the 2s window", n)
		}
	case <-time.After(20 * time.Second):
		t.Fatal("no invocation in 20s")
	}
}

// At most MaxConcurrency invocations run at once, each on its own invoker.
func TestPollerMaxConcurrency(t *testing.T) {
	client := esm.SQSClient(t, moto)
	q := esm.NewQueue(t, client, nil)
	var inFlight, peak atomic.Int32
	var acked atomic.Int32
	busy := func(id int, seen *sync.Map) esm.Invoker {
		var mine atomic.Int32
		return esm.InvokerFunc(func(_ context.Context, ev events.SQSEvent) (events.SQSEventResponse, error) {
			if mine.Add(1) != 1 {
				t.Errorf("invoker %d ran two invocations at once", id)
			}
			defer mine.Add(-1)
			seen.Store(id, true)
			n := inFlight.Add(1)
			defer inFlight.Add(-1)
			for {
				p := peak.Load()
				if n <= p || peak.CompareAndSwap(p, n) {
					break
				}
			}
			time.Sleep(300 * time.Millisecond)
			acked.Add(int32(len(ev.Records)))
			return events.SQSEventResponse{}, nil
		})
	}
	var seen sync.Map
	invokers := []esm.Invoker{busy(0, &seen), busy(1, &seen), busy(2, &seen)}
	start(t, &esm.Poller{
		Mapping:  esm.Mapping{QueueURL: q.URL, QueueARN: q.ARN, BatchSize: 1, MaxConcurrency: 2},
		SQS:      client,
		Invokers: invokers,
	})
	for i := range 8 {
		send(t, client, q, "m"+strconv.Itoa(i))
	}
	poll.Until(t, 30*time.Second, "8 records acknowledged", func() bool { return acked.Load() == 8 })
	if p := peak.Load(); p != 2 {
		t.Errorf("peak concurrency %d, want MaxConcurrency 2", p)
	}
	if _, ok := seen.Load(2); ok {
		t.Error("the third invoker ran, beyond MaxConcurrency")
	}
}

// A lost acknowledgement makes SQS deliver the same message again.
func TestPollerLoseAck(t *testing.T) {
	client := esm.SQSClient(t, moto)
	q := esm.NewQueue(t, client, nil)
	rec := &recorder{}
	var lost atomic.Bool
	start(t, &esm.Poller{
		Mapping: esm.Mapping{QueueURL: q.URL, QueueARN: q.ARN},
		SQS:     client,
		Invokers: []esm.Invoker{esm.InvokerFunc(func(context.Context, events.SQSEvent) (events.SQSEventResponse, error) {
			return events.SQSEventResponse{}, nil
		})},
		OnDelivery: rec.add,
		LoseAck:    func(events.SQSMessage) bool { return lost.CompareAndSwap(false, true) },
	})
	send(t, client, q, "once")
	poll.Until(t, 20*time.Second, "two deliveries", func() bool { return len(rec.of("once")) == 2 })
	ds := rec.of("once")
	if ds[0].MessageID != ds[1].MessageID || ds[0].ReceiveCount != 1 || ds[1].ReceiveCount != 2 {
		t.Errorf("deliveries %+v, want one message received twice", ds)
	}
	if !ds[0].Lost || ds[1].Lost || !ds[0].Acked || !ds[1].Acked {
		t.Errorf("deliveries %+v, want the first acknowledgement lost and the second kept", ds)
	}
	poll.Until(t, 10*time.Second, "the queue empty", func() bool { return visible(t, client, q) == 0 })
}

func TestPollerRefusesBadSettings(t *testing.T) {
	inv := esm.InvokerFunc(func(context.Context, events.SQSEvent) (events.SQSEventResponse, error) {
		return events.SQSEventResponse{}, nil
	})
	for _, p := range []*esm.Poller{
		{Mapping: esm.Mapping{QueueURL: "u", QueueARN: "a"}, SQS: &sqs.Client{}},
		{Mapping: esm.Mapping{QueueURL: "u", QueueARN: "a", MaxConcurrency: 2}, SQS: &sqs.Client{}, Invokers: []esm.Invoker{inv}},
		{Mapping: esm.Mapping{QueueARN: "a"}, SQS: &sqs.Client{}, Invokers: []esm.Invoker{inv}},
	} {
		if err := p.Run(context.Background()); err == nil {
			t.Errorf("Run with %+v: no error", p.Mapping)
		}
	}
}
