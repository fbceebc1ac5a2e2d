package main

import (
	"bufio"
	"bytes"
	"context"
	_ "embed"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"time"

	"github.com/aws/aws-lambda-go/events"
	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/credentials"
	"github.com/aws/aws-sdk-go-v2/service/sqs"
	sqstypes "github.com/aws/aws-sdk-go-v2/service/sqs/types"

	"github.com/sqsonce/sqsonce/internal/testenv/powertools"
)

// The acknowledgement row: a batch whose keys each come twice goes through
// a real queue on the same moto_server, polled as Lambda's event source
// mapping does with ReportBatchItemFailures (the records the handler
// reports failed stay on the queue and come back a visibility timeout after
// they were received; the others are deleted), until every record of the
// batch is deleted. The handler is one warm process per side and round,
// started and given one batch of new keys before the clock starts.

//go:embed stream.mjs
var streamScript []byte

// pollEvery is the pause between two empty receives. moto's long poll
// notices new messages but not a visibility timeout's end, so the poller
// short-polls instead: a redelivered record is seen at most pollEvery late.
const pollEvery = 20 * time.Millisecond

// reply is a streaming handler's answer to one event.
type reply struct {
	BatchItemFailures []events.SQSBatchItemFailure `json:"batchItemFailures"`
	Ms                float64                      `json:"ms"`
}

// streamer is a running streaming handler: the request, then one event a
// line on its stdin; one reply a line on its stdout.
type streamer struct {
	cmd    *exec.Cmd
	in     io.WriteCloser
	out    *bufio.Scanner
	stderr bytes.Buffer
}

func startStreamer(cmd *exec.Cmd, req powertools.Request) (*streamer, error) {
	s := &streamer{cmd: cmd}
	cmd.Stderr = &s.stderr
	in, err := cmd.StdinPipe()
	if err != nil {
		return nil, err
	}
	out, err := cmd.StdoutPipe()
	if err != nil {
		return nil, err
	}
	if err := cmd.Start(); err != nil {
		return nil, err
	}
	s.in, s.out = in, bufio.NewScanner(out)
	s.out.Buffer(nil, 1<<20)
	req.Events = nil
	if err := s.send(req); err != nil {
		return nil, errors.Join(err, s.close())
	}
	return s, nil
}

func (s *streamer) send(v any) error {
	line, err := json.Marshal(v)
	if err != nil {
		return err
	}
	_, err = s.in.Write(append(line, '\n'))
	return err
}

// run hands ev to the handler and waits for its reply.
func (s *streamer) run(ev events.SQSEvent) (reply, error) {
	if err := s.send(ev); err != nil {
		return reply{}, fmt.Errorf("%s: %w\nstderr:\n%s", s.cmd.Path, err, s.stderr.String())
	}
	if !s.out.Scan() {
		return reply{}, fmt.Errorf("%s: no reply: %v\nstderr:\n%s", s.cmd.Path, s.out.Err(), s.stderr.String())
	}
	var r reply
	if err := json.Unmarshal(s.out.Bytes(), &r); err != nil {
		return reply{}, fmt.Errorf("%s: reply %q: %w", s.cmd.Path, s.out.Text(), err)
	}
	return r, nil
}

// close ends the handler's input and waits for it to exit.
func (s *streamer) close() error {
	_ = s.in.Close()
	if err := s.cmd.Wait(); err != nil {
		return fmt.Errorf("%s: %w\nstderr:\n%s", s.cmd.Path, err, s.stderr.String())
	}
	return nil
}

// nodeStreamDir writes stream.mjs into a new temporary folder next to a
// node_modules link to driver's installed packages, so that it imports the
// same pinned Powertools as driver.mjs. The caller removes the folder.
func nodeStreamDir(driver string) (string, error) {
	modules, err := filepath.Abs(filepath.Join(driver, "node_modules"))
	if err != nil {
		return "", err
	}
	dir, err := os.MkdirTemp("", "benchpeer-")
	if err != nil {
		return "", err
	}
	err = errors.Join(os.Symlink(modules, filepath.Join(dir, "node_modules")),
		os.WriteFile(filepath.Join(dir, "stream.mjs"), streamScript, 0o600))
	if err != nil {
		return "", errors.Join(err, os.RemoveAll(dir))
	}
	return dir, nil
}

// queue is the benchmark's SQS queue on moto.
type queue struct {
	client *sqs.Client
	url    string
	arn    string
}

// createQueue creates a standard queue whose visibility timeout is
// visibility, on moto at endpoint (not through the latency proxy, which
// stands for DynamoDB only).
func createQueue(endpoint string, visibility time.Duration) (queue, error) {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	c := sqs.NewFromConfig(aws.Config{
		Region:       "us-east-1",
		Credentials:  credentials.NewStaticCredentialsProvider("test", "test", ""),
		BaseEndpoint: aws.String(endpoint),
	})
	out, err := c.CreateQueue(ctx, &sqs.CreateQueueInput{
		QueueName:  aws.String("bench-" + randomText(8)),
		Attributes: map[string]string{string(sqstypes.QueueAttributeNameVisibilityTimeout): strconv.Itoa(int(visibility / time.Second))},
	})
	if err != nil {
		return queue{}, err
	}
	q := queue{client: c, url: aws.ToString(out.QueueUrl)}
	attrs, err := c.GetQueueAttributes(ctx, &sqs.GetQueueAttributesInput{
		QueueUrl:       out.QueueUrl,
		AttributeNames: []sqstypes.QueueAttributeName{sqstypes.QueueAttributeNameQueueArn},
	})
	if err != nil {
		return queue{}, err
	}
	q.arn = attrs.Attributes[string(sqstypes.QueueAttributeNameQueueArn)]
	return q, nil
}

