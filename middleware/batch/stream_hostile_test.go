package batch

import (
	"bytes"
	"context"
	"fmt"
	"log/slog"
	"runtime/debug"
	"slices"
	"strings"
	"sync"
	"testing"

	"github.com/aws/aws-lambda-go/events"
)

// withKeys is ddb's record of the item with the key attributes keys.
func withKeys(seq string, keys map[string]events.DynamoDBAttributeValue) events.DynamoDBEventRecord {
	r := ddb(seq, tableARN, "unused", "", "ok")
	r.Change.Keys = keys
	return r
}

// streamOutcome is what a DynamoDBStream invocation did: the records the
// function ran, in order, the failures, each record's OnRecord key and
// error, the log, and the panic if the handler panicked.
type streamOutcome struct {
	ran, failed []string
	keys        map[string]string
	errs        map[string]error
	err         error
	log         string
	panicked    any
}

func runDynamoDB(t *testing.T, concurrency int, recs ...events.DynamoDBEventRecord) streamOutcome {
	t.Helper()
	var mu sync.Mutex
	out := streamOutcome{keys: map[string]string{}, errs: map[string]error{}}
	fn := func(_ context.Context, r events.DynamoDBEventRecord) (int, error) {
		mu.Lock()
		defer mu.Unlock()
		out.ran = append(out.ran, r.Change.SequenceNumber)
		return 0, nil
	}
	var buf bytes.Buffer
	opts := StreamOptions{Concurrency: concurrency, Logger: slog.New(slog.NewJSONHandler(&buf, nil)),
		OnRecord: func(_ context.Context, r StreamRecord, err error) {
			mu.Lock()
			defer mu.Unlock()
			if _, dup := out.keys[r.SequenceNumber]; dup {
				t.Errorf("OnRecord called twice for record %s", r.SequenceNumber)
			}
			out.keys[r.SequenceNumber], out.errs[r.SequenceNumber] = r.Key, err
		}}
	h := DynamoDBStream(fn, opts)
	out.panicked = recoverFrom(func() {
		resp, err := h(t.Context(), events.DynamoDBEvent{Records: recs})
		out.err = err
		if resp.BatchItemFailures == nil {
			t.Error("BatchItemFailures is nil; want a non-nil slice")
		}
		for _, f := range resp.BatchItemFailures {
			out.failed = append(out.failed, f.ItemIdentifier)
		}
	})
	out.log = buf.String()
	return out
}

// TestDynamoDBStreamUnencodableKey: a record whose key attributes hold a
// value that cannot be encoded (the zero events.DynamoDBAttributeValue,
// alone or inside a list or map) does not make the handler panic: it fails
// by its sequence number with a permanent error that quotes neither the
// key's values nor its attribute names, without running, and the other
// records run in their lanes as usual.
func TestDynamoDBStreamUnencodableKey(t *testing.T) {
	s := events.NewStringAttribute
	bad := map[string]map[string]events.DynamoDBAttributeValue{
		"zero":                         {"pk-4111": {}},
		"zero beside a good attribute": {"pk": s("secret-4111"), "sk": {}},
		"zero in a list":               {"pk": events.NewListAttribute([]events.DynamoDBAttributeValue{s("secret-4111"), {}})},
		"zero in a map":                {"pk": events.NewMapAttribute(map[string]events.DynamoDBAttributeValue{"secret-4111": {}})},
	}
	for name, keys := range bad {
		for _, concurrency := range []int{1, 4} {
			t.Run(fmt.Sprintf("%s, concurrency %d", name, concurrency), func(t *testing.T) {
				recs := []events.DynamoDBEventRecord{
					ddb("1", tableARN, "u1", "", "ok"), withKeys("2", keys), ddb("3", tableARN, "u1", "", "ok"),
					withKeys("4", keys), ddb("5", tableARN, "u2", "", "ok"),
				}
				out := runDynamoDB(t, concurrency, recs...)
				if out.panicked != nil {
					t.Fatalf("the handler panicked: %v", out.panicked)
				}
				if want := []string{"2", "4"}; !slices.Equal(out.failed, want) {
					t.Errorf("failures %q, want %q", out.failed, want)
				}
				slices.Sort(out.ran)
				if want := []string{"1", "3", "5"}; !slices.Equal(out.ran, want) {
					t.Errorf("ran %q, want %q", out.ran, want)
				}
				if out.err != nil {
					t.Errorf("the batch returned %v; want only its failed records reported", out.err)
				}
				for _, seq := range []string{"2", "4"} {
					err := out.errs[seq]
					if err == nil || NotStarted(err) || permanent(err) == nil || !strings.Contains(err.Error(), "dynamodb.Keys") {
						t.Errorf("record %s failed with %v; want a permanent error naming dynamodb.Keys", seq, err)
					}
					if out.keys[seq] != "" {
						t.Errorf("OnRecord saw key %q for record %s, want \"\"", out.keys[seq], seq)
					}
				}
				if out.keys["1"] != `{"pk":{"S":"u1"}}` {
					t.Errorf("OnRecord saw key %q for record 1", out.keys["1"])
				}
				if strings.Contains(out.log, "4111") {
					t.Errorf("the log quotes a key:\n%s", out.log)
				}
				for _, seq := range []string{"2", "4"} {
					if err := out.errs[seq]; err != nil && strings.Contains(err.Error(), "4111") {
						t.Errorf("record %s's error quotes its key: %v", seq, err)
					}
				}
			})
		}
	}
}

