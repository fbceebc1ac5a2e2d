package main

import (
	"context"
	"crypto/md5"
	"encoding/binary"
	"encoding/hex"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"maps"
	"math"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/aws/aws-lambda-go/events"
	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/sqs"
	"github.com/aws/aws-sdk-go-v2/service/sqs/types"

	"github.com/sqsonce/sqsonce/middleware/batch/sqsdlq"
	"github.com/sqsonce/sqsonce/middleware/idempotency"
	"github.com/sqsonce/sqsonce/middleware/idempotency/driver"
)

// The classes of a dead-letter message, by what its redelivery will do.
const (
	classReplay      = "replay"      // COMPLETED: the stored result is replayed, the operation does not run
	classWithheld    = "withheld"    // COMPLETED, its result withheld (driver.WithheldData): it fails again, the operation does not run
	classMismatch    = "mismatch"    // failed with a payload mismatch (sqsdlq's attributes say so) on a record that still holds the other payload's digest: it fails again, the operation does not run
	classRun         = "run"         // no record, released, expired, or a lapsed lease outside strict mode: the operation runs
	classInProgress  = "in_progress" // a live lease: refused as in progress until it ends
	classQuarantined = "quarantined" // strict mode stopped the key, or will (a lapsed lease, strict): it fails again until resolved or released
	classBadKey      = "bad_key"     // no key, or a key that breaks the rules: it fails again
	classUnreadable  = "unreadable"  // the record cannot be read with this configuration
	classOtherQueue  = "other_queue" // moved from another queue than --queue (a shared dead-letter queue): not sent, unless --force
)

// deleteAttempts bounds the tries of each delete from the dead-letter queue.
const deleteAttempts = 3

// ourPrefix starts the names of the message attributes sqsonce adds when
// it moves a message to the dead-letter queue (sqsdlq.AttrReason, …):
// redrive leaves them out.
const ourPrefix = "sqsonce."

// redriveCmd moves dead-letter messages back to their queue.
type redriveCmd struct {
	dlq, queue string
	queueARN   string // --queue's, read by checkQueues: the redelivery's eventSourceARN
	rate       string
	perSecond  float64
	max        int
	dryRun     bool
	keyField   string
	app        string // the reference app's variable the environment sets (appVar), or ""
	wait       time.Duration
	visibility time.Duration
	force      reason
}

// reason is a flag whose value must say why: it records whether it was
// given, so that an empty one is refused rather than taken for no flag.
type reason struct {
	text string
	set  bool
}

func (r *reason) String() string     { return r.text }
func (r *reason) Set(v string) error { r.text, r.set = strings.TrimSpace(v), true; return nil }

func (c *redriveCmd) flags(fs *flag.FlagSet) {
	fs.StringVar(&c.dlq, "dlq", "", "the dead-letter queue's URL")
	fs.StringVar(&c.queue, "queue", "", "the source queue's URL, where the messages go back")
	fs.StringVar(&c.rate, "rate", "10/s", "the most messages sent per second (N/s or N/m)")
	fs.IntVar(&c.max, "max", 1000, "the most messages read from the dead-letter queue in this run")
	fs.BoolVar(&c.dryRun, "dry-run", false, "read and classify the messages, send and delete nothing (they are visible again at once)")
	fs.StringVar(&c.keyField, "key-field", "", "the body field the key is in, as inspect's --key-field (default: --key-source; in the reference app's function environment its key; else redrive is refused)")
	fs.DurationVar(&c.wait, "wait", 2*time.Second, "how long a receive waits for messages (long polling) before the queue counts as drained")
	fs.Var(&c.force, "force", "REASON: go on past the queue checks (--queue's RedrivePolicy names --dlq; a dry run of a --dlq with a RedrivePolicy of its own) and send to --queue the messages another queue moved to --dlq, saying why; the reason is printed with the run")
	fs.DurationVar(&c.visibility, "visibility", 0, "how long the messages read stay invisible in the dead-letter queue while they are checked and sent (default: a minute plus twice --max at --rate)")
}

func (c *redriveCmd) needsSQS() bool { return true }

func (c *redriveCmd) setApp(name string) { c.app = name }

