package sqsdlq

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"sync"
	"unicode/utf8"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/sqs"
	"github.com/aws/aws-sdk-go-v2/service/sqs/types"

	"github.com/sqsonce/sqsonce/internal/planted"
	"github.com/sqsonce/sqsonce/middleware/batch"
	"github.com/sqsonce/sqsonce/middleware/batch/sqsvisibility"
)

// API is the part of *sqs.Client a [Mover] calls. Tests can pass a fake;
// production code passes the client.
type API interface {
	GetQueueAttributes(ctx context.Context, params *sqs.GetQueueAttributesInput, optFns ...func(*sqs.Options)) (*sqs.GetQueueAttributesOutput, error)
	SendMessage(ctx context.Context, params *sqs.SendMessageInput, optFns ...func(*sqs.Options)) (*sqs.SendMessageOutput, error)
	DeleteMessage(ctx context.Context, params *sqs.DeleteMessageInput, optFns ...func(*sqs.Options)) (*sqs.DeleteMessageOutput, error)
}

var _ API = (*sqs.Client)(nil)

// DefaultConcurrency is the number of messages a [Mover] moves at once by
// default.
const DefaultConcurrency = 8

// The message attributes a moved message carries, besides its own: why
// and from where it was moved. SQS allows ten attributes per message, and
// counts their names, types and values in the message's size: those that
// do not fit beside the message's own, in number or within [MaxSize], are
// left out, last first. A message moved again (redriven, and failed for
// good again) carries this move's: its own attributes named "sqsonce." are
// left out. Their values hold only the characters SQS takes; any other is
// sent as U+FFFD.
const (
	ourPrefix        = "sqsonce."
	AttrReason       = "sqsonce.reason"        // String: the record's error message, at most MaxReason bytes
	AttrErrorType    = "sqsonce.error-type"    // String: the Go type of the error that made the failure permanent
	AttrMessageID    = "sqsonce.message-id"    // String: the messageId in the source queue
	AttrSourceQueue  = "sqsonce.source-queue"  // String: the source queue's ARN
	AttrReceiveCount = "sqsonce.receive-count" // Number: the message's ApproximateReceiveCount when it was moved
)

// MaxReason bounds the bytes of [AttrReason]; a longer reason is cut at a
// character boundary and ends with "…".
const MaxReason = 1024

// maxAttributes is the most message attributes SQS takes on one message.
const maxAttributes = 10

// MaxSize bounds the size SQS counts of a moved message (its body, and its
// attributes' names, types and values) with this move's attributes: 256
// KiB, a queue's default MaximumMessageSize, or the message's own size
// when that is larger (its queue takes more). Reasons are never worth a
// move SQS refuses.
const MaxSize = 256 << 10

// Mover is a [batch.DeadLetterMover] on the SQS API. It is safe for
// concurrent use; create one with [New] at start-up and share it.
type Mover struct {
	api API
	options

	mu      sync.Mutex
	targets map[string]*target // by source queue ARN
}

// options are what the Options set.
type options struct {
	queueURL    func(arn string) (string, error)
	concurrency int
	configured  map[string]string // source queue ARN → dead-letter queue ARN
}

var _ batch.DeadLetterMover = (*Mover)(nil)

// Option configures a [Mover] made by [New].
type Option func(*options)

// WithQueueURL replaces [sqsvisibility.QueueURL], the derivation of a
// queue's URL from its ARN: for emulators, whose URLs differ from SQS's.
func WithQueueURL(f func(arn string) (string, error)) Option {
	return func(o *options) { o.queueURL = f }
}

// WithConcurrency sets the most messages moved at once (default
// [DefaultConcurrency]).
func WithConcurrency(n int) Option {
	return func(o *options) { o.concurrency = n }
}

// WithDeadLetterQueue names the dead-letter queue of the queue sourceARN
// (both ARNs), instead of reading it from the queue's RedrivePolicy.
func WithDeadLetterQueue(sourceARN, deadLetterARN string) Option {
	return func(o *options) {
		if o.configured == nil {
			o.configured = map[string]string{}
		}
		o.configured[sourceARN] = deadLetterARN
	}
}

