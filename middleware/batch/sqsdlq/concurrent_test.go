package sqsdlq_test

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/service/sqs"

	"github.com/sqsonce/sqsonce/middleware/batch"
	"github.com/sqsonce/sqsonce/middleware/batch/sqsdlq"
)

// slowLookup is fakeSQS whose GetQueueAttributes waits for release.
type slowLookup struct {
	*fakeSQS
	started chan struct{}
	release chan struct{}
}

func (s *slowLookup) GetQueueAttributes(ctx context.Context, in *sqs.GetQueueAttributesInput, o ...func(*sqs.Options)) (*sqs.GetQueueAttributesOutput, error) {
	close(s.started)
	<-s.release
	return s.fakeSQS.GetQueueAttributes(ctx, in, o...)
}

// TestLookupWaitEndsAtOwnDeadline: invocations in one process share a
// Mover; one waiting for another's reading of the queue's RedrivePolicy
// stops at its own deadline (its moves fail, and SQS's redrive moves those
// messages), while the reading goes on for the invocation that started it.
func TestLookupWaitEndsAtOwnDeadline(t *testing.T) {
	f := &slowLookup{
		fakeSQS: &fakeSQS{policies: map[string]string{srcURL: `{"deadLetterTargetArn":"` + dlqARN + `","maxReceiveCount":5}`}},
		started: make(chan struct{}), release: make(chan struct{}),
	}
	m := newMover(t, f)
	first := make(chan []error, 1)
	go func() {
		first <- m.MoveToDeadLetter(context.Background(), []batch.DeadLetterMove{move("a", srcARN, nil)})
	}()
	<-f.started
	ctx, cancel := context.WithTimeout(context.Background(), 50*time.Millisecond)
	defer cancel()
	errs := m.MoveToDeadLetter(ctx, []batch.DeadLetterMove{move("b", srcARN, nil)})
	var me *sqsdlq.MoveError
	if len(errs) != 1 || !errors.As(errs[0], &me) || me.Step != "lookup" || !errors.Is(errs[0], context.DeadlineExceeded) {
		t.Errorf("the waiting invocation: %v, want a lookup error at its own deadline", errs)
	}
	close(f.release)
	if errs := <-first; errs != nil {
		t.Errorf("the reading invocation: %v", errs)
	}
	if len(f.deletes) != 1 || f.deletes[0] != "rh-a" {
		t.Errorf("deletes %v, want the first invocation's only", f.deletes)
	}
}
