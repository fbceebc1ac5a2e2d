package batch

import (
	"context"
	"slices"
	"testing"
	"time"

	"github.com/aws/aws-lambda-go/events"
)

// nilRetryErr is an error type whose RetryAt dereferences its receiver:
// a typed nil of it panics there.
type nilRetryErr struct{ at time.Time }

func (e *nilRetryErr) Error() string      { return "retry later" }
func (e *nilRetryErr) RetryAt() time.Time { return e.at }

// TestPacingHostileRetryAt: a record whose error panics in its RetryAt
// method does not take the handler down with pacing on, as it does not
// without it: its message backs off as any other failure. Before, the
// panic escaped the handler and failed the whole batch, the records that
// succeeded included, at every delivery.
func TestPacingHostileRetryAt(t *testing.T) {
	fn := func(_ context.Context, m events.SQSMessage) (string, error) {
		if m.MessageId == "hostile" {
			return "", (*nilRetryErr)(nil)
		}
		return "", nil
	}
	ch := &fakeChanger{}
	var resp events.SQSEventResponse
	var err error
	func() {
		defer func() {
			if v := recover(); v != nil {
				t.Fatalf("the handler panicked: %v", v)
			}
		}()
		resp, err = SQS(fn, Options{Logger: quiet(), Pacing: Pacing{Changer: ch, Base: time.Second, Cap: time.Second, Jitter: 1e-9}})(t.Context(), events.SQSEvent{Records: []events.SQSMessage{std("ok", ""), withCount(std("hostile", ""), "1")}})
	}()
	if err != nil {
		t.Fatal(err)
	}
	if got, want := failedIDs(t, resp), []string{"hostile"}; !slices.Equal(got, want) {
		t.Errorf("failed = %q, want %q", got, want)
	}
	changes := ch.only(t)
	if len(changes) != 1 || changes[0].MessageID != "hostile" || changes[0].Timeout < time.Second-time.Millisecond || changes[0].Timeout > time.Second {
		t.Errorf("changes %+v, want hostile's backoff of 1s", changes)
	}
}