// New returns a Mover calling SQS through api (normally a *sqs.Client built
// once by the caller). It reports every problem of its arguments at once.
func New(api API, opts ...Option) (*Mover, error) {
	m := &Mover{api: api, options: options{queueURL: sqsvisibility.QueueURL, concurrency: DefaultConcurrency}, targets: map[string]*target{}}
	for _, opt := range opts {
		opt(&m.options)
	}
	var errs []error
	if api == nil {
		errs = append(errs, errors.New("sqsdlq: API is nil"))
	}
	if m.queueURL == nil {
		errs = append(errs, errors.New("sqsdlq: WithQueueURL: nil function"))
	}
	if m.concurrency < 1 {
		errs = append(errs, fmt.Errorf("sqsdlq: WithConcurrency(%d): want at least 1", m.concurrency))
	}
	for src, dlq := range m.configured {
		if isFIFO(src) != isFIFO(dlq) {
			errs = append(errs, fmt.Errorf("sqsdlq: WithDeadLetterQueue(%q, %q): a FIFO queue's dead-letter queue is FIFO, a standard queue's standard", src, dlq))
			continue
		}
		if m.queueURL == nil {
			continue
		}
		t, err := m.newTarget(dlq)
		if err != nil {
			errs = append(errs, fmt.Errorf("sqsdlq: WithDeadLetterQueue(%q, %q): %w", src, dlq, err))
			continue
		}
		m.targets[src] = &target{lock: make(chan struct{}, 1), ok: true, url: t.url, arn: t.arn, fifo: t.fifo}
	}
	if err := errors.Join(errs...); err != nil {
		return nil, err
	}
	return m, nil
}

// target is a source queue's dead-letter queue, once known.
type target struct {
	// lock is held while it is looked up: a channel, not a mutex, so that
	// a call waiting for another invocation's lookup (invocations share a
	// process under AWS_LAMBDA_MAX_CONCURRENCY) stops at its own
	// context's end, not the other's.
	lock chan struct{}
	ok   bool
	url  string
	arn  string
	fifo bool
}

func isFIFO(arn string) bool { return strings.HasSuffix(arn, ".fifo") }

func (m *Mover) newTarget(dlqARN string) (target, error) {
	url, err := m.queueURL(dlqARN)
	if err != nil {
		return target{}, err
	}
	return target{url: url, arn: dlqARN, fifo: isFIFO(dlqARN)}, nil
}

// deadLetterQueue returns the dead-letter queue of the queue sourceARN:
// configured, cached, or read from the queue's RedrivePolicy with one
// GetQueueAttributes call and cached for the Mover's life. A failed read
// is not cached.
func (m *Mover) deadLetterQueue(ctx context.Context, sourceARN string) (*target, error) {
	m.mu.Lock()
	t, ok := m.targets[sourceARN]
	if !ok {
		t = &target{lock: make(chan struct{}, 1)}
		m.targets[sourceARN] = t
	}
	m.mu.Unlock()

	select {
	case t.lock <- struct{}{}:
	case <-ctx.Done():
		return nil, fmt.Errorf("sqsdlq: waiting for the dead-letter queue of %s to be read: %w", sourceARN, context.Cause(ctx))
	}
	defer func() { <-t.lock }()
	if t.ok {
		return t, nil
	}
	srcURL, err := m.queueURL(sourceARN)
	if err != nil {
		return nil, err
	}
	out, err := m.api.GetQueueAttributes(ctx, &sqs.GetQueueAttributesInput{
		QueueUrl:       aws.String(srcURL),
		AttributeNames: []types.QueueAttributeName{types.QueueAttributeNameRedrivePolicy},
	})
	if err != nil {
		return nil, fmt.Errorf("sqsdlq: reading the RedrivePolicy of %s: %w", sourceARN, err)
	}
	policy := out.Attributes[string(types.QueueAttributeNameRedrivePolicy)]
	if policy == "" {
		return nil, fmt.Errorf("sqsdlq: queue %s has no dead-letter queue (no RedrivePolicy); configure one, or WithDeadLetterQueue", sourceARN)
	}
	var rp struct {
		DeadLetterTargetArn string `json:"deadLetterTargetArn"`
	}
	if err := json.Unmarshal([]byte(policy), &rp); err != nil || rp.DeadLetterTargetArn == "" {
		return nil, fmt.Errorf("sqsdlq: queue %s: RedrivePolicy names no deadLetterTargetArn (%v)", sourceARN, err)
	}
	nt, err := m.newTarget(rp.DeadLetterTargetArn)
	if err != nil {
		return nil, err
	}
	t.url, t.arn, t.fifo, t.ok = nt.url, nt.arn, nt.fifo, true
	return t, nil
}

