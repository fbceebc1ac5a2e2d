package batch

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"runtime"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/aws/aws-lambda-go/events"
)

const (
	kinesisARN = "arn:aws:kinesis:eu-west-1:123456789012:stream/orders"
	tableARN   = "arn:aws:dynamodb:eu-west-1:123456789012:table/orders/stream/2026-01-01T00:00:00.000"
	otherTable = "arn:aws:dynamodb:eu-west-1:123456789012:table/other/stream/2026-01-01T00:00:00.000"
)

// kin is a Kinesis record: sequence number seq, partition key pk, data.
func kin(seq, pk, data string) events.KinesisEventRecord {
	return events.KinesisEventRecord{
		EventID: "shardId-000000000000:" + seq, EventSource: "aws:kinesis", EventSourceArn: kinesisARN,
		Kinesis: events.KinesisRecord{SequenceNumber: seq, PartitionKey: pk, Data: []byte(data)},
	}
}

// ddb is a DynamoDB stream record of the item whose key is pk (and sk, if
// set) in the stream arn.
func ddb(seq, arn, pk, sk, data string) events.DynamoDBEventRecord {
	keys := map[string]events.DynamoDBAttributeValue{"pk": events.NewStringAttribute(pk)}
	if sk != "" {
		keys["sk"] = events.NewNumberAttribute(sk)
	}
	return events.DynamoDBEventRecord{
		EventID: "ev-" + seq, EventName: "MODIFY", EventSource: "aws:dynamodb", EventSourceArn: arn,
		Change: events.DynamoDBStreamRecord{SequenceNumber: seq, Keys: keys,
			NewImage: map[string]events.DynamoDBAttributeValue{"data": events.NewStringAttribute(data)}},
	}
}

func kinFailed(t *testing.T, resp events.KinesisEventResponse) []string {
	t.Helper()
	if resp.BatchItemFailures == nil {
		t.Fatal("BatchItemFailures is nil; want a non-nil slice")
	}
	var ids []string
	for _, f := range resp.BatchItemFailures {
		ids = append(ids, f.ItemIdentifier)
	}
	return ids
}

// TestKinesisOrderPerKey: the records of one partition key run one at a
// time in event order, whatever the concurrency; after a failure the rest
// of that key do not start, the other keys carry on; the failures are the
// sequence numbers of the failed and the not started, in event order.
func TestKinesisOrderPerKey(t *testing.T) {
	recs := []events.KinesisEventRecord{
		kin("101", "A", "ok"), kin("102", "B", "fail"), kin("103", "A", "ok"), kin("104", "C", "ok"),
		kin("105", "B", "ok"), kin("106", "A", "fail"), kin("107", "C", "ok"), kin("108", "A", "ok"),
		kin("109", "B", "ok"), kin("110", "C", "ok"),
	}
	for _, concurrency := range []int{1, 2, 3, 8} {
		t.Run(fmt.Sprint("concurrency ", concurrency), func(t *testing.T) {
			var mu sync.Mutex
			ran := map[string][]string{}
			active := map[string]int{}
			fn := func(_ context.Context, r events.KinesisEventRecord) (string, error) {
				pk := r.Kinesis.PartitionKey
				mu.Lock()
				active[pk]++
				if active[pk] > 1 {
					t.Errorf("key %s has %d records in flight", pk, active[pk])
				}
				ran[pk] = append(ran[pk], r.Kinesis.SequenceNumber)
				mu.Unlock()
				runtime.Gosched()
				mu.Lock()
				active[pk]--
				mu.Unlock()
				if string(r.Kinesis.Data) == "fail" {
					return "", errRecord
				}
				return "", nil
			}
			var notStarted []string
			opts := StreamOptions{Concurrency: concurrency, Logger: quiet(), OnRecord: func(_ context.Context, r StreamRecord, err error) {
				if errors.Is(err, ErrGroupFailed) {
					mu.Lock()
					notStarted = append(notStarted, r.SequenceNumber)
					mu.Unlock()
				}
			}}
			resp, err := Kinesis(fn, opts)(t.Context(), events.KinesisEvent{Records: recs})
			if err != nil {
				t.Fatal(err)
			}
			want := map[string][]string{"A": {"101", "103", "106"}, "B": {"102"}, "C": {"104", "107", "110"}}
			for pk, w := range want {
				if !slices.Equal(ran[pk], w) {
					t.Errorf("key %s ran %q, want %q", pk, ran[pk], w)
				}
			}
			if got, want := kinFailed(t, resp), []string{"102", "105", "106", "108", "109"}; !slices.Equal(got, want) {
				t.Errorf("failures %q, want %q", got, want)
			}
			slices.Sort(notStarted)
			if want := []string{"105", "108", "109"}; !slices.Equal(notStarted, want) {
				t.Errorf("not started %q, want %q", notStarted, want)
			}
		})
	}
}

