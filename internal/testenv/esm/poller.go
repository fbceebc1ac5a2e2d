package esm

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"sync"
	"time"

	"github.com/aws/aws-lambda-go/events"
	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/sqs"
	sqstypes "github.com/aws/aws-sdk-go-v2/service/sqs/types"
)

// Delivery is what became of one record of one invocation.
type Delivery struct {
	Invocation   int64  // the invocation's number, from 1, across the poller
	MessageID    string // the record's messageId
	Body         string // the record's body
	ReceiveCount int    // its ApproximateReceiveCount
	// Acked reports whether the function acknowledged the record (it was
	// not among the batch item failures of a good response).
	Acked bool
	// Lost reports that the acknowledgement was lost on purpose
	// ([Poller.LoseAck]): the record was not deleted.
	Lost bool
	// Err is the invocation's error, the response's, or the delete's.
	Err error
}

// Poller is an event source mapping's poll loop. Set its fields, then call
// [Poller.Run] once.
type Poller struct {
	Mapping Mapping
	SQS     API
	// Invokers are the execution environments: up to MaxConcurrency of
	// them run an invocation at a time, each one at a time. Required.
	Invokers []Invoker
	// OnDelivery, if set, is called for every record of every invocation
	// once its batch is settled, from the invocation's goroutine.
	OnDelivery func(Delivery)
	// LoseAck, if set, is asked about every acknowledged record; when it
	// returns true the record is not deleted but made visible again at
	// once: a lost acknowledgement, which SQS answers with a second
	// delivery of the same message.
	LoseAck func(events.SQSMessage) bool

	mu          sync.Mutex
	invocations int64
}

// pollWait is the longest a receive waits for a first record, so that Run
// notices the end of its context promptly.
const pollWait = time.Second

// Run polls until ctx ends, then waits for the invocations in flight and
// settles them. Records received but not yet handed to the function are
// left to the visibility timeout, as when Lambda's poller stops. It returns
// an error only for bad settings.
func (p *Poller) Run(ctx context.Context) error {
	n := p.Mapping.MaxConcurrency
	if n == 0 {
		n = len(p.Invokers)
	}
	switch {
	case len(p.Invokers) == 0:
		return errors.New("esm: Poller.Invokers is empty")
	case n < 1 || n > len(p.Invokers):
		return fmt.Errorf("esm: MaxConcurrency %d with %d invokers: it must be between 1 and the number of invokers", n, len(p.Invokers))
	case p.SQS == nil || p.Mapping.QueueURL == "" || p.Mapping.QueueARN == "":
		return errors.New("esm: Poller needs SQS, Mapping.QueueURL and Mapping.QueueARN")
	case p.Mapping.BatchSize < 0 || p.Mapping.BatchSize > 10000 || p.Mapping.MaxBatchingWindow < 0:
		return fmt.Errorf("esm: bad BatchSize %d or MaxBatchingWindow %v", p.Mapping.BatchSize, p.Mapping.MaxBatchingWindow)
	}
	var wg sync.WaitGroup
	for _, inv := range p.Invokers[:n] {
		wg.Go(func() {
			for ctx.Err() == nil {
				msgs := p.gather(ctx)
				if len(msgs) == 0 || ctx.Err() != nil {
					continue
				}
				p.invoke(ctx, inv, msgs)
			}
		})
	}
	wg.Wait()
	return nil
}

// gather receives one batch: up to BatchSize records, waiting at most
// MaxBatchingWindow after the first.
func (p *Poller) gather(ctx context.Context) []sqstypes.Message {
	size := p.Mapping.BatchSize
	if size == 0 {
		size = 10
	}
	var batch []sqstypes.Message
	var until time.Time
	for len(batch) < size && ctx.Err() == nil {
		wait := pollWait
		if batch != nil {
			wait = time.Until(until)
			if wait <= 0 {
				break
			}
		}
		msgs, err := p.receive(ctx, min(size-len(batch), 10), wait)
		if err != nil {
			if ctx.Err() == nil {
				sleep(ctx, 100*time.Millisecond) // the endpoint is busy or restarting
			}
			continue
		}
		if len(msgs) > 0 && batch == nil {
			if p.Mapping.MaxBatchingWindow == 0 {
				return msgs
			}
			until = time.Now().Add(p.Mapping.MaxBatchingWindow)
		}
		batch = append(batch, msgs...)
	}
	return batch
}

// receive makes one ReceiveMessage call that waits up to wait (long
// polling in whole seconds, then short polls).
func (p *Poller) receive(ctx context.Context, limit int, wait time.Duration) ([]sqstypes.Message, error) {
	secs := int32(min(wait/time.Second, 20))
	rctx, cancel := context.WithTimeout(ctx, time.Duration(secs)*time.Second+10*time.Second)
	defer cancel()
	out, err := p.SQS.ReceiveMessage(rctx, &sqs.ReceiveMessageInput{
		QueueUrl:                    aws.String(p.Mapping.QueueURL),
		MaxNumberOfMessages:         int32(limit),
		WaitTimeSeconds:             secs,
		MessageSystemAttributeNames: SystemAttributes,
		MessageAttributeNames:       []string{"All"},
	})
	if err != nil {
		return nil, err
	}
	if len(out.Messages) == 0 && secs == 0 {
		sleep(ctx, min(wait, 100*time.Millisecond))
	}
	return out.Messages, nil
}

// invoke runs one invocation and settles its batch.
func (p *Poller) invoke(ctx context.Context, inv Invoker, msgs []sqstypes.Message) {
	p.mu.Lock()
	p.invocations++
	num := p.invocations
	p.mu.Unlock()

	ev := Event(p.Mapping.QueueARN, msgs)
	// The invocation runs to its end even when the poller stops; the
	// function's own timeout bounds it.
	resp, err := inv.Invoke(context.WithoutCancel(ctx), ev)
	var acked []events.SQSMessage
	if err == nil {
		acked, err = Acknowledged(ev, resp)
	} else {
		err = fmt.Errorf("esm: invocation %d: %w", num, err)
	}
	sctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 10*time.Second)
	defer cancel()
	isAcked := make(map[string]bool, len(acked))
	lost := map[string]bool{}
	var del []events.SQSMessage
	var settleErr error
	for _, r := range acked {
		isAcked[r.MessageId] = true
		if p.LoseAck == nil || !p.LoseAck(r) {
			del = append(del, r)
			continue
		}
		lost[r.MessageId] = true
		_, e := p.SQS.ChangeMessageVisibility(sctx, &sqs.ChangeMessageVisibilityInput{
			QueueUrl: aws.String(p.Mapping.QueueURL), ReceiptHandle: aws.String(r.ReceiptHandle), VisibilityTimeout: 0,
		})
		settleErr = errors.Join(settleErr, e)
	}
	settleErr = errors.Join(settleErr, Delete(sctx, p.SQS, p.Mapping.QueueURL, del))
	if p.OnDelivery == nil {
		return
	}
	for _, r := range ev.Records {
		n, _ := strconv.Atoi(r.Attributes[string(sqstypes.MessageSystemAttributeNameApproximateReceiveCount)])
		d := Delivery{Invocation: num, MessageID: r.MessageId, Body: r.Body, ReceiveCount: n,
			Acked: isAcked[r.MessageId], Lost: lost[r.MessageId], Err: err}
		if d.Acked {
			d.Err = settleErr
		}
		p.OnDelivery(d)
	}
}

func sleep(ctx context.Context, d time.Duration) {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-t.C:
	case <-ctx.Done():
	}
}