func (c *redriveCmd) check() error {
	var errs []error
	if c.dlq == "" || c.queue == "" {
		errs = append(errs, errors.New("--dlq and --queue are required"))
	}
	if c.dlq != "" && c.dlq == c.queue {
		errs = append(errs, errors.New("--dlq and --queue are the same queue"))
	}
	if strings.HasSuffix(c.queue, ".fifo") != strings.HasSuffix(c.dlq, ".fifo") && c.dlq != "" && c.queue != "" {
		errs = append(errs, errors.New("--dlq and --queue must both be FIFO queues or both standard"))
	}
	r, err := parseRate(c.rate)
	if err != nil {
		errs = append(errs, err)
	}
	c.perSecond = r
	if c.max < 1 {
		errs = append(errs, fmt.Errorf("--max %d: want at least 1", c.max))
	}
	if err == nil && c.max >= 1 && time.Minute.Seconds()+runTime(c.max, r) > maxVisibility.Seconds() {
		// The messages read would be visible again before they were sent.
		errs = append(errs, fmt.Errorf("--max %d at --rate %s takes longer than the %v a message can stay invisible: raise --rate or lower --max",
			c.max, c.rate, maxVisibility))
	}
	if c.visibility != 0 && (c.visibility < time.Second || c.visibility > 12*time.Hour) {
		errs = append(errs, fmt.Errorf("--visibility %v: want 1s to 12h", c.visibility))
	}
	if c.force.set && c.force.text == "" {
		errs = append(errs, errors.New("--force needs a reason: --force 'why the queue checks do not apply'"))
	}
	if c.wait < 0 || c.wait > 20*time.Second {
		errs = append(errs, fmt.Errorf("--wait %v: want 0 to 20s", c.wait))
	}
	if c.keyField != "" {
		if _, err := keyPath(c.keyField); err != nil {
			errs = append(errs, err)
		}
	}
	return errors.Join(errs...)
}

// The bounds of --rate, per second. Messages are sent one call at a time,
// so a faster rate would be no limit at all; a slower one leaves more than
// SQS's longest visibility timeout between two sends.
const (
	maxRate       = 1000
	maxVisibility = 12 * time.Hour // SQS's longest visibility timeout
)

// parseRate reads "N/s", "N/m" or "N" (per second): a finite positive
// rate from one message per 12 hours to 1000 a second.
func parseRate(s string) (float64, error) {
	num, unit, _ := strings.Cut(s, "/")
	n, err := strconv.ParseFloat(num, 64)
	if err != nil || math.IsNaN(n) || math.IsInf(n, 0) || n <= 0 {
		return 0, fmt.Errorf("--rate %q: want a finite positive number per second (N/s) or minute (N/m)", s)
	}
	switch unit {
	case "", "s":
	case "m":
		n /= 60
	default:
		return 0, fmt.Errorf("--rate %q: the unit is s or m", s)
	}
	switch {
	case n > maxRate:
		return 0, fmt.Errorf("--rate %q: above %d/s, which one send at a time cannot keep: the limit would be off", s, maxRate)
	case 1/n > maxVisibility.Seconds():
		return 0, fmt.Errorf("--rate %q: below one message per %v, SQS's longest visibility timeout", s, maxVisibility)
	}
	return n, nil
}

// runTime is how long sending n messages takes at perSecond, in seconds:
// the last is sent n-1 intervals after the first.
func runTime(n int, perSecond float64) float64 { return float64(n-1) / perSecond }

// dlqMessage is one message read from the dead-letter queue.
type dlqMessage struct {
	msg      types.Message
	RecordID string `json:"record_id,omitempty"`
	Class    string `json:"class"`
	Problem  string `json:"problem,omitempty"`
	Outcome  string `json:"outcome,omitempty"` // redriven | not_sent | held | sent_not_deleted | kept
}

// The outcomes of a message.
const (
	outcomeRedriven       = "redriven"         // sent, and deleted from the dead-letter queue
	outcomeNotSent        = "not_sent"         // its send failed: still in the dead-letter queue
	outcomeHeld           = "held"             // not sent because an earlier message of its FIFO group was not: still in the dead-letter queue
	outcomeSentNotDeleted = "sent_not_deleted" // sent, its delete failed: in both queues
	outcomeKept           = "kept"             // a dry run, a refused one, or another queue's: still in the dead-letter queue
)