// TestKinesisKeysInterleave shows two keys in flight at once: the first
// record of each waits until the other's has started.
func TestKinesisKeysInterleave(t *testing.T) {
	started := map[string]chan struct{}{"1": make(chan struct{}), "3": make(chan struct{})}
	other := map[string]string{"1": "3", "3": "1"}
	fn := func(_ context.Context, r events.KinesisEventRecord) (int, error) {
		seq := r.Kinesis.SequenceNumber
		if ch, ok := started[seq]; ok {
			close(ch)
			select {
			case <-started[other[seq]]:
			case <-time.After(failsafe):
				return 0, errors.New("the other key never started")
			}
		}
		return 0, nil
	}
	recs := []events.KinesisEventRecord{kin("1", "A", ""), kin("2", "A", ""), kin("3", "B", ""), kin("4", "B", "")}
	resp, err := Kinesis(fn, StreamOptions{Concurrency: 2, Logger: quiet()})(t.Context(), events.KinesisEvent{Records: recs})
	if err != nil || len(kinFailed(t, resp)) != 0 {
		t.Fatalf("%v, %v; want every record to succeed", resp, err)
	}
}

// TestDynamoDBStreamOrderPerItem: records of one item (same key attributes
// in the same stream) run in order; another item, or the same key in
// another table's stream, is another lane.
func TestDynamoDBStreamOrderPerItem(t *testing.T) {
	recs := []events.DynamoDBEventRecord{
		ddb("1", tableARN, "u1", "1", "fail"),
		ddb("2", tableARN, "u1", "2", "ok"), // another item: sort key differs
		ddb("3", tableARN, "u1", "1", "ok"), // after its item failed
		ddb("4", otherTable, "u1", "1", "ok"),
		ddb("5", tableARN, "u2", "", "ok"),
	}
	var mu sync.Mutex
	var ran []string
	fn := func(_ context.Context, r events.DynamoDBEventRecord) (struct{}, error) {
		mu.Lock()
		ran = append(ran, r.Change.SequenceNumber)
		mu.Unlock()
		if r.Change.NewImage["data"].String() == "fail" {
			return struct{}{}, errRecord
		}
		return struct{}{}, nil
	}
	var keys []string
	opts := StreamOptions{Logger: quiet(), OnRecord: func(_ context.Context, r StreamRecord, err error) {
		mu.Lock()
		defer mu.Unlock()
		if r.SequenceNumber == "1" {
			keys = append(keys, r.Key, r.EventID, r.EventSourceARN)
		}
	}}
	resp, err := DynamoDBStream(fn, opts)(t.Context(), events.DynamoDBEvent{Records: recs})
	if err != nil {
		t.Fatal(err)
	}
	var failed []string
	for _, f := range resp.BatchItemFailures {
		failed = append(failed, f.ItemIdentifier)
	}
	if want := []string{"1", "3"}; !slices.Equal(failed, want) {
		t.Errorf("failures %q, want %q", failed, want)
	}
	slices.Sort(ran)
	if want := []string{"1", "2", "4", "5"}; !slices.Equal(ran, want) {
		t.Errorf("ran %q, want %q", ran, want)
	}
	if want := []string{`{"pk":{"S":"u1"},"sk":{"N":"1"}}`, "ev-1", tableARN}; !slices.Equal(keys, want) {
		t.Errorf("OnRecord saw %q, want %q", keys, want)
	}
}

