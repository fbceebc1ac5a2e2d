package chaos

import (
	"context"
	"fmt"
	"time"

	"github.com/sqsonce/sqsonce/middleware/batch"
	"github.com/sqsonce/sqsonce/middleware/batch/sqsvisibility"
	"github.com/sqsonce/sqsonce/test/history"
)

// The worker's pacing, scaled to the harness's 2 s visibility timeout as
// the defaults are to a function's: a failed record backs off 1 s after its
// first receive, doubling up to 8 s.
const (
	pacingBase = time.Second
	pacingCap  = 8 * time.Second
)

// pace turns on paced redelivery in opts when the worker is configured for
// it: visibility changes through ChangeMessageVisibilityBatch on the queue
// the worker polls. Each change is recorded in the history.
func (w *worker) pace(opts *batch.Options) error {
	if !w.cfg.Pacing {
		return nil
	}
	ch, err := sqsvisibility.New(w.sqs, sqsvisibility.WithQueueURL(func(arn string) (string, error) {
		if arn != w.cfg.QueueARN {
			return "", fmt.Errorf("chaos: no URL for queue %s", arn)
		}
		return w.cfg.QueueURL, nil // moto's URLs are not SQS's
	}))
	if err != nil {
		return err
	}
	opts.Pacing = batch.Pacing{
		Changer: ch,
		Base:    pacingBase,
		Cap:     pacingCap,
		OnChange: func(ctx context.Context, c batch.VisibilityChange, err error) {
			e := history.Event{Ev: history.KindVisibility, Dur: int64(c.Timeout)}
			if inv, _ := ctx.Value(invocationKey{}).(*invocation); inv != nil && inv.refs[c.MessageID] != nil {
				e.D = inv.refs[c.MessageID].d
			}
			if err != nil {
				e.Err = err.Error()
			}
			_ = w.write(e)
		},
	}
	return nil
}
