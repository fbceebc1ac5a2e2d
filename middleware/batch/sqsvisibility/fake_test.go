package sqsvisibility_test

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/sqs"
	"github.com/aws/aws-sdk-go-v2/service/sqs/types"

	"github.com/sqsonce/sqsonce/middleware/batch"
	"github.com/sqsonce/sqsonce/middleware/batch/sqsvisibility"
)

const (
	arnA = "arn:aws:sqs:eu-west-1:123456789012:jobs"
	arnB = "arn:aws:sqs:eu-west-1:123456789012:other"
	urlA = "https://sqs.eu-west-1.amazonaws.com/123456789012/jobs"
	urlB = "https://sqs.eu-west-1.amazonaws.com/123456789012/other"
)

// fakeSQS records the calls it gets. It refuses entries whose receipt
// handle starts with "bad", fails whole calls on queue failQueue, and
// leaves entries whose handle starts with "lost" out of its result.
type fakeSQS struct {
	mu        sync.Mutex
	calls     []*sqs.ChangeMessageVisibilityBatchInput
	failQueue string
}

func (f *fakeSQS) ChangeMessageVisibilityBatch(_ context.Context, in *sqs.ChangeMessageVisibilityBatchInput, _ ...func(*sqs.Options)) (*sqs.ChangeMessageVisibilityBatchOutput, error) {
	f.mu.Lock()
	f.calls = append(f.calls, in)
	f.mu.Unlock()
	if aws.ToString(in.QueueUrl) == f.failQueue {
		return nil, errors.New("throttled")
	}
	out := &sqs.ChangeMessageVisibilityBatchOutput{}
	for _, e := range in.Entries {
		switch rh := aws.ToString(e.ReceiptHandle); {
		case strings.HasPrefix(rh, "bad"):
			out.Failed = append(out.Failed, types.BatchResultErrorEntry{
				Id: e.Id, Code: aws.String("ReceiptHandleIsInvalid"), Message: aws.String("the handle has expired"), SenderFault: true,
			})
		case strings.HasPrefix(rh, "lost"):
		default:
			out.Successful = append(out.Successful, types.ChangeMessageVisibilityBatchResultEntry{Id: e.Id})
		}
	}
	return out, nil
}

func changes(n int, arn string, timeout time.Duration) []batch.VisibilityChange {
	out := make([]batch.VisibilityChange, n)
	for i := range out {
		out[i] = batch.VisibilityChange{
			MessageID: fmt.Sprintf("m%d-%s", i, arn[len(arn)-4:]), ReceiptHandle: "rh-" + strconv.Itoa(i),
			EventSourceARN: arn, Timeout: timeout,
		}
	}
	return out
}

func newChanger(t *testing.T, api sqsvisibility.API, opts ...sqsvisibility.Option) *sqsvisibility.Changer {
	t.Helper()
	c, err := sqsvisibility.New(api, opts...)
	if err != nil {
		t.Fatal(err)
	}
	return c
}

func TestCallsOfTen(t *testing.T) {
	f := &fakeSQS{}
	// 25 records of one queue, interleaved with 3 of another.
	all := changes(25, arnA, 90*time.Second)
	all = slices.Insert(all, 7, changes(3, arnB, time.Second)...)
	if errs := newChanger(t, f).ChangeVisibility(t.Context(), all); errs != nil {
		t.Fatalf("errs = %v, want nil when every change was applied", errs)
	}
	sizes := map[string][]int{}
	seen := map[string]int{}
	for _, in := range f.calls {
		url := aws.ToString(in.QueueUrl)
		sizes[url] = append(sizes[url], len(in.Entries))
		for _, e := range in.Entries {
			seen[url+" "+aws.ToString(e.ReceiptHandle)]++
			want := int32(90)
			if url == urlB {
				want = 1
			}
			if e.VisibilityTimeout != want {
				t.Errorf("%s %s: VisibilityTimeout %d, want %d", url, aws.ToString(e.ReceiptHandle), e.VisibilityTimeout, want)
			}
		}
	}
	for _, s := range sizes {
		slices.Sort(s)
	}
	if !slices.Equal(sizes[urlA], []int{5, 10, 10}) || !slices.Equal(sizes[urlB], []int{3}) || len(sizes) != 2 {
		t.Errorf("calls per queue = %v, want 3 calls (10+10+5) on %s and 1 (3) on %s", sizes, urlA, urlB)
	}
	if len(seen) != 28 {
		t.Errorf("%d distinct entries sent, want 28", len(seen))
	}
	for k, n := range seen {
		if n != 1 {
			t.Errorf("%s sent %d times", k, n)
		}
	}
}

func TestTenThousand(t *testing.T) {
	f := &fakeSQS{}
	if errs := newChanger(t, f, sqsvisibility.WithConcurrency(3)).ChangeVisibility(t.Context(), changes(10000, arnA, time.Minute)); errs != nil {
		t.Fatal(errs)
	}
	if len(f.calls) != 1000 {
		t.Errorf("%d calls for 10,000 changes, want 1000", len(f.calls))
	}
}