// redriveReport is redrive's output.
type redriveReport struct {
	DLQ      string         `json:"dlq"`
	Queue    string         `json:"queue"`
	DryRun   bool           `json:"dry_run"`
	Read     int            `json:"read"`
	Classes  map[string]int `json:"classes"`
	Redriven int            `json:"redriven"`
	NotSent  int            `json:"not_sent"`
	// SentNotDeleted counts messages sent to the queue whose delete from
	// the dead-letter queue failed: they are in both, and the idempotent
	// consumer replays the second delivery.
	SentNotDeleted int `json:"sent_not_deleted"`
	// Held counts the messages of FIFO groups that stopped: each group
	// stops at its first message not sent, and the rest of the group
	// stays in the dead-letter queue behind it, in order.
	Held int `json:"held"`
	// Kept counts the messages of other queues (classOtherQueue), left in
	// the dead-letter queue.
	Kept          int            `json:"kept"`
	StoppedGroups []stoppedGroup `json:"stopped_groups,omitempty"`
	// Forced is --force's reason, and ForcedPast the checks it went past.
	Forced     string   `json:"forced,omitempty"`
	ForcedPast []string `json:"forced_past,omitempty"`
	// KeySource is the key source the record ids were computed with, and
	// where it was given.
	KeySource string           `json:"key_source"`
	Messages  []redriveMessage `json:"messages"`
}

// stoppedGroup is a FIFO group that stopped at a message not sent.
type stoppedGroup struct {
	Group     string `json:"group"`
	MessageID string `json:"message_id"` // the first message not sent
	Left      int    `json:"left"`       // the group's messages left in the dead-letter queue, that one included
}

// redriveMessage is one message in the report: ids only, never content.
type redriveMessage struct {
	MessageID string `json:"message_id"`
	RecordID  string `json:"record_id,omitempty"`
	Class     string `json:"class"`
	Problem   string `json:"problem,omitempty"`
	Outcome   string `json:"outcome"`
}

func (c *redriveCmd) exec(ctx context.Context, o *ops) int {
	report := redriveReport{DLQ: c.dlq, Queue: c.queue, DryRun: c.dryRun, Classes: map[string]int{}}
	// The class of each message is its record's, by the function's key:
	// without the key source, nothing is read.
	ks, err := keyFunc(o, c.keyField, c.app)
	if err != nil {
		return refuse(o, "redrive: %v (nothing was read or sent)", err)
	}
	report.KeySource = ks.name
	problems, err := c.checkQueues(ctx, o)
	if err != nil {
		return failed(o, "redrive: read the queues' attributes: %v (nothing was read or sent)", err)
	}
	if len(problems) > 0 && !c.force.set {
		for _, p := range problems {
			fmt.Fprintf(o.stderr, "sqsonce-ops: refused: %s\n", p)
		}
		return refuse(o, "nothing was read or sent (--force REASON goes on past these checks)")
	}
	if c.force.set {
		report.Forced, report.ForcedPast = c.force.text, problems
		fmt.Fprintf(o.stderr, "sqsonce-ops: --force: %s\n", c.force.text)
		for _, p := range problems {
			fmt.Fprintf(o.stderr, "sqsonce-ops: forced past: %s\n", p)
		}
	}
	// Messages stay invisible while they are classified and sent: at the
	// rate, plus a minute, at most SQS's 12 hours.
	visibility := maxVisibility
	if secs := time.Minute.Seconds() + 2*runTime(c.max, c.perSecond); secs < maxVisibility.Seconds() {
		visibility = time.Duration(secs * float64(time.Second))
	}
	if c.visibility > 0 {
		visibility = c.visibility
	}
	msgs, err := c.receive(ctx, o, visibility)
	report.Read = len(msgs)
	if err != nil {
		c.release(o, msgs)
		return failed(o, "redrive: receive from the dead-letter queue: %v (the %d messages read are visible again)", err, len(msgs))
	}
	for _, m := range msgs {
		c.classify(ctx, o, ks.sel, m)
		report.Classes[m.Class]++
	}
	refused := report.Classes[classUnreadable] > 0
	if c.dryRun || refused {
		c.release(o, msgs)
		for _, m := range msgs {
			m.Outcome = outcomeKept
		}
	} else {
		c.send(ctx, o, msgs, &report)
	}
	for _, m := range msgs {
		report.Messages = append(report.Messages, redriveMessage{MessageID: aws.ToString(m.msg.MessageId),
			RecordID: m.RecordID, Class: m.Class, Problem: m.Problem, Outcome: m.Outcome})
	}
	c.print(o, report)
	switch {
	case refused:
		return refuse(o, "%d message(s) have records this configuration cannot read (--namespace, --format, --data-format, --seal-key): nothing was sent", report.Classes[classUnreadable])
	case report.NotSent > 0 || report.SentNotDeleted > 0:
		return exitFailed
	}
	return exitOK
}

// redrivePolicy is a queue's RedrivePolicy attribute.
type redrivePolicy struct {
	DeadLetterTargetArn string `json:"deadLetterTargetArn"`
	// MaxReceiveCount is a JSON number, or a string holding one.
	MaxReceiveCount json.RawMessage `json:"maxReceiveCount"`
}

