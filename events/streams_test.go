package events_test

import (
	"bytes"
	"encoding/json"
	"math"
	"os"
	"reflect"
	"slices"
	"strings"
	"testing"

	"github.com/aws/aws-lambda-go/events"
)

// decodeStrict decodes a fixture into v, refusing fields v lacks.
func decodeStrict(t *testing.T, name string, v any) []byte {
	t.Helper()
	b, err := os.ReadFile(name)
	if err != nil {
		t.Fatal(err)
	}
	dec := json.NewDecoder(bytes.NewReader(b))
	dec.DisallowUnknownFields()
	if err := dec.Decode(v); err != nil {
		t.Fatalf("%s: %v", name, err)
	}
	return b
}

// sameJSON compares two JSON documents, numbers within a microsecond (the
// epoch timestamps go through float64 nanoseconds).
func sameJSON(a, b any) bool {
	switch x := a.(type) {
	case map[string]any:
		y, ok := b.(map[string]any)
		if !ok || len(x) != len(y) {
			return false
		}
		for k, v := range x {
			if !sameJSON(v, y[k]) {
				return false
			}
		}
		return true
	case []any:
		y, ok := b.([]any)
		if !ok || len(x) != len(y) {
			return false
		}
		for i := range x {
			if !sameJSON(x[i], y[i]) {
				return false
			}
		}
		return true
	case float64:
		y, ok := b.(float64)
		return ok && math.Abs(x-y) < 1e-6
	}
	return reflect.DeepEqual(a, b)
}

func roundTrips(t *testing.T, raw []byte, v any) {
	t.Helper()
	again, err := json.Marshal(v)
	if err != nil {
		t.Fatal(err)
	}
	var want, got any
	if err := json.Unmarshal(raw, &want); err != nil {
		t.Fatal(err)
	}
	if err := json.Unmarshal(again, &got); err != nil {
		t.Fatal(err)
	}
	if !sameJSON(want, got) {
		t.Errorf("round trip changed the event:\n got %s\nwant %s", again, raw)
	}
}

// TestStreamFixtures checks the stream fixtures: each is an event as Lambda
// delivers it (the aws-lambda-go type takes every field, and gives it back),
// its records are of one stream in sequence order, and each record's data
// carries the fields the streams tests read.
func TestStreamFixtures(t *testing.T) {
	t.Run("streams/kinesis.json", func(t *testing.T) {
		var ev events.KinesisEvent
		raw := decodeStrict(t, "streams/kinesis.json", &ev)
		roundTrips(t, raw, ev)
		var seqs []string
		for _, r := range ev.Records {
			k := r.Kinesis
			if r.EventSource != "aws:kinesis" || r.EventName != "aws:kinesis:record" || !strings.HasPrefix(r.EventSourceArn, "arn:aws:kinesis:") ||
				r.EventID != "shardId-000000000003:"+k.SequenceNumber || k.PartitionKey == "" || r.InvokeIdentityArn == "" {
				t.Errorf("record %s lacks Kinesis fields", k.SequenceNumber)
			}
			var d struct {
				Key       string `json:"idempotency_key"`
				Sleep     *int   `json:"sleep_ms"`
				FailTimes *int   `json:"fail_times"`
			}
			if err := json.Unmarshal(k.Data, &d); err != nil || d.Key == "" || d.Sleep == nil || d.FailTimes == nil {
				t.Errorf("record %s: data %q lacks idempotency_key, sleep_ms or fail_times (%v)", k.SequenceNumber, k.Data, err)
			}
			seqs = append(seqs, k.SequenceNumber)
		}
		if !slices.IsSorted(seqs) || len(seqs) != 10 {
			t.Errorf("sequence numbers %v: want 10, in order", seqs)
		}
	})
	t.Run("streams/dynamodb.json", func(t *testing.T) {
		var ev events.DynamoDBEvent
		raw := decodeStrict(t, "streams/dynamodb.json", &ev)
		roundTrips(t, raw, ev)
		var seqs []string
		for _, r := range ev.Records {
			c := r.Change
			img := c.NewImage
			if r.EventName == "REMOVE" {
				img = c.OldImage
			}
			if r.EventSource != "aws:dynamodb" || !strings.HasPrefix(r.EventSourceArn, "arn:aws:dynamodb:") || r.EventID == "" ||
				len(c.Keys) != 2 || c.StreamViewType != "NEW_AND_OLD_IMAGES" || img == nil {
				t.Errorf("record %s lacks DynamoDB Streams fields", c.SequenceNumber)
				continue
			}
			for _, a := range []string{"change_id", "sleep_ms", "fail_times"} {
				if _, ok := img[a]; !ok {
					t.Errorf("record %s: image lacks %s", c.SequenceNumber, a)
				}
			}
			seqs = append(seqs, c.SequenceNumber)
		}
		if !slices.IsSorted(seqs) || len(seqs) != 8 {
			t.Errorf("sequence numbers %v: want 8, in order", seqs)
		}
	})
}