func TestPartialFailures(t *testing.T) {
	f := &fakeSQS{failQueue: urlB}
	all := changes(12, arnA, time.Minute)
	all[3].ReceiptHandle = "bad-3"
	all[11].ReceiptHandle = "lost-11"
	all = append(all, changes(2, arnB, time.Minute)...)
	all = append(all, batch.VisibilityChange{MessageID: "noarn", ReceiptHandle: "x", EventSourceARN: "not an arn"})
	errs := newChanger(t, f).ChangeVisibility(t.Context(), all)
	if len(errs) != len(all) {
		t.Fatalf("got %d errors for %d changes", len(errs), len(all))
	}
	for i, err := range errs {
		var ee *sqsvisibility.EntryError
		switch {
		case i == 3:
			if !errors.As(err, &ee) || ee.Code != "ReceiptHandleIsInvalid" || ee.MessageID != all[3].MessageID || !ee.SenderFault {
				t.Errorf("refused entry: err = %#v, want an EntryError with SQS's code", err)
			}
		case i == 11:
			if err == nil || !strings.Contains(err.Error(), "not in the call's result") {
				t.Errorf("entry missing from the result: err = %v", err)
			}
		case all[i].EventSourceARN == arnB:
			if err == nil || !strings.Contains(err.Error(), "throttled") {
				t.Errorf("entry of a failed call: err = %v, want the call's error", err)
			}
		case all[i].MessageID == "noarn":
			if err == nil || !strings.Contains(err.Error(), "not an SQS queue ARN") {
				t.Errorf("entry without a queue ARN: err = %v", err)
			}
		default:
			if err != nil {
				t.Errorf("change %d (%s): %v, want applied", i, all[i].MessageID, err)
			}
		}
	}
}

func TestTimeoutRounding(t *testing.T) {
	f := &fakeSQS{}
	in := []time.Duration{-time.Second, 0, time.Millisecond, 1500 * time.Millisecond, 2 * time.Second, 13 * time.Hour}
	want := []int32{0, 0, 1, 2, 2, 43200}
	var all []batch.VisibilityChange
	for i, d := range in {
		all = append(all, batch.VisibilityChange{MessageID: strconv.Itoa(i), ReceiptHandle: "rh", EventSourceARN: arnA, Timeout: d})
	}
	if errs := newChanger(t, f).ChangeVisibility(t.Context(), all); errs != nil {
		t.Fatal(errs)
	}
	var got []int32
	for _, e := range f.calls[0].Entries {
		got = append(got, e.VisibilityTimeout)
	}
	if !slices.Equal(got, want) {
		t.Errorf("VisibilityTimeout for %v = %v, want %v (rounded up, within 0..12h)", in, got, want)
	}
}

func TestQueueURL(t *testing.T) {
	for _, tt := range []struct{ arn, want string }{
		{"arn:aws:sqs:us-east-1:123456789012:jobs", "https://sqs.us-east-1.amazonaws.com/123456789012/jobs"},
		{"arn:aws:sqs:eu-west-1:123456789012:jobs.fifo", "https://sqs.eu-west-1.amazonaws.com/123456789012/jobs.fifo"},
		{"arn:aws-cn:sqs:cn-north-1:123456789012:q", "https://sqs.cn-north-1.amazonaws.com.cn/123456789012/q"},
		{"arn:aws-us-gov:sqs:us-gov-west-1:123456789012:q", "https://sqs.us-gov-west-1.amazonaws.com/123456789012/q"},
		{"arn:aws:sns:us-east-1:123456789012:topic", ""},
		{"arn:aws:sqs:us-east-1:123456789012", ""},
		{"arn:aws:sqs::123456789012:q", ""},
		{"arn:aws-iso:sqs:us-iso-east-1:123456789012:q", "https://sqs.us-iso-east-1.c2s.ic.gov/123456789012/q"},
		{"arn:aws-iso-b:sqs:us-isob-east-1:123456789012:q", "https://sqs.us-isob-east-1.sc2s.sgov.gov/123456789012/q"},
		{"arn:aws-iso-e:sqs:eu-isoe-west-1:123456789012:q", "https://sqs.eu-isoe-west-1.cloud.adc-e.uk/123456789012/q"},
		{"arn:aws-iso-f:sqs:us-isof-south-1:123456789012:q.fifo", "https://sqs.us-isof-south-1.csp.hci.ic.gov/123456789012/q.fifo"},
		{"arn:aws-eusc:sqs:eusc-de-east-1:123456789012:q", "https://sqs.eusc-de-east-1.amazonaws.eu/123456789012/q"},
		{"arn:aws-future:sqs:xx-east-1:123456789012:q", ""},
		{"", ""},
	} {
		got, err := sqsvisibility.QueueURL(tt.arn)
		if got != tt.want || (err == nil) != (tt.want != "") {
			t.Errorf("QueueURL(%q) = %q, %v; want %q", tt.arn, got, err, tt.want)
		}
	}
}

func TestNewValidates(t *testing.T) {
	_, err := sqsvisibility.New(nil, sqsvisibility.WithConcurrency(0), sqsvisibility.WithQueueURL(nil))
	for _, want := range []string{"API is nil", "WithConcurrency(0)", "WithQueueURL"} {
		if err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("New(nil, …) = %v, want an error naming %q", err, want)
		}
	}
}