// MoveToDeadLetter implements [batch.DeadLetterMover]: each message is sent
// to its queue's dead-letter queue with SendMessage and, once sent, deleted
// from its queue with DeleteMessage. See the package doc.
func (m *Mover) MoveToDeadLetter(ctx context.Context, moves []batch.DeadLetterMove) []error {
	errs := make([]error, len(moves))
	var mu sync.Mutex
	failed := false
	var wg sync.WaitGroup
	sem := make(chan struct{}, m.concurrency)
	for i := range moves {
		sem <- struct{}{}
		wg.Go(func() {
			defer func() { <-sem }()
			if err := m.move(ctx, &moves[i]); err != nil {
				mu.Lock()
				errs[i], failed = err, true
				mu.Unlock()
			}
		})
	}
	wg.Wait()
	if !failed {
		return nil
	}
	return errs
}

// MoveError is the error of one message that was not moved, or was sent
// and not deleted (Step "delete"; it wraps [batch.ErrNotDeleted]).
type MoveError struct {
	MessageID string // the message's id in its queue
	Step      string // "lookup" (its dead-letter queue), "send" or "delete"
	Err       error
}

func (e *MoveError) Error() string {
	switch e.Step {
	case "delete":
		return fmt.Sprintf("sqsdlq: message %s sent to the dead-letter queue, not deleted from its queue: %v", e.MessageID, e.Err)
	case "lookup":
		return fmt.Sprintf("sqsdlq: message %s not moved: %v", e.MessageID, e.Err)
	}
	return fmt.Sprintf("sqsdlq: message %s not sent to the dead-letter queue: %v", e.MessageID, e.Err)
}

// Unwrap returns the cause, and [batch.ErrNotDeleted] for Step "delete".
func (e *MoveError) Unwrap() []error {
	if e.Step == "delete" {
		return []error{batch.ErrNotDeleted, e.Err}
	}
	return []error{e.Err}
}

// move sends one message and then deletes it.
func (m *Mover) move(ctx context.Context, mv *batch.DeadLetterMove) error {
	msg := &mv.Message
	fail := func(step string, err error) error { return &MoveError{MessageID: msg.MessageId, Step: step, Err: err} }
	if ctx.Err() != nil {
		return fail("send", fmt.Errorf("not sent: %w", context.Cause(ctx)))
	}
	t, err := m.deadLetterQueue(ctx, msg.EventSourceARN)
	if err != nil {
		return fail("lookup", err)
	}
	in := &sqs.SendMessageInput{
		QueueUrl:          aws.String(t.url),
		MessageBody:       aws.String(msg.Body),
		MessageAttributes: attributes(mv),
	}
	group := msg.Attributes["MessageGroupId"]
	if group != "" && (t.fifo || !planted.On(planted.DLQDropsGroup)) {
		// Its group goes with it, to a standard (fair) dead-letter queue
		// too: a record id scoped by it (idempotency.TenancyMessageGroup)
		// is the same when the message is redriven.
		in.MessageGroupId = aws.String(group)
	}
	if t.fifo {
		if group == "" {
			return fail("send", fmt.Errorf("the FIFO dead-letter queue %s needs a MessageGroupId, and the message has none", t.arn))
		}
		// The same message moved twice within SQS's five-minute
		// deduplication interval (its delete failed, it came back) is
		// sent once.
		in.MessageDeduplicationId = aws.String(msg.MessageId)
	}
	if _, err := m.api.SendMessage(ctx, in); err != nil {
		return fail("send", err)
	}
	// Sent: from here on the message is never lost. A delete that fails
	// (or that ctx no longer allows) is reported as such, and the batch
	// handler leaves the message out of its failures so that Lambda
	// deletes it.
	srcURL, err := m.queueURL(msg.EventSourceARN)
	if err == nil {
		_, err = m.api.DeleteMessage(ctx, &sqs.DeleteMessageInput{QueueUrl: aws.String(srcURL), ReceiptHandle: aws.String(msg.ReceiptHandle)})
	}
	if err != nil {
		return fail("delete", err)
	}
	return nil
}