// maxReceives is p's maxReceiveCount as written, without quotes.
func (p *redrivePolicy) maxReceives() string { return strings.Trim(string(p.MaxReceiveCount), `"`) }

// queueAttrs reads a queue's ARN and its RedrivePolicy (nil when it has
// none).
func queueAttrs(ctx context.Context, o *ops, url string) (string, *redrivePolicy, error) {
	out, err := o.sqs.GetQueueAttributes(ctx, &sqs.GetQueueAttributesInput{QueueUrl: aws.String(url),
		AttributeNames: []types.QueueAttributeName{types.QueueAttributeNameQueueArn, types.QueueAttributeNameRedrivePolicy}})
	if err != nil {
		return "", nil, fmt.Errorf("%s: %w", url, err)
	}
	arn := out.Attributes[string(types.QueueAttributeNameQueueArn)]
	v := out.Attributes[string(types.QueueAttributeNameRedrivePolicy)]
	if v == "" {
		return arn, nil, nil
	}
	var p redrivePolicy
	if err := json.Unmarshal([]byte(v), &p); err != nil {
		return "", nil, fmt.Errorf("%s: its RedrivePolicy is not JSON: %w", url, err)
	}
	return arn, &p, nil
}

// checkQueues says why the queues must not be redriven as the flags name
// them: --queue's RedrivePolicy must name --dlq, or the messages may go
// to a queue that never held them (--dlq and --queue swapped would move
// the live queue into the dead-letter queue); and since SQS shows no
// message without receiving it, a dry run must not count receives toward
// a RedrivePolicy of --dlq's own.
func (c *redriveCmd) checkQueues(ctx context.Context, o *ops) ([]string, error) {
	sourceARN, sourcePolicy, err := queueAttrs(ctx, o, c.queue)
	if err != nil {
		return nil, err
	}
	c.queueARN = sourceARN
	dlqARN, dlqPolicy, err := queueAttrs(ctx, o, c.dlq)
	if err != nil {
		return nil, err
	}
	var problems []string
	switch {
	case sourcePolicy == nil:
		problems = append(problems, "--queue has no RedrivePolicy: it is no queue whose dead-letter queue is --dlq (are --dlq and --queue swapped?)")
	case sourcePolicy.DeadLetterTargetArn != dlqARN:
		problems = append(problems, fmt.Sprintf("--queue's RedrivePolicy names the dead-letter queue %s, not --dlq (%s)", sourcePolicy.DeadLetterTargetArn, dlqARN))
	}
	if c.dryRun && dlqPolicy != nil {
		problems = append(problems, fmt.Sprintf("--dlq has a RedrivePolicy of its own (maxReceiveCount %s, to %s): SQS shows no message without receiving it, "+
			"and each receive of a dry run counts toward that policy, which moves the message on", dlqPolicy.maxReceives(), dlqPolicy.DeadLetterTargetArn))
	}
	return problems, nil
}

// receive reads up to --max messages, each once, keeping them invisible.
func (c *redriveCmd) receive(ctx context.Context, o *ops, visibility time.Duration) ([]*dlqMessage, error) {
	var msgs []*dlqMessage
	seen := map[string]*dlqMessage{}
	for len(msgs) < c.max {
		out, err := o.sqs.ReceiveMessage(ctx, &sqs.ReceiveMessageInput{
			QueueUrl:                    aws.String(c.dlq),
			MaxNumberOfMessages:         int32(min(10, c.max-len(msgs))),
			VisibilityTimeout:           int32(visibility / time.Second),
			WaitTimeSeconds:             int32(c.wait / time.Second),
			MessageAttributeNames:       []string{"All"},
			MessageSystemAttributeNames: []types.MessageSystemAttributeName{types.MessageSystemAttributeNameAll},
		})
		if err != nil {
			return msgs, err
		}
		if len(out.Messages) == 0 {
			return msgs, nil
		}
		fresh := 0
		for _, m := range out.Messages {
			id := aws.ToString(m.MessageId)
			if prev := seen[id]; prev != nil {
				// Received again (its visibility ended, or a standard
				// queue's second copy): only the latest receipt handle
				// is sure to delete it.
				prev.msg.ReceiptHandle = m.ReceiptHandle
				continue
			}
			fresh++
			seen[id] = &dlqMessage{msg: m}
			msgs = append(msgs, seen[id])
		}
		if fresh == 0 {
			return msgs, nil // only messages already read: the rest is drained
		}
	}
	return msgs, nil
}

