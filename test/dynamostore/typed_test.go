package dynamostore_test

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/aws/aws-lambda-go/events"

	"github.com/sqsonce/sqsonce/middleware/idempotency"
)

type job struct {
	ID string `json:"id"`
}

// TestWrapJSONRace: instances (guards) sharing one table, each delivering
// one typed request from many goroutines at once. The run holds its claim
// until every delivery of the other instances has come back in progress;
// the deliveries of the winner's instance wait for its run in process and
// share its result. A redelivery after the run gets the stored result.
func TestWrapJSONRace(t *testing.T) {
	e := newEnv(t)
	const instances, perInstance = 3, 8
	var runs, ok, inProgress atomic.Int32
	othersBack := make(chan struct{})
	op := func(ctx context.Context, j job, m events.SQSMessage) (string, error) {
		runs.Add(1)
		select {
		case <-othersBack:
		case <-time.After(30 * time.Second):
			return "", fmt.Errorf("after 30s only %d deliveries came back in progress, want %d", inProgress.Load(), (instances-1)*perInstance)
		}
		return "done " + j.ID, nil
	}
	key := idempotency.SelectorFunc(func(j job) (idempotency.Selection, error) { return idempotency.SelectionOf("job", j.ID) })
	handlers := make([]func(context.Context, events.SQSMessage) (string, error), instances)
	for i := range handlers {
		g, err := idempotency.New(idempotency.Config{Store: e.store, Namespace: "race", Logger: slog.New(slog.DiscardHandler)})
		if err != nil {
			t.Fatal(err)
		}
		handlers[i] = idempotency.WrapJSON(g, key, op, idempotency.DisallowUnknownFields())
	}
	var wg sync.WaitGroup
	for i, h := range handlers {
		for j := range perInstance {
			wg.Go(func() {
				m := events.SQSMessage{MessageId: fmt.Sprintf("m-%d-%d", i, j), Body: `{"id":"j-1"}`}
				s, err := h(context.Background(), m)
				switch {
				case err == nil && s == "done j-1":
					ok.Add(1)
				case errors.Is(err, idempotency.ErrInProgress):
					if inProgress.Add(1) == (instances-1)*perInstance {
						close(othersBack)
					}
				default:
					t.Errorf("%s: %q, %v", m.MessageId, s, err)
				}
			})
		}
	}
	wg.Wait()
	if n := runs.Load(); n != 1 {
		t.Errorf("operation ran %d times, want once", n)
	}
	if ok.Load() != perInstance || inProgress.Load() != (instances-1)*perInstance {
		t.Errorf("%d succeeded, %d in progress; want %d (the winner's instance) and %d", ok.Load(), inProgress.Load(), perInstance, (instances-1)*perInstance)
	}
	for i, h := range handlers {
		s, err := h(t.Context(), events.SQSMessage{MessageId: fmt.Sprintf("late-%d", i), Body: `{"id":"j-1"}`})
		if err != nil || s != "done j-1" {
			t.Errorf("redelivery to instance %d: %q, %v; want the stored result", i, s, err)
		}
	}
	if n := runs.Load(); n != 1 {
		t.Errorf("operation ran %d times after the redeliveries, want once", n)
	}
}