// TestStreamFullBatchFailure: every record failed (or not started) returns
// a *FullBatchFailureError with the response; NoFullBatchError turns it
// off; an empty event encodes as an empty list.
func TestStreamFullBatchFailure(t *testing.T) {
	fail := func(context.Context, events.KinesisEventRecord) (int, error) { return 0, errRecord }
	recs := []events.KinesisEventRecord{kin("1", "A", ""), kin("2", "A", ""), kin("3", "B", "")}
	resp, err := Kinesis(fail, StreamOptions{Logger: quiet()})(t.Context(), events.KinesisEvent{Records: recs})
	var full *FullBatchFailureError
	if !errors.As(err, &full) || len(full.Errs) != 3 || !errors.Is(err, ErrGroupFailed) || len(kinFailed(t, resp)) != 3 {
		t.Errorf("%v, %v; want every record listed and a FullBatchFailureError", resp, err)
	}
	resp, err = Kinesis(fail, StreamOptions{Logger: quiet(), NoFullBatchError: true})(t.Context(), events.KinesisEvent{Records: recs})
	if err != nil || len(kinFailed(t, resp)) != 3 {
		t.Errorf("NoFullBatchError: %v, %v", resp, err)
	}
	resp, err = Kinesis(fail, StreamOptions{})(t.Context(), events.KinesisEvent{})
	b, _ := json.Marshal(resp)
	if err != nil || string(b) != `{"batchItemFailures":[]}` {
		t.Errorf("empty event: %s, %v", b, err)
	}
}

// TestStreamDeadlineAndLogs: a record not started for lack of time is a
// failure, and the log names records by sequence number and event id,
// never by their data.
func TestStreamDeadlineAndLogs(t *testing.T) {
	var buf bytes.Buffer
	ctx, cancel := context.WithTimeout(t.Context(), 5*time.Second)
	defer cancel()
	fn := func(context.Context, events.KinesisEventRecord) (int, error) { return 0, nil }
	recs := []events.KinesisEventRecord{kin("1", "A", "secret card 4111"), kin("2", "B", "secret card 4111")}
	opts := StreamOptions{MinRemaining: time.Minute, Logger: slog.New(slog.NewJSONHandler(&buf, nil))}
	resp, err := Kinesis(fn, opts)(ctx, events.KinesisEvent{Records: recs})
	if !errors.As(err, new(*FullBatchFailureError)) || !slices.Equal(kinFailed(t, resp), []string{"1", "2"}) {
		t.Errorf("%v, %v; want both not started", resp, err)
	}
	if strings.Contains(buf.String(), "secret") {
		t.Errorf("the log quotes a record's data:\n%s", buf.String())
	}
	for _, l := range logLines(t, &buf) {
		if l["msg"] != "batch: record not started" || l["sequenceNumber"] == nil || l["eventID"] == nil {
			t.Errorf("log line %v, want a WARN naming the record by sequence number and event id", l)
		}
		if l["min_remaining"] != "1m0s" || l["left"] == nil || l["window"] == nil {
			t.Errorf("log line %v, want the time left, the window and the threshold 1m0s", l)
		}
	}
}

func TestStreamOptionsValidate(t *testing.T) {
	err := StreamOptions{Concurrency: -1, MinRemaining: -1, Reserve: -1}.Validate()
	for _, want := range []string{"StreamOptions.Concurrency", "StreamOptions.MinRemaining", "StreamOptions.Reserve"} {
		if err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("Validate = %v, want it to name %s", err, want)
		}
	}
	if p := recoverFrom(func() { Kinesis[int](nil, StreamOptions{}) }); p == nil {
		t.Error("Kinesis(nil) did not panic")
	}
	if p := recoverFrom(func() {
		DynamoDBStream(func(context.Context, events.DynamoDBEventRecord) (int, error) { return 0, nil }, StreamOptions{Reserve: -1})
	}); p == nil {
		t.Error("DynamoDBStream with invalid options did not panic")
	}
}
