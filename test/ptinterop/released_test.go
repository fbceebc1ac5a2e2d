package ptinterop_test

import (
	"context"
	"crypto/rand"
	"errors"
	"log/slog"
	"sync/atomic"
	"testing"
	"time"

	"github.com/aws/aws-lambda-go/events"
	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	ptinterop "github.com/sqsonce/sqsonce/internal/testenv/powertools"
	"github.com/sqsonce/sqsonce/middleware/idempotency"
	"github.com/sqsonce/sqsonce/middleware/idempotency/jmespath"
)

// startSlowPowertools runs msg through Powertools in the background with a
// lease of remainingMs and a model of modelMs, and returns once its claim
// is in the table.
func startSlowPowertools(t *testing.T, tb table, msg events.SQSMessage, remainingMs int64, modelMs int) <-chan ptinterop.Report {
	t.Helper()
	done := make(chan ptinterop.Report, 1)
	go func() {
		ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
		defer cancel()
		req := ptinterop.Request{
			Endpoint: tb.endpoint, Table: tb.name, KeyPrefix: keyPrefix, EventKeyJMESPath: keyJMESPath,
			RemainingMs: remainingMs, ModelMs: modelMs, Events: []events.SQSEvent{{Records: []events.SQSMessage{msg}}},
		}
		tb.layout.request(&req)
		rep, err := ptinterop.Run(ctx, driverDir, req)
		if err != nil {
			t.Error(err)
		}
		done <- rep
	}()
	k, err := jmespath.MustCompile(keyJMESPath).Select(msg)
	if err != nil {
		t.Fatal(err)
	}
	id := recordID(t, tb, string(k.Value[1:len(k.Value)-1]))
	for deadline := time.Now().Add(time.Minute); rawStatus(t, tb, id) != "INPROGRESS"; time.Sleep(20 * time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatal("no Powertools claim within a minute")
		}
	}
	return done
}

// rawStatus is the status attribute of record id as stored.
func rawStatus(t *testing.T, tb table, id string) string {
	t.Helper()
	out, err := tb.db.GetItem(context.Background(), &dynamodb.GetItemInput{
		TableName: aws.String(tb.name), Key: tb.layout.key(id), ConsistentRead: aws.Bool(true),
	})
	if err != nil {
		t.Fatal(err)
	}
	st, _ := out.Item["status"].(*types.AttributeValueMemberS)
	if st == nil {
		return ""
	}
	return st.Value
}

// TestCompletedAfterRelease: a Powertools worker that outlived its lease
// completes a key whose claim sqsonce released meanwhile (a default guard
// took it over and its operation failed; or sqsonce-ops release). Its
// completion, an UpdateItem that removes nothing, leaves the release mark
// on the COMPLETED record: every reader, a strict guard included, replays
// Powertools' result and sqsonce-ops inspects it. Before, a strict claim
// took the COMPLETED record for a released claim and ran the operation
// again. Both layouts.
func TestCompletedAfterRelease(t *testing.T) {
	for _, c := range []struct {
		name     string
		l        layout
		operator bool // released by sqsonce-ops (ReleaseInspected), not by a failed takeover
	}{{"id, takeover", layout{}, false}, {"sort key, takeover", sortKeyLayout, false}, {"id, operator", layout{}, true}} {
		t.Run(c.name, func(t *testing.T) {
			tb := newLayoutTable(t, c.l)
			key := "k-" + rand.Text()
			slow := message(key, nil, `"powertools"`)
			done := startSlowPowertools(t, tb, slow, 1, 3000)
			k, err := jmespath.MustCompile(keyJMESPath).Select(slow)
			if err != nil {
				t.Fatal(err)
			}
			id := recordID(t, tb, key)
			if c.operator {
				found, err := tb.store.Inspect(context.Background(), id)
				if err != nil {
					t.Fatal(err)
				}
				if err := tb.store.ReleaseInspected(context.Background(), found.Record); err != nil {
					t.Fatalf("operator release: %v", err)
				}
			} else {
				g, err := idempotency.New(idempotency.Config{Store: tb.store, Namespace: keyPrefix,
					Format: idempotency.FormatPowertoolsTypeScript, Logger: slog.New(slog.DiscardHandler),
					Now: func() time.Time { return time.Now().Add(time.Second) }})
				if err != nil {
					t.Fatal(err)
				}
				boom := errors.New("provider error")
				if _, err := idempotency.Do(context.Background(), g, k, func(context.Context) (string, error) { return "", boom }); !errors.Is(err, boom) {
					t.Fatalf("sqsonce's takeover: %v, want the operation's error", err)
				}
			}
			if rep := <-done; rep.Events[0].Records[0].Status != "success" {
				t.Fatalf("powertools: %+v", rep)
			}
			if _, err := tb.store.Inspect(context.Background(), id); err != nil {
				t.Errorf("inspect of the COMPLETED record: %v", err)
			}
			d := newSqsonce(t, tb)
			m := message(key, nil, `"default ran"`)
			d.run(t, m)
			if d.didRun(m.MessageId) || !sameJSON(t, d.result(m.MessageId).val, `"powertools"`) {
				t.Errorf("default guard: ran %v, result %#v (%v); want Powertools' result", d.didRun(m.MessageId), d.result(m.MessageId).val, d.result(m.MessageId).err)
			}
			var runs atomic.Int32
			sg, err := idempotency.New(idempotency.Config{Store: tb.store, Namespace: keyPrefix,
				Format: idempotency.FormatPowertoolsTypeScript, Strict: true, Logger: slog.New(slog.DiscardHandler)})
			if err != nil {
				t.Fatal(err)
			}
			got, err := idempotency.Do(context.Background(), sg, k, func(context.Context) (string, error) { runs.Add(1); return "strict ran", nil })
			if runs.Load() != 0 || got != "powertools" {
				t.Errorf("strict guard on the COMPLETED record: ran %d times, result %q (%v); want Powertools' result, nothing run", runs.Load(), got, err)
			}
		})
	}
}

// TestPowertoolsCompletesUnderOurClaim: a Powertools worker that outlived
// its lease completes the key while sqsonce, which took the claim over,
// still runs it. Powertools' completion leaves sqsonce's lease owner on the
// record; sqsonce's completion, refused by its fence, must not take that
// record for its own earlier attempt: the operation ran twice, and the
// outcome says so (double_run: its ERROR line, metric and alarm).
func TestPowertoolsCompletesUnderOurClaim(t *testing.T) {
	tb := newTable(t)
	key := "k-" + rand.Text()
	slow := message(key, nil, `"powertools"`)
	done := startSlowPowertools(t, tb, slow, 1, 2500)
	s := newSqsonce(t, tb, withClock(time.Second))
	s.block, s.started = make(chan struct{}), make(chan struct{})
	again := message(key, nil, `"sqsonce"`)
	resp := make(chan events.SQSEventResponse, 1)
	go func() { resp <- s.run(t, again) }()
	<-s.started
	if rep := <-done; rep.Events[0].Records[0].Status != "success" || len(rep.Ran) != 1 {
		t.Fatalf("powertools: %+v", rep)
	}
	close(s.block)
	<-resp
	if ev := s.outcome(again.MessageId); ev.Outcome != idempotency.OutcomeDoubleRun {
		t.Errorf("sqsonce's outcome %q, want double_run: the operation ran in Powertools and in sqsonce", ev.Outcome)
	}
	if r := s.result(again.MessageId); !sameJSON(t, r.val, `"powertools"`) {
		t.Errorf("sqsonce's call returned %#v (%v), want the stored result, Powertools'", r.val, r.err)
	}
}
