package streams

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"maps"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"

	"github.com/aws/aws-lambda-go/events"

	"github.com/sqsonce/sqsonce/middleware/batch"
	"github.com/sqsonce/sqsonce/middleware/idempotency"
	"github.com/sqsonce/sqsonce/middleware/idempotency/jmespath"
	"github.com/sqsonce/sqsonce/middleware/idempotency/memstore"
)

// eventsPage is the manual's page that gives the DynamoDB Streams key.
var eventsPage = filepath.Join("..", "..", "docs", "events.md")

// docRecipe returns the DynamoDB Streams key expression that docs/events.md
// gives, the JMESPath of the jmespath.MustCompile(...) of its Streams
// section that reads dynamodb, and the event names its filter criteria
// {"eventName": [...]} keep ("" when the page shows none).
func docRecipe(t *testing.T) (expr string, keep []string) {
	t.Helper()
	b, err := os.ReadFile(eventsPage)
	if err != nil {
		t.Fatal(err)
	}
	_, section, ok := strings.Cut(string(b), "\n## Streams\n")
	if !ok {
		t.Fatal("docs/events.md has no Streams section")
	}
	var exprs []string
	for _, m := range regexp.MustCompile(`jmespath\.MustCompile\(("(?:[^"\\]|\\.)*")\)`).FindAllStringSubmatch(section, -1) {
		e, err := strconv.Unquote(m[1])
		if err != nil {
			t.Fatalf("%s: %v", m[1], err)
		}
		if strings.Contains(e, "dynamodb") {
			exprs = append(exprs, e)
		}
	}
	if len(exprs) != 1 {
		t.Fatalf("the Streams section of docs/events.md gives %d DynamoDB key expressions %q, want 1", len(exprs), exprs)
	}
	if m := regexp.MustCompile(`\{"eventName": ?\[[^\]]*\]\}`).FindString(section); m != "" {
		var f struct{ EventName []string }
		if err := json.Unmarshal([]byte(m), &f); err != nil {
			t.Fatalf("the page's filter criteria %s: %v", m, err)
		}
		keep = f.EventName
	}
	return exprs[0], keep
}

// dynamoRecord is a record of the item customer-c of the fixture's table,
// with the change ids of its images ("" for no image).
func dynamoRecord(seq int, name, oldChange, newChange string) events.DynamoDBEventRecord {
	keys := map[string]events.DynamoDBAttributeValue{"pk": events.NewStringAttribute("customer-c"), "sk": events.NewNumberAttribute("1")}
	image := func(change string) map[string]events.DynamoDBAttributeValue {
		if change == "" {
			return nil
		}
		img := map[string]events.DynamoDBAttributeValue{"change_id": events.NewStringAttribute(change)}
		for k, v := range keys {
			img[k] = v
		}
		return img
	}
	return events.DynamoDBEventRecord{
		EventID: fmt.Sprintf("c0ffee%026d", seq), EventName: name, EventVersion: "1.1", EventSource: "aws:dynamodb",
		AWSRegion: "us-east-1", EventSourceArn: "arn:aws:dynamodb:us-east-1:123456789012:table/orders/stream/2026-01-01T00:00:00.000",
		Change: events.DynamoDBStreamRecord{SequenceNumber: fmt.Sprintf("41000000000000000%05d", seq), Keys: keys,
			OldImage: image(oldChange), NewImage: image(newChange), StreamViewType: "NEW_AND_OLD_IMAGES"},
	}
}

// recipeEvent is the fixture events/streams/dynamodb.json (INSERT, MODIFY
// and REMOVE records) and the life of one more item, each image carrying
// the change id of its write: its INSERT, a MODIFY, and its expiry by TTL,
// a REMOVE whose old image is the MODIFY's new one.
func recipeEvent(t *testing.T) events.DynamoDBEvent {
	t.Helper()
	b, err := os.ReadFile(filepath.Join("..", "..", "events", "streams", "dynamodb.json"))
	if err != nil {
		t.Fatal(err)
	}
	var ev events.DynamoDBEvent
	if err := json.Unmarshal(b, &ev); err != nil {
		t.Fatal(err)
	}
	ttl := dynamoRecord(203, "REMOVE", "change-302", "")
	ttl.UserIdentity = &events.DynamoDBUserIdentity{Type: "Service", PrincipalID: "dynamodb.amazonaws.com"}
	ev.Records = append(ev.Records,
		dynamoRecord(201, "INSERT", "", "change-301"), dynamoRecord(202, "MODIFY", "change-301", "change-302"), ttl)
	names := map[string]bool{}
	for _, r := range ev.Records {
		names[r.EventName] = true
	}
	if !names["INSERT"] || !names["MODIFY"] || !names["REMOVE"] {
		t.Fatalf("the event's records are %v, want INSERT, MODIFY and REMOVE", names)
	}
	return ev
}