// sourceQueue is the ARN of the queue m was moved from: SQS's
// DeadLetterQueueSourceArn, or sqsdlq's source-queue attribute; "" when
// neither says.
func sourceQueue(m types.Message) string {
	if arn := m.Attributes[string(types.MessageSystemAttributeNameDeadLetterQueueSourceArn)]; arn != "" {
		return arn
	}
	return aws.ToString(m.MessageAttributes[sqsdlq.AttrSourceQueue].StringValue)
}

// classify computes m's record id and what its redelivery will do.
func (c *redriveCmd) classify(ctx context.Context, o *ops, kf idempotency.Selector, m *dlqMessage) {
	if src := sourceQueue(m.msg); src != "" && c.queueARN != "" && src != c.queueARN && !c.force.set {
		// A dead-letter queue that several queues share: the message is
		// another queue's, for another function.
		m.Class, m.Problem = classOtherQueue, "it was moved from another queue than --queue: left in the dead-letter queue, for a redrive to its own queue (--force sends it to --queue)"
		return
	}
	id, err := messageID(o, kf, c.redelivery(m, 1))
	if err != nil {
		m.Class, m.Problem = classBadKey, err.Error()
		return
	}
	if again, err := messageID(o, kf, c.redelivery(m, 2)); err != nil || again != id {
		m.Class, m.Problem = classRun, "the key reads what each delivery gets anew (the message id, receipt handle, "+
			"timestamps or sender): the redelivery has a record id of its own, and the operation runs again"
		return
	}
	m.RecordID = id
	rec, err := o.inspect.Inspect(ctx, id)
	switch {
	case errors.Is(err, driver.ErrNotFound):
		m.Class = classRun
		return
	case err != nil:
		m.Class, m.Problem = classUnreadable, err.Error()
		return
	}
	st := state(rec.Record, now())
	if rec.Validation != "" && st != stateExpired && st != stateUnknown && payloadMismatch(m.msg) {
		// The guard compares the payload before anything else on a record
		// it finds (idempotency.ErrPayloadMismatch): the digest that
		// failed this message still stands.
		m.Class, m.Problem = classMismatch, "it failed with a payload mismatch (its sqsdlq attributes say so), and the record still holds the other payload's digest: "+
			"the redelivery fails again, the operation does not run"
		return
	}
	switch st {
	case stateCompleted:
		m.Class = classReplay
		switch {
		case driver.IsWithheld(rec.Data):
			m.Class = classWithheld
		case o.sealer != nil && driver.IsSealed(rec.Data):
			// Its redelivery replays it only if the function's key opens it.
			if _, err := driver.OpenData(ctx, o.sealer, id, rec.Data); err != nil {
				m.Class, m.Problem = classUnreadable, "its sealed result does not open with --seal-key: the redelivery fails again (ErrUnsealed): "+err.Error()
			}
		}
		if m.Class == classReplay && rec.Validation != "" {
			// The tool does not know the function's payload selector
			// (idempotency.WithPayload): it cannot check the digest.
			m.Problem = "the record holds a payload digest (WithPayload) the tool cannot check: the redelivery replays only if its payload is the one stored, " +
				"else it fails again with a payload mismatch"
		}
	case stateQuarantined:
		m.Class = classQuarantined
	case stateInProgress:
		m.Class = classInProgress
	case stateUnknown:
		m.Class, m.Problem = classUnreadable, "the record has an unknown status"
	case stateLeaseLapsed:
		// In strict mode a lapsed claim is never taken over: the guard
		// quarantines it (idempotency.ErrQuarantined), whether the claim is
		// strict (any guard, the record says so) or the function is.
		switch {
		case rec.Strict():
			m.Class, m.Problem = classQuarantined, "a strict claim whose lease lapsed: the redelivery quarantines it, never runs it"
		case o.g.strict:
			m.Class, m.Problem = classQuarantined, "a claim whose lease lapsed, and the function is strict (--strict): the redelivery quarantines it, never runs it"
		case rec.Validation != "":
			m.Class, m.Problem = classRun, "a claim whose lease lapsed, holding a payload digest (WithPayload) the tool cannot check: the redelivery takes it over "+
				"only if its payload is the one claimed, else it fails with a payload mismatch"
		default:
			m.Class = classRun
		}
	default:
		m.Class = classRun
	}
}

// perDelivery are the system attributes SQS gives each delivery anew, and
// those a redrive drops: a redelivery has its own.
var perDelivery = []string{"ApproximateReceiveCount", "ApproximateFirstReceiveTimestamp", "SentTimestamp", "SenderId",
	"SequenceNumber", "MessageDeduplicationId", "AWSTraceHeader", "DeadLetterQueueSourceArn"}

