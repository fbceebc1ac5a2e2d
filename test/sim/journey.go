package sim

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/sqs"

	"github.com/sqsonce/sqsonce/middleware/batch"
	"github.com/sqsonce/sqsonce/middleware/batch/sqsdlq"
	"github.com/sqsonce/sqsonce/test/history"
)

// changer is one process's batch.VisibilityChanger on the simulated queue
// (pacing and KeepVisible): each call is one scheduler step, which changes
// the visibility of every message whose receipt handle is still its
// latest, as SQS's ChangeMessageVisibilityBatch does.
type changer struct{ p *proc }

var errStale = errors.New("sim: receipt handle no longer valid")

func (c *changer) ChangeVisibility(ctx context.Context, changes []batch.VisibilityChange) []error {
	p, w := c.p, c.p.w
	errs := make([]error, len(changes))
	var hs []string
	for _, ch := range changes {
		hs = append(hs, ch.ReceiptHandle)
	}
	what := strings.Join(hs, ",")
	p.mu.Lock()
	p.vis[what]++
	key := fmt.Sprintf("vis/%s/%d", what, p.vis[what])
	p.mu.Unlock()
	applied := false
	if !w.inflight(p, key, func() {
		applied = true
		now := time.Now()
		for i, ch := range changes {
			// Pacing's (practically zero) jitter moves a timeout by a few
			// nanoseconds, differently in two runs of one seed: to the
			// millisecond, as the run's every other time.
			ch.Timeout = ch.Timeout.Round(time.Millisecond)
			m := w.dmsg[ch.ReceiptHandle]
			e := history.Event{Proc: p.name, Ev: history.KindVisibility, D: ch.ReceiptHandle, Dur: int64(ch.Timeout)}
			if m == nil || m.deleted || m.dlq || m.last != ch.ReceiptHandle {
				errs[i], e.Err = errStale, "receipt handle no longer valid"
			} else {
				m.visibleAt = now.Add(ch.Timeout)
			}
			w.record(e)
		}
	}) || !applied {
		for i := range errs {
			errs[i] = errDead
		}
	}
	for _, err := range errs {
		if err != nil {
			return errs
		}
	}
	return nil
}

// sqsAPI is the simulated SQS that package sqsdlq's real mover calls: a
// send to the dead-letter queue and a delete from the queue are one
// scheduler step each.
type sqsAPI struct{ p *proc }

var _ sqsdlq.API = (*sqsAPI)(nil)

func (a *sqsAPI) GetQueueAttributes(context.Context, *sqs.GetQueueAttributesInput, ...func(*sqs.Options)) (*sqs.GetQueueAttributesOutput, error) {
	return nil, errors.New("sim: the mover is configured with its dead-letter queue")
}

func (a *sqsAPI) SendMessage(ctx context.Context, in *sqs.SendMessageInput, _ ...func(*sqs.Options)) (*sqs.SendMessageOutput, error) {
	p, w := a.p, a.p.w
	src := ""
	if v, ok := in.MessageAttributes[sqsdlq.AttrMessageID]; ok {
		src = aws.ToString(v.StringValue)
	}
	var id string
	if !w.step(p, "dlq_send/"+src, func() {
		m := w.msgs[src]
		if m == nil || aws.ToString(in.QueueUrl) != deadLetterARN {
			return
		}
		w.nmsgs++
		id = fmt.Sprintf("m%02d", w.nmsgs)
		dm := &qmsg{id: id, key: m.key, payload: m.payload, tenant: m.tenant, group: aws.ToString(in.MessageGroupId), dlq: true}
		w.msgs[id] = dm
		w.dlq = append(w.dlq, dm)
		w.note("dead-letter %s as %s", src, id)
		// The send is the move: the message is in the dead-letter queue
		// whether or not its delete from the queue succeeds (a stale
		// receipt handle), and the batch does not report it failed.
		if d := w.deliveryOf(p, src); d != "" && !w.moved[d] {
			w.moved[d] = true
			w.record(history.Event{Proc: p.name, Ev: history.KindMove, D: d, Msg: m.id, Key: w.hkey(m), Op: "sqsdlq"})
		}
	}) {
		return nil, errDead
	}
	if id == "" {
		return nil, errors.New("sim: no such message or queue")
	}
	return &sqs.SendMessageOutput{MessageId: aws.String(id)}, nil
}

func (a *sqsAPI) DeleteMessage(ctx context.Context, in *sqs.DeleteMessageInput, _ ...func(*sqs.Options)) (*sqs.DeleteMessageOutput, error) {
	p, w := a.p, a.p.w
	d := aws.ToString(in.ReceiptHandle)
	ok := false
	if !w.step(p, "dlq_delete/"+d, func() {
		m := w.dmsg[d]
		if m == nil || m.deleted || m.last != d {
			return
		}
		ok = true
		m.deleted = true
		if !w.moved[d] {
			w.moved[d] = true
			w.record(history.Event{Proc: p.name, Ev: history.KindMove, D: d, Msg: m.id, Key: w.hkey(m), Op: "sqsdlq"})
		}
	}) {
		return nil, errDead
	}
	if !ok {
		return nil, errStale
	}
	return &sqs.DeleteMessageOutput{}, nil
}

// deliveryOf returns p's latest delivery of message id (the one its batch
// is moving), or "".
func (w *world) deliveryOf(p *proc, id string) string {
	best, bn := "", -1
	for d, m := range w.dmsg {
		rest, ok := strings.CutPrefix(d, p.name+"/")
		if !ok || m.id != id {
			continue
		}
		if n, err := strconv.Atoi(rest); err == nil && n > bn {
			best, bn = d, n
		}
	}
	return best
}

// redrive is the operator's redrive of the dead-letter queue (sqsonce-ops
// redrive, or SQS's own message move task): every message goes back to the
// queue as a new message with its body, its tenant and its MessageGroupId,
// visible at once.
func (w *world) redrive() {
	w.redriv++
	now := time.Now()
	for _, m := range w.dlq {
		w.nmsgs++
		nm := &qmsg{id: fmt.Sprintf("m%02d", w.nmsgs), key: m.key, payload: m.payload, tenant: m.tenant, group: m.group, visibleAt: now}
		w.queue = append(w.queue, nm)
		w.msgs[nm.id] = nm
		w.record(history.Event{Proc: "harness", Ev: history.KindRedrive, Msg: nm.id, Target: m.id, Key: w.hkey(nm)})
	}
	w.note("redrive %d messages", len(w.dlq))
	w.dlq = nil
}
