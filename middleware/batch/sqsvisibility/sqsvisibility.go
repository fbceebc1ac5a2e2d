package sqsvisibility

import (
	"context"
	"errors"
	"fmt"
	"math"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/sqs"
	"github.com/aws/aws-sdk-go-v2/service/sqs/types"

	"github.com/sqsonce/sqsonce/middleware/batch"
)

// API is the part of *sqs.Client a [Changer] calls. Tests can pass a fake;
// production code passes the client.
type API interface {
	ChangeMessageVisibilityBatch(ctx context.Context, params *sqs.ChangeMessageVisibilityBatchInput, optFns ...func(*sqs.Options)) (*sqs.ChangeMessageVisibilityBatchOutput, error)
}

var _ API = (*sqs.Client)(nil)

// MaxEntries is the most entries one ChangeMessageVisibilityBatch call takes.
const MaxEntries = 10

// DefaultConcurrency is the number of calls a [Changer] has in flight at
// once by default.
const DefaultConcurrency = 8

// maxTimeout is SQS's longest visibility timeout, in seconds.
const maxTimeout = int32(batch.MaxVisibilityTimeout / time.Second)

// Changer is a [batch.VisibilityChanger] on the SQS API. It is safe for
// concurrent use; create one with [New] at start-up and share it.
type Changer struct {
	api API
	options
}

// options are what the Options set.
type options struct {
	queueURL    func(arn string) (string, error)
	concurrency int
}

var _ batch.VisibilityChanger = (*Changer)(nil)

// Option configures a [Changer] made by [New].
type Option func(*options)

// WithQueueURL replaces [QueueURL], the derivation of a queue's URL from its
// ARN: for emulators, whose URLs differ from SQS's.
func WithQueueURL(f func(arn string) (string, error)) Option {
	return func(o *options) { o.queueURL = f }
}

// WithConcurrency sets the most calls in flight at once (default
// [DefaultConcurrency]).
func WithConcurrency(n int) Option {
	return func(o *options) { o.concurrency = n }
}

// New returns a Changer calling SQS through api (normally a *sqs.Client
// built once by the caller). It reports every problem of its arguments at
// once.
func New(api API, opts ...Option) (*Changer, error) {
	c := &Changer{api: api, options: options{queueURL: QueueURL, concurrency: DefaultConcurrency}}
	for _, opt := range opts {
		opt(&c.options)
	}
	var errs []error
	if api == nil {
		errs = append(errs, errors.New("sqsvisibility: API is nil"))
	}
	if c.queueURL == nil {
		errs = append(errs, errors.New("sqsvisibility: WithQueueURL: nil function"))
	}
	if c.concurrency < 1 {
		errs = append(errs, fmt.Errorf("sqsvisibility: WithConcurrency(%d): want at least 1", c.concurrency))
	}
	if err := errors.Join(errs...); err != nil {
		return nil, err
	}
	return c, nil
}

// QueueURL derives a queue's URL from its ARN,
// arn:{partition}:sqs:{region}:{account}:{name}, as
// https://sqs.{region}.{domain}/{account}/{name}, where domain is the
// partition's DNS suffix as the AWS SDK's endpoint data has it:
// amazonaws.com in aws and aws-us-gov, amazonaws.com.cn in
// aws-cn, amazonaws.eu in aws-eusc, c2s.ic.gov in aws-iso, sc2s.sgov.gov
// in aws-iso-b, cloud.adc-e.uk in aws-iso-e, csp.hci.ic.gov in aws-iso-f.
// Another partition is an error naming [WithQueueURL].
func QueueURL(arn string) (string, error) {
	parts := strings.Split(arn, ":")
	if len(parts) != 6 || parts[0] != "arn" || parts[2] != "sqs" || parts[3] == "" || parts[4] == "" || parts[5] == "" {
		return "", fmt.Errorf("sqsvisibility: %q is not an SQS queue ARN (arn:aws:sqs:{region}:{account}:{name})", arn)
	}
	domain, ok := domains[parts[1]]
	if !ok {
		return "", fmt.Errorf("sqsvisibility: queue ARN %q: no URL known for partition %q; use WithQueueURL", arn, parts[1])
	}
	return "https://sqs." + parts[3] + "." + domain + "/" + parts[4] + "/" + parts[5], nil
}

// domains is the DNS suffix of SQS's endpoints in each partition, as the
// SDK's partition data (internal/endpoints/awsrulesfn/partitions.json)
// gives it; TestQueueURLMatchesSDK checks it against the SDK's endpoint
// resolver for every region the SDK knows.
var domains = map[string]string{
	"aws":        "amazonaws.com",
	"aws-cn":     "amazonaws.com.cn",
	"aws-us-gov": "amazonaws.com",
	"aws-eusc":   "amazonaws.eu",
	"aws-iso":    "c2s.ic.gov",
	"aws-iso-b":  "sc2s.sgov.gov",
	"aws-iso-e":  "cloud.adc-e.uk",
	"aws-iso-f":  "csp.hci.ic.gov",
}