// attributes returns the message's own attributes, less an earlier move's
// (ourPrefix), and as many of this move's as fit beside them.
func attributes(mv *batch.DeadLetterMove) map[string]types.MessageAttributeValue {
	msg := &mv.Message
	out := make(map[string]types.MessageAttributeValue, maxAttributes)
	size := len(msg.Body)
	for name, a := range msg.MessageAttributes {
		if strings.HasPrefix(name, ourPrefix) {
			continue
		}
		v := types.MessageAttributeValue{DataType: aws.String(a.DataType), StringValue: a.StringValue, BinaryValue: a.BinaryValue}
		out[name] = v
		size += len(name) + len(a.DataType) + len(aws.ToString(a.StringValue)) + len(a.BinaryValue)
	}
	limit := max(MaxSize, size)
	reason := []struct {
		name, typ, value string
	}{
		{AttrReason, "String", truncate(sendable(mv.Reason), MaxReason)},
		{AttrErrorType, "String", sendable(mv.ErrorType)},
		{AttrMessageID, "String", sendable(msg.MessageId)},
		{AttrSourceQueue, "String", sendable(msg.EventSourceARN)},
		{AttrReceiveCount, "Number", msg.Attributes["ApproximateReceiveCount"]},
	}
	for _, r := range reason {
		if len(out) == maxAttributes {
			break
		}
		if r.value == "" { // out holds none of these names: its own are left out above
			continue
		}
		if r.typ == "Number" {
			if _, err := strconv.ParseInt(r.value, 10, 64); err != nil {
				continue
			}
		}
		n := len(r.name) + len(r.typ) + len(r.value)
		if size+n > limit {
			continue // a shorter one may fit
		}
		size += n
		out[r.name] = types.MessageAttributeValue{DataType: aws.String(r.typ), StringValue: aws.String(r.value)}
	}
	return out
}

// sendable returns s with each character SQS refuses in a string value
// (any but #x9, #xA, #xD, #x20–#xD7FF, #xE000–#xFFFD, #x10000–#x10FFFF,
// and bytes that are not UTF-8) replaced by U+FFFD.
func sendable(s string) string {
	ok := func(r rune) bool {
		return r == 0x9 || r == 0xA || r == 0xD || 0x20 <= r && r <= 0xD7FF ||
			0xE000 <= r && r <= 0xFFFD || 0x10000 <= r && r <= 0x10FFFF
	}
	if utf8.ValidString(s) && !strings.ContainsFunc(s, func(r rune) bool { return !ok(r) }) {
		return s
	}
	// Ranging over s yields U+FFFD for each byte that is not UTF-8.
	return strings.Map(func(r rune) rune {
		if !ok(r) {
			return utf8.RuneError
		}
		return r
	}, s)
}

// truncate cuts s to at most n bytes at a character boundary, marking the
// cut with "…".
func truncate(s string, n int) string {
	if len(s) <= n {
		return s
	}
	const mark = "…"
	cut := n - len(mark)
	for cut > 0 && !utf8.RuneStart(s[cut]) {
		cut--
	}
	return s[:cut] + mark
}
