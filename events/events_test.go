// Package events_test checks the SQS event fixtures in this folder: each is
// a Lambda SQS event (the shape sam local invoke -e and the runtime emulator
// take) that round-trips through events.SQSEvent, and each shows the
// redelivery cause its name says; and the Kinesis and DynamoDB Streams
// fixtures in streams/.
package events_test

import (
	"bytes"
	"crypto/md5"
	"encoding/hex"
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"

	"github.com/aws/aws-lambda-go/events"

	"github.com/sqsonce/sqsonce/handler"
	"github.com/sqsonce/sqsonce/middleware/idempotency"
)

func load(t *testing.T, name string) events.SQSEvent {
	t.Helper()
	b, err := os.ReadFile(name)
	if err != nil {
		t.Fatal(err)
	}
	var ev events.SQSEvent
	dec := json.NewDecoder(bytes.NewReader(b))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&ev); err != nil {
		t.Fatalf("%s: %v", name, err)
	}
	return ev
}

func TestRoundTrip(t *testing.T) {
	files, err := filepath.Glob("*.json")
	if err != nil {
		t.Fatal(err)
	}
	if len(files) < 6 {
		t.Fatalf("found %d fixtures, want at least 6", len(files))
	}
	for _, name := range files {
		t.Run(name, func(t *testing.T) {
			raw, err := os.ReadFile(name)
			if err != nil {
				t.Fatal(err)
			}
			ev := load(t, name)
			if len(ev.Records) == 0 {
				t.Fatal("no records")
			}
			again, err := json.Marshal(ev)
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
			if !reflect.DeepEqual(want, got) {
				t.Errorf("round trip changed the event:\n got %s\nwant %s", again, raw)
			}
			for _, m := range ev.Records {
				sum := md5.Sum([]byte(m.Body))
				if m.MessageId == "" || m.ReceiptHandle == "" || m.EventSource != "aws:sqs" ||
					!strings.HasPrefix(m.EventSourceARN, "arn:aws:sqs:") || m.AWSRegion == "" {
					t.Errorf("record %q lacks SQS fields", m.MessageId)
				}
				if m.Md5OfBody != hex.EncodeToString(sum[:]) {
					t.Errorf("record %s: md5OfBody %s is not the body's", m.MessageId, m.Md5OfBody)
				}
				if m.Attributes["ApproximateReceiveCount"] == "" || m.Attributes["SentTimestamp"] == "" {
					t.Errorf("record %s lacks attributes", m.MessageId)
				}
			}
		})
	}
}

// keys returns each record's key as its selector and native digest (equal
// digests, equal keys), or "" and its error.
func keys(ev events.SQSEvent) ([]string, []error) {
	key := handler.Key()
	var ks []string
	var errs []error
	for _, m := range ev.Records {
		k, err := idempotency.Select(key, m)
		if err == nil {
			_, err = handler.WorkKey(m) // the payload the guard validates
		}
		var key string
		if err == nil {
			digest, _ := idempotency.FormatNative.Hash(k)
			key = k.Selector + " " + digest
		}
		ks, errs = append(ks, key), append(errs, err)
	}
	return ks, errs
}

func TestFixturesShowTheirCause(t *testing.T) {
	t.Run("duplicate-delivery.json: one message, delivered again with -repeat", func(t *testing.T) {
		ev := load(t, "duplicate-delivery.json")
		if _, errs := keys(ev); len(ev.Records) != 1 || errs[0] != nil {
			t.Errorf("%d records, key error %v", len(ev.Records), errs)
		}
	})
	t.Run("producer-resend.json: two messageIds, one producer key", func(t *testing.T) {
		ev := load(t, "producer-resend.json")
		ks, errs := keys(ev)
		if len(ev.Records) != 2 || ev.Records[0].MessageId == ev.Records[1].MessageId || ks[0] != ks[1] ||
			errs[0] != nil || errs[1] != nil || ev.Records[0].Body == ev.Records[1].Body {
			t.Errorf("keys %q, errors %v", ks, errs)
		}
		if !strings.HasPrefix(ks[0], `body ["idempotency_key"] `) {
			t.Errorf("key %s is not the producer's", ks[0])
		}
	})
	t.Run("same-key-batch.json: two records of one canonical key", func(t *testing.T) {
		ev := load(t, "same-key-batch.json")
		ks, errs := keys(ev)
		if len(ev.Records) != 2 || ks[0] != ks[1] || errs[0] != nil || errs[1] != nil {
			t.Errorf("keys %q, errors %v", ks, errs)
		}
		if strings.Contains(ev.Records[0].Body, handler.KeyField) {
			t.Error("the batch should rely on the canonical subset, not a producer key")
		}
	})
	t.Run("fifo.json: a FIFO batch of two groups", func(t *testing.T) {
		ev := load(t, "fifo.json")
		groups := map[string]int{}
		for _, m := range ev.Records {
			if !strings.HasSuffix(m.EventSourceARN, ".fifo") || m.Attributes["MessageGroupId"] == "" ||
				m.Attributes["SequenceNumber"] == "" || m.Attributes["MessageDeduplicationId"] == "" {
				t.Errorf("record %s is not a FIFO record", m.MessageId)
			}
			groups[m.Attributes["MessageGroupId"]]++
		}
		if _, errs := keys(ev); len(groups) != 2 || errors.Join(errs...) != nil {
			t.Errorf("groups %v, key errors %v", groups, errs)
		}
	})
	t.Run("malformed.json: one body is not JSON", func(t *testing.T) {
		_, errs := keys(load(t, "malformed.json"))
		if len(errs) != 2 || errs[0] != nil || errs[1] == nil || errors.Is(errs[1], idempotency.ErrNoKey) {
			t.Errorf("key errors %v, want only the second, and not ErrNoKey", errs)
		}
	})
	t.Run("missing-key.json: one body has no key", func(t *testing.T) {
		_, errs := keys(load(t, "missing-key.json"))
		if len(errs) != 2 || errs[0] != nil || !errors.Is(errs[1], idempotency.ErrNoKey) {
			t.Errorf("key errors %v, want ErrNoKey for the second only", errs)
		}
	})
	t.Run("mixed-batch.json: good records, a malformed one, a keyless one, a re-send", func(t *testing.T) {
		ev := load(t, "mixed-batch.json")
		ks, errs := keys(ev)
		if len(ev.Records) != 5 || errs[0] != nil || errs[1] == nil || errors.Is(errs[1], idempotency.ErrNoKey) ||
			errs[2] != nil || ks[2] != ks[0] || !errors.Is(errs[3], idempotency.ErrNoKey) || errs[4] != nil || ks[4] == ks[0] {
			t.Errorf("keys %q, errors %v", ks, errs)
		}
	})
	t.Run("every fixture's keys are distinct from the others'", func(t *testing.T) {
		seen := map[string]string{}
		files, _ := filepath.Glob("*.json")
		for _, name := range files {
			ks, _ := keys(load(t, name))
			for _, k := range ks {
				if k == "" {
					continue
				}
				if other, ok := seen[k]; ok && other != name {
					t.Errorf("key %s is in %s and %s", k, other, name)
				}
				seen[k] = name
			}
		}
	})
}