// redelivery is m as Lambda will deliver it from --queue once redriven: its
// body, the message attributes redrive sends (sqsonce's own left out), the
// system attributes it keeps (MessageGroupId; a FIFO queue's deduplication
// id, which send sets), and the source queue's ARN and region, with the MD5s
// SQS computes. What each delivery gets anew (perDelivery, the message id
// and receipt handle) holds placeholders numbered n: two redeliveries
// (n 1 and 2) that differ only there show whether the key reads them. Its
// ApproximateReceiveCount is 1: the class is its first delivery's.
func (c *redriveCmd) redelivery(m *dlqMessage, n int) events.SQSMessage {
	attrs := make(map[string]string, len(m.msg.Attributes))
	for k, v := range m.msg.Attributes {
		attrs[k] = v
	}
	for _, k := range perDelivery {
		delete(attrs, k)
	}
	nth := strconv.Itoa(n)
	// Its first delivery is its first receive from --queue.
	attrs["ApproximateReceiveCount"] = "1"
	attrs["SentTimestamp"], attrs["ApproximateFirstReceiveTimestamp"], attrs["SenderId"] = "170000000000"+nth, "170000000000"+nth, "SQSONCEOPSREDRIVE"+nth
	if strings.HasSuffix(c.queue, ".fifo") {
		attrs["SequenceNumber"] = "1000000000000000000" + nth
		attrs["MessageDeduplicationId"] = aws.ToString(m.msg.MessageId)
	}
	sent := sendable(m.msg.MessageAttributes)
	body := aws.ToString(m.msg.Body)
	sum := md5.Sum([]byte(body))
	out := events.SQSMessage{
		MessageId:         "sqsonce-ops-redrive-" + nth,
		ReceiptHandle:     "sqsonce-ops-redrive-" + nth,
		Body:              body,
		Md5OfBody:         hex.EncodeToString(sum[:]),
		Attributes:        attrs,
		MessageAttributes: lambdaAttributes(sent),
		EventSource:       "aws:sqs",
		EventSourceARN:    c.queueARN,
	}
	if len(sent) > 0 {
		out.Md5OfMessageAttributes = attributesMD5(sent)
	}
	if parts := strings.SplitN(c.queueARN, ":", 5); len(parts) == 5 {
		out.AWSRegion = parts[3]
	}
	return out
}

// attributesMD5 is the MD5 SQS computes of a message's attributes
// (MD5OfMessageAttributes): over the attributes sorted by name, each as its
// name, its data type, a transport byte (1 for a string or number value, 2
// for a binary one) and its value, each of the three lengths a 4-byte
// big-endian prefix.
func attributesMD5(attrs map[string]types.MessageAttributeValue) string {
	h := md5.New()
	field := func(b []byte) {
		var n [4]byte
		binary.BigEndian.PutUint32(n[:], uint32(len(b)))
		h.Write(n[:])
		h.Write(b)
	}
	for _, name := range slices.Sorted(maps.Keys(attrs)) {
		v := attrs[name]
		field([]byte(name))
		field([]byte(aws.ToString(v.DataType)))
		if v.BinaryValue != nil {
			h.Write([]byte{2})
			field(v.BinaryValue)
		} else {
			h.Write([]byte{1})
			field([]byte(aws.ToString(v.StringValue)))
		}
	}
	return hex.EncodeToString(h.Sum(nil))
}

// lambdaAttributes are a message's attributes as Lambda's event presents
// them to the function, so that a key source that reads them (a JMESPath
// expression on messageAttributes) sees what the redelivery will.
func lambdaAttributes(attrs map[string]types.MessageAttributeValue) map[string]events.SQSMessageAttribute {
	if len(attrs) == 0 {
		return nil
	}
	out := make(map[string]events.SQSMessageAttribute, len(attrs))
	for k, v := range attrs {
		out[k] = events.SQSMessageAttribute{StringValue: v.StringValue, BinaryValue: v.BinaryValue,
			StringListValues: v.StringListValues, BinaryListValues: v.BinaryListValues, DataType: aws.ToString(v.DataType)}
	}
	return out
}