// ackResult is one batch's way through the queue.
type ackResult struct {
	elapsed    time.Duration // from the batch on the queue to its last record deleted
	deliveries int           // events the handler ran
	failures   int           // records it reported failed, summed over the deliveries
}

// ackBatch sends one message per body to q, then polls q and hands what it
// receives to s, deleting the records s does not report failed, until all
// are deleted or limit has passed.
func ackBatch(ctx context.Context, q queue, s *streamer, bodies []string, limit time.Duration) (ackResult, error) {
	entries := make([]sqstypes.SendMessageBatchRequestEntry, len(bodies))
	for i, b := range bodies {
		entries[i] = sqstypes.SendMessageBatchRequestEntry{Id: aws.String(strconv.Itoa(i)), MessageBody: aws.String(b)}
	}
	sent, err := q.client.SendMessageBatch(ctx, &sqs.SendMessageBatchInput{QueueUrl: aws.String(q.url), Entries: entries})
	if err != nil {
		return ackResult{}, err
	}
	if len(sent.Failed) > 0 {
		return ackResult{}, fmt.Errorf("send: %d of %d messages refused: %s", len(sent.Failed), len(bodies), aws.ToString(sent.Failed[0].Message))
	}
	var res ackResult
	start := time.Now()
	for pending := len(bodies); pending > 0; {
		if time.Since(start) > limit {
			return res, fmt.Errorf("%d of %d records not acknowledged after %v", pending, len(bodies), limit)
		}
		got, err := q.client.ReceiveMessage(ctx, &sqs.ReceiveMessageInput{
			QueueUrl: aws.String(q.url), MaxNumberOfMessages: 10,
			MessageSystemAttributeNames: []sqstypes.MessageSystemAttributeName{sqstypes.MessageSystemAttributeNameAll},
		})
		if err != nil {
			return res, err
		}
		if len(got.Messages) == 0 {
			time.Sleep(pollEvery)
			continue
		}
		r, err := s.run(sqsEvent(got.Messages, q.arn))
		if err != nil {
			return res, err
		}
		res.deliveries++
		res.failures += len(r.BatchItemFailures)
		failed := map[string]bool{}
		for _, f := range r.BatchItemFailures {
			failed[f.ItemIdentifier] = true
		}
		var del []sqstypes.DeleteMessageBatchRequestEntry
		for i, m := range got.Messages {
			if !failed[aws.ToString(m.MessageId)] {
				del = append(del, sqstypes.DeleteMessageBatchRequestEntry{Id: aws.String(strconv.Itoa(i)), ReceiptHandle: m.ReceiptHandle})
			}
		}
		if len(del) == 0 {
			continue
		}
		out, err := q.client.DeleteMessageBatch(ctx, &sqs.DeleteMessageBatchInput{QueueUrl: aws.String(q.url), Entries: del})
		if err != nil {
			return res, err
		}
		if len(out.Failed) > 0 {
			return res, fmt.Errorf("delete: %d of %d refused: %s", len(out.Failed), len(del), aws.ToString(out.Failed[0].Message))
		}
		pending -= len(del)
	}
	res.elapsed = time.Since(start)
	return res, nil
}

// sqsEvent is the event Lambda builds from received messages.
func sqsEvent(ms []sqstypes.Message, arn string) events.SQSEvent {
	var ev events.SQSEvent
	for _, m := range ms {
		ev.Records = append(ev.Records, events.SQSMessage{
			MessageId: aws.ToString(m.MessageId), ReceiptHandle: aws.ToString(m.ReceiptHandle),
			Body: aws.ToString(m.Body), Md5OfBody: aws.ToString(m.MD5OfBody), Attributes: m.Attributes,
			EventSource: "aws:sqs", EventSourceARN: arn, AWSRegion: "us-east-1",
		})
	}
	return ev
}

// runStream is the sqsonce side of a streamer: the request, then one event
// a line, one reply a line, in one process.
func runStream(in io.Reader, out io.Writer) error {
	sc := bufio.NewScanner(in)
	sc.Buffer(nil, 64<<20)
	if !sc.Scan() {
		return fmt.Errorf("stream: no request: %w", errors.Join(sc.Err(), io.ErrUnexpectedEOF))
	}
	var req powertools.Request
	if err := json.Unmarshal(sc.Bytes(), &req); err != nil {
		return fmt.Errorf("stream: request: %w", err)
	}
	w, err := newWorker(req)
	if err != nil {
		return err
	}
	enc := json.NewEncoder(out)
	for sc.Scan() {
		var ev events.SQSEvent
		if err := json.Unmarshal(sc.Bytes(), &ev); err != nil {
			return fmt.Errorf("stream: event: %w", err)
		}
		failures, ms, err := w.run(ev)
		if err != nil {
			return err
		}
		if err := enc.Encode(reply{BatchItemFailures: failures, Ms: ms}); err != nil {
			return err
		}
	}
	return sc.Err()
}