// TestDynamoDBStreamKeyHoldsItself: key attributes holding a list or map
// that holds itself (deeper than DynamoDB nests, and many times over) fail
// their record in bounded time and stack, instead of recursing without
// end. A smaller stack limit makes such a recursion fail the test at once.
func TestDynamoDBStreamKeyHoldsItself(t *testing.T) {
	defer debug.SetMaxStack(debug.SetMaxStack(64 << 20))
	list := make([]events.DynamoDBAttributeValue, 1)
	list[0] = events.NewListAttribute(list)
	wide := map[string]events.DynamoDBAttributeValue{}
	for _, k := range []string{"a", "b", "c", "d"} {
		wide[k] = events.NewMapAttribute(wide) // 4^33 paths to the depth limit
	}
	deep := events.NewStringAttribute("bottom")
	for range 33 { // DynamoDB nests 32 levels at most
		deep = events.NewListAttribute([]events.DynamoDBAttributeValue{deep})
	}
	for name, keys := range map[string]map[string]events.DynamoDBAttributeValue{
		"list":           {"pk": list[0]},
		"map, 4 times":   {"pk": events.NewMapAttribute(wide)},
		"nested 34 deep": {"pk": deep},
	} {
		t.Run(name, func(t *testing.T) {
			out := runDynamoDB(t, 2, ddb("1", tableARN, "u1", "", "ok"), withKeys("2", keys))
			if out.panicked != nil {
				t.Fatalf("the handler panicked: %v", out.panicked)
			}
			if !slices.Equal(out.failed, []string{"2"}) || !slices.Equal(out.ran, []string{"1"}) {
				t.Errorf("failed %q, ran %q; want record 2 failed, record 1 run", out.failed, out.ran)
			}
			if err := out.errs["2"]; permanent(err) == nil {
				t.Errorf("record 2 failed with %v, want a permanent error", err)
			}
		})
	}
}

// TestDynamoDBStreamOddKeys: key attributes that are odd but encodable (no
// attributes, null, empty values, invalid UTF-8, every type) are keys like
// any other: their records run, those of one key in order.
func TestDynamoDBStreamOddKeys(t *testing.T) {
	odd := []map[string]events.DynamoDBAttributeValue{
		nil,
		{},
		{"pk": events.NewNullAttribute()},
		{"pk": events.NewBinaryAttribute(nil)},
		{"pk": events.NewStringAttribute("")},
		{"pk": events.NewStringAttribute("\xff\xfe")},
		{"pk": events.NewListAttribute(nil)},
		{"pk": events.NewMapAttribute(nil)},
		{"pk": events.NewBooleanAttribute(true), "sk": events.NewBinarySetAttribute([][]byte{{1}}),
			"n": events.NewNumberSetAttribute([]string{"1"}), "s": events.NewStringSetAttribute(nil)},
	}
	var recs []events.DynamoDBEventRecord
	for i, keys := range odd {
		recs = append(recs, withKeys(string(rune('a'+i)), keys))
	}
	out := runDynamoDB(t, 3, recs...)
	if out.panicked != nil || len(out.failed) != 0 || len(out.ran) != len(odd) || out.err != nil {
		t.Errorf("panicked %v, failed %q, ran %q, error %v; want every record run", out.panicked, out.failed, out.ran, out.err)
	}
	if out.keys["a"] != "" || out.keys["b"] != "" || out.keys["c"] != `{"pk":{"NULL":true}}` {
		t.Errorf("OnRecord saw keys %q", out.keys)
	}
}

// TestKinesisHostileRecords: Kinesis orders by the partition key, a string
// used as it is, so no record's content can make the handler panic: the
// zero record, an empty or invalid UTF-8 partition key, no data.
func TestKinesisHostileRecords(t *testing.T) {
	recs := []events.KinesisEventRecord{{}, kin("2", "", ""), kin("3", "\xff\xfe", ""), {Kinesis: events.KinesisRecord{SequenceNumber: "4"}}}
	var mu sync.Mutex
	ran := 0
	fn := func(context.Context, events.KinesisEventRecord) (int, error) {
		mu.Lock()
		defer mu.Unlock()
		ran++
		return 0, nil
	}
	var resp events.KinesisEventResponse
	var err error
	if p := recoverFrom(func() {
		resp, err = Kinesis(fn, StreamOptions{Logger: quiet(), OnRecord: func(context.Context, StreamRecord, error) {}})(t.Context(), events.KinesisEvent{Records: recs})
	}); p != nil {
		t.Fatalf("the handler panicked: %v", p)
	}
	if err != nil || len(kinFailed(t, resp)) != 0 || ran != len(recs) {
		t.Errorf("%v, %v, %d run; want every record run", resp, err, ran)
	}
}