// send sends each message to the queue at the rate, and deletes it from the
// dead-letter queue once it was sent: a message is never lost, at worst
// it is in both queues. A FIFO group stops at its first message not sent:
// the rest of the group stays in the dead-letter queue behind it, so that
// the next run sends them in their order.
func (c *redriveCmd) send(ctx context.Context, o *ops, msgs []*dlqMessage, report *redriveReport) {
	interval := time.Duration(float64(time.Second) / c.perSecond) // parseRate bounds it
	fifo := strings.HasSuffix(c.queue, ".fifo")
	next := time.Now()
	var unsent []*dlqMessage
	stopped := map[string]*stoppedGroup{}
	var groups []string // stopped, in the order they stopped
	notSent := func(m *dlqMessage, group, why string) {
		m.Outcome, m.Problem = outcomeNotSent, why
		report.NotSent++
		unsent = append(unsent, m)
		if fifo && group != "" {
			stopped[group] = &stoppedGroup{Group: group, MessageID: aws.ToString(m.msg.MessageId), Left: 1}
			groups = append(groups, group)
		}
	}
	for _, m := range msgs {
		if m.Class == classOtherQueue {
			m.Outcome = outcomeKept
			report.Kept++
			unsent = append(unsent, m)
			continue
		}
		group := m.msg.Attributes[string(types.MessageSystemAttributeNameMessageGroupId)]
		if sg := stopped[group]; fifo && sg != nil {
			m.Outcome, m.Problem = outcomeHeld, "an earlier message of its FIFO group was not sent"
			report.Held++
			sg.Left++
			unsent = append(unsent, m)
			continue
		}
		if err := ctx.Err(); err != nil {
			notSent(m, group, "interrupted")
			continue
		}
		if d := time.Until(next); d > 0 {
			select {
			case <-time.After(d):
			case <-ctx.Done():
				notSent(m, group, "interrupted")
				continue
			}
		}
		next = time.Now().Add(interval)
		in := &sqs.SendMessageInput{
			QueueUrl:          aws.String(c.queue),
			MessageBody:       m.msg.Body,
			MessageAttributes: sendable(m.msg.MessageAttributes),
		}
		if group != "" {
			// Its group goes back with it, to a standard (fair) queue too:
			// under message-group tenancy the record id depends on it.
			in.MessageGroupId = aws.String(group)
		}
		if fifo {
			if group == "" {
				notSent(m, group, "the message has no MessageGroupId for the FIFO queue")
				continue
			}
			// A message sent again by a later run (this run's delete failed)
			// within SQS's five-minute deduplication interval is sent once.
			in.MessageDeduplicationId = m.msg.MessageId
		}
		if _, err := o.sqs.SendMessage(ctx, in); err != nil {
			notSent(m, group, err.Error())
			continue
		}
		// Sent: from here on the message is never lost. A delete that
		// fails is tried again; one that keeps failing leaves the message
		// in both queues, and the idempotent consumer replays the second.
		var err error
		for range deleteAttempts {
			_, err = o.sqs.DeleteMessage(ctx, &sqs.DeleteMessageInput{QueueUrl: aws.String(c.dlq), ReceiptHandle: m.msg.ReceiptHandle})
			if err == nil || ctx.Err() != nil {
				break
			}
		}
		if err != nil {
			m.Outcome, m.Problem = outcomeSentNotDeleted, err.Error()
			report.SentNotDeleted++
			continue
		}
		m.Outcome = outcomeRedriven
		report.Redriven++
	}
	for _, g := range groups {
		report.StoppedGroups = append(report.StoppedGroups, *stopped[g])
	}
	c.release(o, unsent)
}

// sendable is a message's attributes without sqsdlq's own.
func sendable(attrs map[string]types.MessageAttributeValue) map[string]types.MessageAttributeValue {
	out := make(map[string]types.MessageAttributeValue, len(attrs))
	for k, v := range attrs {
		if !strings.HasPrefix(k, ourPrefix) {
			out[k] = v
		}
	}
	if len(out) == 0 {
		return nil
	}
	return out
}

// payloadMismatchType is sqsdlq.AttrErrorType's value for a payload
// mismatch: the error's Go type.
var payloadMismatchType = fmt.Sprintf("%T", (*idempotency.PayloadMismatchError)(nil))

// payloadMismatch reports whether the attributes sqsdlq added when it
// moved msg say that the function failed it with a payload mismatch: the
// error's type, or its reason (for a type that wraps it).
func payloadMismatch(msg types.Message) bool {
	if aws.ToString(msg.MessageAttributes[sqsdlq.AttrErrorType].StringValue) == payloadMismatchType {
		return true
	}
	return strings.Contains(aws.ToString(msg.MessageAttributes[sqsdlq.AttrReason].StringValue), idempotency.ErrPayloadMismatch.Error())
}

