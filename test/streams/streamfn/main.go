// Command streamfn is the Lambda function the streams tests run under the
// Lambda Runtime Interface Emulator: batch.Kinesis or batch.DynamoDBStream
// (STREAM_KIND=kinesis|dynamodb) around a record function that sleeps and
// fails as each record's data says, and logs every call to CALL_LOG. With
// IDEMPOTENT=on the work runs through an idempotency guard (in memory: the
// emulator keeps this process across invocations) keyed on the record's
// data.
//
// A record's data (the Kinesis data, the DynamoDB item's new image, or its
// old image for a REMOVE) carries: the idempotency key (idempotency_key for
// Kinesis, change_id for DynamoDB), sleep_ms, how long the call takes, and
// fail_times, how many of its first calls fail.
package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"strconv"
	"sync"
	"time"

	"github.com/aws/aws-lambda-go/events"
	"github.com/aws/aws-lambda-go/lambda"

	"github.com/sqsonce/sqsonce/middleware/batch"
	"github.com/sqsonce/sqsonce/middleware/idempotency"
	"github.com/sqsonce/sqsonce/middleware/idempotency/memstore"
)

// Call is one line of the call log: one call of the work for a record.
type Call struct {
	Seq   string `json:"seq"`
	Key   string `json:"key"`   // the ordering key: partition key, or item key
	Start int64  `json:"start"` // ns since the epoch
	End   int64  `json:"end"`
	OK    bool   `json:"ok"`
}

// work is what a record asks for.
type work struct {
	seq, key  string
	idem      idempotency.Selection
	sleep     time.Duration
	failTimes int
}

type function struct {
	guard    *idempotency.Guard // nil: not idempotent
	mu       sync.Mutex
	attempts map[string]int // calls per sequence number
	log      *os.File
}

func main() {
	f := &function{attempts: map[string]int{}}
	var err error
	if f.log, err = os.OpenFile(os.Getenv("CALL_LOG"), os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o644); err != nil {
		fmt.Fprintln(os.Stderr, "streamfn:", err)
		os.Exit(2)
	}
	if os.Getenv("IDEMPOTENT") == "on" {
		if f.guard, err = idempotency.New(idempotency.Config{Store: memstore.New(), Namespace: "streams"}); err != nil {
			fmt.Fprintln(os.Stderr, "streamfn:", err)
			os.Exit(2)
		}
	}
	opts := batch.StreamOptions{MinRemaining: time.Second, Logger: slog.New(slog.NewJSONHandler(os.Stderr, nil))}
	switch kind := os.Getenv("STREAM_KIND"); kind {
	case "kinesis":
		lambda.Start(batch.Kinesis(record(f, kinesisWork), opts))
	case "dynamodb":
		lambda.Start(batch.DynamoDBStream(record(f, dynamodbWork), opts))
	default:
		fmt.Fprintf(os.Stderr, "streamfn: STREAM_KIND=%q is not kinesis or dynamodb\n", kind)
		os.Exit(2)
	}
}

// kinesisKey takes the key of a Kinesis record from its data, a JSON body,
// as BodyField takes it from an SQS message's.
func kinesisKey(r events.KinesisEventRecord) (idempotency.Selection, error) {
	return idempotency.Select(idempotency.BodyField("idempotency_key"), r)
}

func kinesisWork(r events.KinesisEventRecord) (work, error) {
	var d struct {
		Sleep     int `json:"sleep_ms"`
		FailTimes int `json:"fail_times"`
	}
	if err := json.Unmarshal(r.Kinesis.Data, &d); err != nil {
		return work{}, fmt.Errorf("streamfn: record %s: data is not JSON", r.Kinesis.SequenceNumber)
	}
	k, err := kinesisKey(r)
	if err != nil {
		return work{}, err
	}
	return work{seq: r.Kinesis.SequenceNumber, key: r.Kinesis.PartitionKey, idem: k,
		sleep: time.Duration(d.Sleep) * time.Millisecond, failTimes: d.FailTimes}, nil
}

func dynamodbWork(r events.DynamoDBEventRecord) (work, error) {
	img := r.Change.NewImage
	if img == nil {
		img = r.Change.OldImage
	}
	num := func(name string) int {
		n, _ := strconv.Atoi(img[name].Number())
		return n
	}
	change, ok := img["change_id"]
	if !ok {
		return work{}, fmt.Errorf("streamfn: record %s: no change_id: %w", r.Change.SequenceNumber, idempotency.ErrNoKey)
	}
	k, err := idempotency.SelectionOf("change_id", change.String())
	if err != nil {
		return work{}, err
	}
	key, _ := json.Marshal(r.Change.Keys)
	return work{seq: r.Change.SequenceNumber, key: string(key), idem: k,
		sleep: time.Duration(num("sleep_ms")) * time.Millisecond, failTimes: num("fail_times")}, nil
}

var errAsked = errors.New("streamfn: failing, as the record asks")

// record is the record function of f for records whose work read finds:
// a record it cannot read fails permanently.
func record[R any](f *function, read func(R) (work, error)) func(context.Context, R) (struct{}, error) {
	return func(ctx context.Context, r R) (struct{}, error) {
		w, err := read(r)
		if err != nil {
			return struct{}{}, batch.Permanent(err)
		}
		return struct{}{}, f.run(ctx, w)
	}
}

// run does the work, through the guard when there is one.
func (f *function) run(ctx context.Context, w work) error {
	do := func(ctx context.Context) (int, error) { return 0, f.call(ctx, w) }
	if f.guard == nil {
		_, err := do(ctx)
		return err
	}
	_, err := idempotency.Do(ctx, f.guard, w.idem, do)
	return err
}

// call is one call of the work: it sleeps, fails while the record has
// failed fewer than fail_times times, and logs itself.
func (f *function) call(ctx context.Context, w work) error {
	start := time.Now()
	f.mu.Lock()
	f.attempts[w.seq]++
	n := f.attempts[w.seq]
	f.mu.Unlock()
	var err error
	select {
	case <-time.After(w.sleep):
	case <-ctx.Done():
		err = ctx.Err()
	}
	if err == nil && n <= w.failTimes {
		err = errAsked
	}
	line, _ := json.Marshal(Call{Seq: w.seq, Key: w.key, Start: start.UnixNano(), End: time.Now().UnixNano(), OK: err == nil})
	f.mu.Lock()
	defer f.mu.Unlock()
	if _, werr := f.log.Write(append(line, '\n')); werr != nil {
		return errors.Join(err, werr)
	}
	return err
}