// recipeHandler is batch.DynamoDBStream around work made idempotent with
// the key expr, and the calls of the work per sequence number.
func recipeHandler(t *testing.T, expr string, format idempotency.Format) (func(context.Context, events.DynamoDBEvent) (events.DynamoDBEventResponse, error), func() map[string]int, func() map[string]error) {
	t.Helper()
	g, err := idempotency.New(idempotency.Config{Store: memstore.New(), Namespace: "recipe", Format: format, Logger: slog.New(slog.DiscardHandler)})
	if err != nil {
		t.Fatal(err)
	}
	var mu sync.Mutex
	calls, errs := map[string]int{}, map[string]error{}
	work := func(_ context.Context, r events.DynamoDBEventRecord) (string, error) {
		mu.Lock()
		defer mu.Unlock()
		calls[r.Change.SequenceNumber]++
		return r.EventName, nil
	}
	opts := batch.StreamOptions{Logger: slog.New(slog.DiscardHandler), OnRecord: func(_ context.Context, r batch.StreamRecord, err error) {
		mu.Lock()
		defer mu.Unlock()
		errs[r.SequenceNumber] = err
	}}
	h := batch.DynamoDBStream(idempotency.Wrap(g, jmespath.MustCompile(expr).Selector(), work), opts)
	snapshot := func() map[string]int {
		mu.Lock()
		defer mu.Unlock()
		return maps.Clone(calls)
	}
	failures := func() map[string]error {
		mu.Lock()
		defer mu.Unlock()
		out := map[string]error{}
		for k, v := range errs {
			if v != nil {
				out[k] = v
			}
		}
		return out
	}
	return h, snapshot, failures
}

func failedSeqs(resp events.DynamoDBEventResponse) []string {
	out := []string{}
	for _, f := range resp.BatchItemFailures {
		out = append(out, f.ItemIdentifier)
	}
	return out
}

// TestDocumentedDynamoDBKey runs the DynamoDB Streams key that
// docs/events.md gives, as the page gives it, on INSERT, MODIFY and REMOVE
// records (a TTL expiry among them) of a NEW_AND_OLD_IMAGES stream, in each
// record id format: no record fails; each record's work runs once, none
// taken for another's replay (a delete's key is not that of the write
// before it); and the same event again is replayed whole. On a NEW_IMAGE
// stream (a delete has no image), the page's filter criteria keep the
// deletes out, and without them each delete fails, as the page says.
func TestDocumentedDynamoDBKey(t *testing.T) {
	expr, keep := docRecipe(t)
	if _, err := jmespath.Compile(expr); err != nil {
		t.Fatalf("the documented key does not compile: %v", err)
	}
	ev := recipeEvent(t)
	for _, format := range []idempotency.Format{idempotency.FormatNative, idempotency.FormatPowertoolsPython, idempotency.FormatPowertoolsTypeScript} {
		t.Run(fmt.Sprint(format), func(t *testing.T) {
			h, calls, errs := recipeHandler(t, expr, format)
			for round := range 2 {
				resp, err := h(t.Context(), ev)
				if failed := failedSeqs(resp); err != nil || len(failed) != 0 {
					t.Fatalf("invocation %d: failures %v, error %v; want none (%v)", round+1, failed, err, errs())
				}
				c := calls()
				for _, r := range ev.Records {
					if n := c[r.Change.SequenceNumber]; n != 1 {
						t.Errorf("invocation %d: the %s record %s ran its work %d times so far, want once", round+1, r.EventName, r.Change.SequenceNumber, n)
					}
				}
			}
		})
	}

	t.Run("NEW_IMAGE", func(t *testing.T) {
		if len(keep) == 0 {
			t.Fatal(`docs/events.md shows no filter criteria {"eventName": [...]} for a stream whose deletes carry no image`)
		}
		var all, kept events.DynamoDBEvent
		for _, r := range ev.Records {
			r.Change.OldImage, r.Change.StreamViewType = nil, "NEW_IMAGE"
			all.Records = append(all.Records, r)
			if slices.Contains(keep, r.EventName) {
				kept.Records = append(kept.Records, r)
			}
		}
		h, _, _ := recipeHandler(t, expr, idempotency.FormatNative)
		resp, err := h(t.Context(), kept)
		if failed := failedSeqs(resp); err != nil || len(failed) != 0 || len(kept.Records) == len(all.Records) {
			t.Errorf("filtered: %d of %d records kept, failures %v, error %v; want the deletes filtered out and none failed", len(kept.Records), len(all.Records), failed, err)
		}
		h, _, errs := recipeHandler(t, expr, idempotency.FormatNative)
		resp, _ = h(t.Context(), all)
		failed := failedSeqs(resp)
		for _, r := range all.Records {
			if r.EventName == "REMOVE" && !errors.Is(errs()[r.Change.SequenceNumber], idempotency.ErrNoKey) {
				t.Errorf("unfiltered: the delete %s failed with %v, want no key (ErrNoKey)", r.Change.SequenceNumber, errs()[r.Change.SequenceNumber])
			}
		}
		if len(failed) == 0 {
			t.Error("unfiltered: no record failed; want each delete failed")
		}
	})
}