// release makes msgs visible again in the dead-letter queue at once. A
// failure only delays them until their visibility timeout ends.
func (c *redriveCmd) release(o *ops, msgs []*dlqMessage) {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	for i := 0; i < len(msgs); i += 10 {
		var entries []types.ChangeMessageVisibilityBatchRequestEntry
		for n, m := range msgs[i:min(i+10, len(msgs))] {
			entries = append(entries, types.ChangeMessageVisibilityBatchRequestEntry{
				Id: aws.String(strconv.Itoa(n)), ReceiptHandle: m.msg.ReceiptHandle, VisibilityTimeout: 0,
			})
		}
		if _, err := o.sqs.ChangeMessageVisibilityBatch(ctx, &sqs.ChangeMessageVisibilityBatchInput{QueueUrl: aws.String(c.dlq), Entries: entries}); err != nil {
			fmt.Fprintf(o.stderr, "sqsonce-ops: %d message(s) stay invisible in the dead-letter queue until their visibility timeout: %v\n", len(entries), err)
		}
	}
}

func (c *redriveCmd) print(o *ops, r redriveReport) {
	if o.g.json {
		if r.Messages == nil {
			r.Messages = []redriveMessage{}
		}
		printJSON(o.stdout, r)
		return
	}
	w := o.stdout
	fmt.Fprintf(w, "dead-letter queue %s: %d message(s) read\n", r.DLQ, r.Read)
	fmt.Fprintf(w, "key source: %s\n", r.KeySource)
	for _, cl := range []struct{ name, text string }{
		{classReplay, "will replay (COMPLETED: the stored result, the operation does not run; with a payload digest the tool cannot check, only if the payload is the one stored)"},
		{classRun, "will run (no record, released, expired, or lease lapsed outside strict mode)"},
		{classInProgress, "in progress (a live lease: retried until it ends)"},
		{classWithheld, "withheld (COMPLETED, its result could not be sealed: fail again, the operation does not run)"},
		{classMismatch, "payload mismatch (failed so, the record still holds the other payload's digest: fail again, the operation does not run)"},
		{classQuarantined, "quarantined, or lease lapsed in strict mode (fail again until resolved or released)"},
		{classBadKey, "bad or missing key (fail again)"},
		{classUnreadable, "unreadable with this configuration"},
		{classOtherQueue, "from another queue than --queue (not sent: redrive them to their own queue)"},
	} {
		fmt.Fprintf(w, "  %4d %s\n", r.Classes[cl.name], cl.text)
	}
	for _, m := range r.Messages {
		if m.Problem != "" && m.Outcome != outcomeHeld {
			fmt.Fprintf(w, "  message %s: %s: %s\n", m.MessageID, m.Class, m.Problem)
		}
	}
	if r.Forced != "" {
		fmt.Fprintf(w, "forced (%s) past %d queue check(s)\n", r.Forced, len(r.ForcedPast))
	}
	switch {
	case r.DryRun:
		// Every message read is sent back, those that will fail again too
		// (they return to the dead-letter queue): say how many of each.
		again := r.Classes[classBadKey] + r.Classes[classQuarantined] + r.Classes[classWithheld] + r.Classes[classMismatch]
		all := "all "
		if r.Classes[classOtherQueue] > 0 {
			all = fmt.Sprintf("%d of the ", r.Read-r.Classes[classOtherQueue])
		}
		fmt.Fprintf(w, "dry run: would send %s%d message(s) read to %s, %d of them to fail again there (bad or missing key, quarantined, withheld, payload mismatch) and come back here; nothing sent or deleted (each message read was received once: its receive count rose by one)\n",
			all, r.Read, r.Queue, again)
	case r.Classes[classUnreadable] > 0:
		fmt.Fprintf(w, "nothing sent to %s\n", r.Queue)
	default:
		fmt.Fprintf(w, "redriven to %s: %d sent and deleted, %d not sent (still in the dead-letter queue), %d held behind them in their FIFO group (still in the dead-letter queue), %d sent but not deleted (in both queues)",
			r.Queue, r.Redriven, r.NotSent, r.Held, r.SentNotDeleted)
		if r.Kept > 0 {
			fmt.Fprintf(w, ", %d of other queues kept (still in the dead-letter queue)", r.Kept)
		}
		fmt.Fprintln(w)
	}
	for _, g := range r.StoppedGroups {
		fmt.Fprintf(w, "FIFO group %s stopped at message %s: %d message(s) left in the dead-letter queue, in order; run redrive again to send them\n",
			g.Group, g.MessageID, g.Left)
	}
}