// EntryError is the error of one change that SQS refused in a batch call's
// Failed entries.
type EntryError struct {
	MessageID   string // the record's messageId
	Code        string // SQS's error code, e.g. ReceiptHandleIsInvalid
	Message     string // SQS's message for the code
	SenderFault bool   // whether the request was at fault, rather than SQS
}

func (e *EntryError) Error() string {
	return fmt.Sprintf("sqsvisibility: change of message %s refused: %s: %s", e.MessageID, e.Code, e.Message)
}

// ChangeVisibility implements [batch.VisibilityChanger]: see the package
// doc.
func (c *Changer) ChangeVisibility(ctx context.Context, changes []batch.VisibilityChange) []error {
	errs := make([]error, len(changes))
	failed := false
	var calls []call
	byQueue := map[string]int{} // queue URL → index in calls of its open call
	for i, ch := range changes {
		url, err := c.queueURL(ch.EventSourceARN)
		if err != nil {
			errs[i], failed = fmt.Errorf("sqsvisibility: message %s: %w", ch.MessageID, err), true
			continue
		}
		k, ok := byQueue[url]
		if !ok || len(calls[k].idx) == MaxEntries {
			k = len(calls)
			byQueue[url] = k
			calls = append(calls, call{url: url})
		}
		calls[k].idx = append(calls[k].idx, i)
	}

	var mu sync.Mutex
	var wg sync.WaitGroup
	sem := make(chan struct{}, c.concurrency)
	for _, cl := range calls {
		sem <- struct{}{}
		wg.Go(func() {
			defer func() { <-sem }()
			res := c.send(ctx, cl, changes)
			mu.Lock()
			defer mu.Unlock()
			for j, err := range res {
				if err != nil {
					errs[cl.idx[j]], failed = err, true
				}
			}
		})
	}
	wg.Wait()
	if !failed {
		return nil
	}
	return errs
}

// call is one ChangeMessageVisibilityBatch: up to MaxEntries changes (by
// index) of one queue.
type call struct {
	url string
	idx []int
}

// send makes one call and returns the error of each of its entries.
func (c *Changer) send(ctx context.Context, cl call, changes []batch.VisibilityChange) []error {
	errs := make([]error, len(cl.idx))
	if ctx.Err() != nil {
		// The caller's time is up (package batch ends it before the
		// invocation's deadline): a call now could only fail or run late.
		err := fmt.Errorf("sqsvisibility: not sent: %w", context.Cause(ctx))
		for j := range errs {
			errs[j] = err
		}
		return errs
	}
	entries := make([]types.ChangeMessageVisibilityBatchRequestEntry, len(cl.idx))
	for j, i := range cl.idx {
		entries[j] = types.ChangeMessageVisibilityBatchRequestEntry{
			Id:                aws.String(strconv.Itoa(j)),
			ReceiptHandle:     aws.String(changes[i].ReceiptHandle),
			VisibilityTimeout: seconds(changes[i].Timeout),
		}
	}
	out, err := c.api.ChangeMessageVisibilityBatch(ctx, &sqs.ChangeMessageVisibilityBatchInput{
		QueueUrl: aws.String(cl.url),
		Entries:  entries,
	})
	if err != nil {
		err = fmt.Errorf("sqsvisibility: ChangeMessageVisibilityBatch on %s: %w", cl.url, err)
		for j := range errs {
			errs[j] = err
		}
		return errs
	}
	for _, f := range out.Failed {
		j, err := strconv.Atoi(aws.ToString(f.Id))
		if err != nil || j < 0 || j >= len(errs) {
			continue // not an id this call sent
		}
		errs[j] = &EntryError{
			MessageID:   changes[cl.idx[j]].MessageID,
			Code:        aws.ToString(f.Code),
			Message:     aws.ToString(f.Message),
			SenderFault: f.SenderFault,
		}
	}
	// An entry neither successful nor failed was not applied as far as
	// anyone can tell.
	ok := make([]bool, len(errs))
	for _, s := range out.Successful {
		if j, err := strconv.Atoi(aws.ToString(s.Id)); err == nil && j >= 0 && j < len(ok) {
			ok[j] = true
		}
	}
	for j := range errs {
		if errs[j] == nil && !ok[j] {
			errs[j] = fmt.Errorf("sqsvisibility: change of message %s: not in the call's result", changes[cl.idx[j]].MessageID)
		}
	}
	return errs
}

// seconds rounds d up to whole seconds, within SQS's limits.
func seconds(d time.Duration) int32 {
	if d <= 0 {
		return 0
	}
	s := math.Ceil(d.Seconds())
	if s >= float64(maxTimeout) {
		return maxTimeout
	}
	return int32(s)
}
