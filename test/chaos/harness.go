package chaos

import (
	"cmp"
	"context"
	"crypto/rand"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	mrand "math/rand/v2"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	dbtypes "github.com/aws/aws-sdk-go-v2/service/dynamodb/types"
	"github.com/aws/aws-sdk-go-v2/service/sqs"
	sqstypes "github.com/aws/aws-sdk-go-v2/service/sqs/types"

	"github.com/sqsonce/sqsonce/internal/testenv/powertools"
	"github.com/sqsonce/sqsonce/test/history"
)

// Env is where a run happens.
type Env struct {
	Endpoint string    // moto_server's base URL: SQS and DynamoDB
	Worker   string    // the worker binary (test/chaos/cmd/worker)
	Dir      string    // worker configs and stderr go here, the history in Dir/history
	Progress io.Writer // one line per phase; nil for none
	// Powertools is the directory of the pinned Powertools packages and
	// worker.mjs (internal/testenv/powertools/testdata, see
	// [PowertoolsDir]): needed by a profile with Powertools workers.
	Powertools string
}

func (e Env) say(format string, args ...any) {
	if e.Progress != nil {
		fmt.Fprintf(e.Progress, format+"\n", args...)
	}
}

// namespace is the guard's namespace in every run.
const namespace = "chaos"

// Run runs profile p against env and returns its accounting. The error is
// for a run that could not be carried out (a server down, a worker binary
// that does not start); what the run found wrong is in Report.Violations:
// the account's findings and the violations history.Check found in the
// run's history (Report.Verdict), which Run writes to Dir/history: one file
// per worker incarnation, the proxy's and the harness's (kills, clock
// offsets, and each key's record at the end). Every worker process is gone
// when Run returns.
func Run(ctx context.Context, env Env, p Profile) (*Report, error) {
	if err := p.validate(); err != nil {
		return nil, err
	}
	if p.Shared() {
		if err := powertools.Available(env.Powertools); err != nil {
			return nil, fmt.Errorf("chaos: profile %s: %w", p.Name, err)
		}
	}
	// The bound of the whole run: set-up, a producer slowed by a busy
	// server, the faults, the drain and the stop.
	limit := 2*p.FaultsFor + p.Drain + p.Timeout + time.Minute
	parent := ctx
	ctx, cancel := context.WithTimeout(ctx, limit)
	defer cancel()
	started := time.Now()

	cfg := awsConfig(env.Endpoint)
	q := sqs.NewFromConfig(cfg)
	db := dynamodb.NewFromConfig(cfg)
	name := "chaos-" + p.Name + "-" + strings.ToLower(rand.Text()[:8])

	if err := createTable(ctx, db, name, p.SortKey); err != nil {
		return nil, err
	}
	defer cleanup(func(ctx context.Context) error {
		_, err := db.DeleteTable(ctx, &dynamodb.DeleteTableInput{TableName: aws.String(name)})
		return err
	})
	dlqURL, dlqARN, err := createQueue(ctx, q, name+"-dlq", map[string]string{"MessageRetentionPeriod": "3600"})
	if err != nil {
		return nil, err
	}
	defer cleanup(func(ctx context.Context) error {
		_, err := q.DeleteQueue(ctx, &sqs.DeleteQueueInput{QueueUrl: aws.String(dlqURL)})
		return err
	})
	redrive, _ := json.Marshal(map[string]string{"deadLetterTargetArn": dlqARN, "maxReceiveCount": strconv.Itoa(p.MaxReceives)})
	qURL, qARN, err := createQueue(ctx, q, name, map[string]string{
		"VisibilityTimeout": strconv.Itoa(int(p.Visibility / time.Second)),
		"RedrivePolicy":     string(redrive),
	})
	if err != nil {
		return nil, err
	}
	defer cleanup(func(ctx context.Context) error {
		_, err := q.DeleteQueue(ctx, &sqs.DeleteQueueInput{QueueUrl: aws.String(qURL)})
		return err
	})

	histDir := filepath.Join(env.Dir, "history")
	if err := os.MkdirAll(histDir, 0o755); err != nil {
		return nil, fmt.Errorf("chaos: %w", err)
	}
	hdr := history.Header{Run: name, Seed: p.Seed, Profile: p.Name, SkewMargin: int64(p.SkewMargin), Replay: p.replay(), LeaseExtension: p.KeepAlive}
	harness, err := createHistory(histDir, hdr, "harness")
	if err != nil {
		return nil, err
	}
	defer harness.Close()
	pxHist, err := createHistory(histDir, hdr, "proxy")
	if err != nil {
		return nil, err
	}
	defer pxHist.Close()

	px := newProxy(env.Endpoint, p.Store, p.Seed)
	px.hist = pxHist
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return nil, fmt.Errorf("chaos: proxy: %w", err)
	}
	srv := &http.Server{Handler: px, ReadHeaderTimeout: 10 * time.Second}
	go func() { _ = srv.Serve(ln) }() // returns when srv is closed
	defer srv.Close()

	faultsUntil := time.Now().Add(p.FaultsFor)
	fl := newFleet(env.Worker, env.Dir, WorkerConfig{
		SQSEndpoint:    env.Endpoint,
		DynamoEndpoint: "http://" + ln.Addr().String(),
		QueueURL:       qURL,
		QueueARN:       qARN,
		Table:          name,
		Namespace:      namespace,
		Seed:           p.Seed,
		Timeout:        p.Timeout,
		NoDeadline:     p.NoDeadline,
		Lease:          p.Lease,
		KeepAlive:      p.KeepAlive,
		MinRemaining:   p.MinRemaining,
		BatchSize:      p.BatchSize,
		OpMin:          p.OpMin, OpMax: p.OpMax,
		SlowProb: p.SlowProb, SlowMin: p.SlowMin, SlowMax: p.SlowMax,
		FaultsUntil: faultsUntil,
		ShortProb:   p.ShortProb, ShortMin: p.ShortMin, ShortMax: p.ShortMax,
		KillAfterOpProb: p.KillAfterOpProb,
		SkewMargin:      p.SkewMargin,
		Pacing:          p.Pacing,
		SortKey:         p.SortKey,
		Shared:          p.Shared(),
		Powertools:      env.Powertools,
		PeerFaults:      p.PeerFaults,
		History:         histDir,
		Header:          hdr,
		MaxLife:         limit,
		Invocations:     p.Invocations,
	}, p, harness)
	fl.start(ctx)
	stopped := false
	defer func() {
		if !stopped {
			_, _ = fl.stop(5 * time.Second)
		}
	}()
	env.say("chaos %s: %d keys, %d workers, %d invocations at once per worker, pacing %v, seed %d, history in %s", p.Name, p.Keys, p.Workers, max(p.Invocations, 1), p.Pacing, p.Seed, histDir)

	sentc := make(chan []sent, 1)
	errc := make(chan error, 1)
	go func() {
		s, err := produce(ctx, q, qURL, p)
		sentc <- s
		errc <- err
	}()
	killer(ctx, fl, p, faultsUntil)
	px.on.Store(false)
	sends := <-sentc
	if err := <-errc; err != nil {
		return nil, err
	}
	env.say("chaos %s: faults off after %v; draining", p.Name, time.Since(started).Round(time.Millisecond))

	left, err := drain(ctx, q, qURL, p.Drain)
	if err != nil {
		return nil, err
	}
	incs, ferr := fl.stop(p.Timeout + 5*time.Second)
	stopped = true
	if ferr != nil {
		return nil, ferr
	}
	env.say("chaos %s: drained after %v (%d messages left); accounting", p.Name, time.Since(started).Round(time.Millisecond), left)

	// The account reads the end state under its own bound, so that a run
	// that used its time still gets one.
	ctx, cancel = context.WithTimeout(parent, time.Minute)
	defer cancel()
	logs, err := readLogs(histDir, incs)
	if err != nil {
		return nil, err
	}
	records, err := scanTable(ctx, db, name, p.SortKey)
	if err != nil {
		return nil, err
	}
	px.hist = nil
	if err := pxHist.Close(); err != nil {
		return nil, fmt.Errorf("chaos: %w", err)
	}
	if err := writeFinals(harness, p, sends, records); err != nil {
		return nil, err
	}
	if err := harness.Close(); err != nil {
		return nil, fmt.Errorf("chaos: %w", err)
	}
	h, err := readHistory(histDir)
	if err != nil {
		return nil, err
	}
	verdict := history.Check(h)
	dlq, err := receiveAll(ctx, q, dlqURL)
	if err != nil {
		return nil, err
	}
	faults, requests := px.stats()
	r, err := account(p, sends, incs, logs, records, dlq, left)
	if err != nil {
		return nil, err
	}
	r.StoreFaults, r.StoreRequests = faults, requests
	readers := procReaders(h)
	r.RunsBy, r.AcksBy = map[history.Reader]int{}, map[history.Reader]int{}
	for _, e := range h.Events {
		switch e.Ev {
		case history.KindOpStart:
			r.RunsBy[readers[e.Proc]]++
		case history.KindAck:
			r.AcksBy[readers[e.Proc]]++
		}
	}
	r.judge(verdict, readers)
	r.Wall = time.Since(started)
	return r, nil
}

// readHistory reads and merges the run's history files. An empty file is
// an incarnation killed between creating its file and writing its header:
// it recorded nothing.
func readHistory(dir string) (*history.History, error) {
	names, err := filepath.Glob(filepath.Join(dir, "*.jsonl"))
	if err != nil {
		return nil, fmt.Errorf("chaos: %w", err)
	}
	var files []history.File
	for _, name := range names {
		if st, err := os.Stat(name); err == nil && st.Size() == 0 {
			continue
		}
		f, err := history.ReadFile(name)
		if err != nil {
			return nil, fmt.Errorf("chaos: %w", err)
		}
		files = append(files, f)
	}
	return history.Merge(files...)
}

// procReaders returns the kind of worker each process of h is, from its
// proc event; a Powertools worker's node process is its worker's kind.
func procReaders(h *history.History) map[string]history.Reader {
	out := map[string]history.Reader{}
	for _, e := range h.Events {
		if e.Ev == history.KindProc {
			out[e.Proc] = e.Reader
		}
	}
	for _, p := range h.Procs {
		if w, ok := strings.CutSuffix(p, "-node"); ok {
			out[p] = out[w]
		}
	}
	return out
}

// createHistory creates the history file of the harness's process proc.
func createHistory(dir string, hdr history.Header, proc string) (*history.Writer, error) {
	hdr.Proc = proc
	w, err := history.Create(filepath.Join(dir, proc+".jsonl"), hdr, history.WriterOptions{})
	if err != nil {
		return nil, fmt.Errorf("chaos: %w", err)
	}
	return w, nil
}

// writeFinals records every key's record as the table holds it after the
// run.
func writeFinals(w *history.Writer, p Profile, sends []sent, records map[string]storedRecord) error {
	final, err := finalRecords(p, sends, records)
	if err != nil {
		return err
	}
	keys := make([]string, 0, len(final))
	for k := range final {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	es := make([]history.Event, 0, len(keys))
	for _, k := range keys {
		rec := final[k]
		es = append(es, history.Event{Ev: history.KindFinal, Key: k, Status: rec.Status, Result: rec.Run, Owner: rec.Owner, Quarantined: rec.Quarantined})
	}
	if err := w.Write(es...); err != nil {
		return fmt.Errorf("chaos: %w", err)
	}
	return nil
}

// cleanup runs a best-effort delete under its own bound: a failure leaves a
// table or queue behind on the test's own server.
func cleanup(del func(context.Context) error) {
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	_ = del(ctx)
}

// killer SIGKILLs a random worker every KillEvery on average until the
// faults end.
func killer(ctx context.Context, fl *fleet, p Profile, until time.Time) {
	rng := mrand.New(mrand.NewPCG(p.Seed, 0x4b11))
	for {
		wait := time.Until(until)
		if p.KillEvery > 0 {
			wait = min(wait, time.Duration(rng.ExpFloat64()*float64(p.KillEvery)))
		}
		if wait <= 0 || ctx.Err() != nil {
			return
		}
		sleepCtx(ctx, wait)
		if p.KillEvery > 0 && time.Now().Before(until) {
			fl.kill(rng.IntN(p.Workers))
		}
	}
}

// sent is one message the producer sent.
type sent struct {
	Msg  string
	Key  string
	Kind string // "first", "duplicate" (the same body again) or "resend" (the same key, attempt 2)
	At   time.Time
}

// produce sends every key once over SendOver, some a second time byte for
// byte and some again as a re-send, in a seeded order and schedule.
func produce(ctx context.Context, q *sqs.Client, url string, p Profile) ([]sent, error) {
	rng := mrand.New(mrand.NewPCG(p.Seed, 0x5e4d))
	type planned struct {
		at   time.Duration
		key  string
		kind string
		body string
	}
	var plan []planned
	for i := range p.Keys {
		key := fmt.Sprintf("k%04d", i)
		first, _ := json.Marshal(Body{Key: key, Doc: "doc-" + key, Attempt: 1})
		at := time.Duration(rng.Int64N(int64(p.SendOver) + 1))
		plan = append(plan, planned{at, key, "first", string(first)})
		if rng.Float64() < p.DuplicateProb {
			plan = append(plan, planned{at + time.Duration(rng.Int64N(int64(time.Second))), key, "duplicate", string(first)})
		}
		if rng.Float64() < p.ResendProb {
			again, _ := json.Marshal(Body{Key: key, Doc: "doc-" + key, Attempt: 2})
			after := 200*time.Millisecond + time.Duration(rng.Int64N(int64(p.ResendAfterMax)))
			plan = append(plan, planned{at + after, key, "resend", string(again)})
		}
	}
	slices.SortStableFunc(plan, func(a, b planned) int { return int(a.at - b.at) })

	start := time.Now()
	var out []sent
	for len(plan) > 0 {
		if wait := time.Until(start.Add(plan[0].at)); wait > 0 {
			sleepCtx(ctx, wait)
		}
		if ctx.Err() != nil {
			return out, fmt.Errorf("chaos: producer: %w", ctx.Err())
		}
		n := 0
		for n < len(plan) && n < 10 && plan[n].at <= time.Since(start) {
			n++
		}
		n = max(n, 1)
		batch := plan[:n]
		plan = plan[n:]
		entries := make([]sqstypes.SendMessageBatchRequestEntry, n)
		for i, m := range batch {
			entries[i] = sqstypes.SendMessageBatchRequestEntry{Id: aws.String(strconv.Itoa(i)), MessageBody: aws.String(m.body)}
		}
		res, err := q.SendMessageBatch(ctx, &sqs.SendMessageBatchInput{QueueUrl: aws.String(url), Entries: entries})
		if err != nil {
			return out, fmt.Errorf("chaos: producer: %w", err)
		}
		if len(res.Failed) > 0 {
			return out, fmt.Errorf("chaos: producer: %d sends failed: %s", len(res.Failed), aws.ToString(res.Failed[0].Message))
		}
		now := time.Now()
		for _, s := range res.Successful {
			i, _ := strconv.Atoi(aws.ToString(s.Id))
			out = append(out, sent{Msg: aws.ToString(s.MessageId), Key: batch[i].key, Kind: batch[i].kind, At: now})
		}
	}
	return out, nil
}

// drain waits until the queue holds no message, visible or in flight, for
// two polls in a row, or bound passes; it returns the messages left.
func drain(ctx context.Context, q *sqs.Client, url string, bound time.Duration) (int, error) {
	deadline := time.Now().Add(bound)
	empty := 0
	for {
		out, err := q.GetQueueAttributes(ctx, &sqs.GetQueueAttributesInput{
			QueueUrl: aws.String(url),
			AttributeNames: []sqstypes.QueueAttributeName{
				sqstypes.QueueAttributeNameApproximateNumberOfMessages,
				sqstypes.QueueAttributeNameApproximateNumberOfMessagesNotVisible,
				sqstypes.QueueAttributeNameApproximateNumberOfMessagesDelayed,
			},
		})
		if err != nil {
			return 0, fmt.Errorf("chaos: queue attributes: %w", err)
		}
		left := 0
		for _, v := range out.Attributes {
			n, _ := strconv.Atoi(v)
			left += n
		}
		if left == 0 {
			empty++
		} else {
			empty = 0
		}
		if empty >= 2 || time.Now().After(deadline) {
			return left, nil
		}
		sleepCtx(ctx, 500*time.Millisecond)
		if ctx.Err() != nil {
			return left, nil
		}
	}
}

// dlqMessage is a message found in the dead-letter queue.
type dlqMessage struct {
	Msg string
	Key string
}

// receiveAll takes every message from a queue (hiding each for a minute).
func receiveAll(ctx context.Context, q *sqs.Client, url string) ([]dlqMessage, error) {
	var out []dlqMessage
	for deadline := time.Now().Add(30 * time.Second); time.Now().Before(deadline); {
		res, err := q.ReceiveMessage(ctx, &sqs.ReceiveMessageInput{QueueUrl: aws.String(url), MaxNumberOfMessages: 10, VisibilityTimeout: 60})
		if err != nil {
			return nil, fmt.Errorf("chaos: read the DLQ: %w", err)
		}
		if len(res.Messages) == 0 {
			return out, nil
		}
		for _, m := range res.Messages {
			out = append(out, dlqMessage{Msg: aws.ToString(m.MessageId), Key: keyOf(aws.ToString(m.Body))})
		}
	}
	return nil, errors.New("chaos: the DLQ did not empty within 30s")
}

// storedRecord is an idempotency record as found at the end.
type storedRecord struct {
	Status      string
	Quarantined bool   // marked quarantined by a strict guard
	Run         string // the run whose result is stored
	Key         string
	Owner       string // the lease owner token, if any
}

// scanTable reads every record, by id (the sort key with sortKey).
func scanTable(ctx context.Context, db *dynamodb.Client, table string, sortKey bool) (map[string]storedRecord, error) {
	idAttr := "id"
	if sortKey {
		idAttr = TableKey.Sort
	}
	out := map[string]storedRecord{}
	p := dynamodb.NewScanPaginator(db, &dynamodb.ScanInput{TableName: aws.String(table), ConsistentRead: aws.Bool(true)})
	for p.HasMorePages() {
		page, err := p.NextPage(ctx)
		if err != nil {
			return nil, fmt.Errorf("chaos: scan %s: %w", table, err)
		}
		for _, item := range page.Items {
			var r storedRecord
			id := str(item[idAttr])
			r.Status = str(item["status"])
			_, r.Quarantined = item["quarantined"]
			r.Owner = str(item["lease_owner"])
			if m, ok := item["data"].(*dbtypes.AttributeValueMemberM); ok { // Powertools TS's format
				r.Run, r.Key = str(m.Value["run"]), str(m.Value["key"])
			} else if d := str(item["data"]); d != "" {
				var res Result
				if err := json.Unmarshal([]byte(d), &res); err != nil {
					return nil, fmt.Errorf("chaos: record %s: data %q: %w", id, d, err)
				}
				r.Run, r.Key = res.Run, res.Key
			}
			out[id] = r
		}
	}
	return out, nil
}

func str(v dbtypes.AttributeValue) string {
	if s, ok := v.(*dbtypes.AttributeValueMemberS); ok {
		return s.Value
	}
	return ""
}

// readLogs reads the history of every worker incarnation, as the account's
// entries: its own file, and a Powertools worker's node process's, merged.
func readLogs(dir string, incs []incarnation) (map[string][]entry, error) {
	out := make(map[string][]entry, len(incs))
	for _, inc := range incs {
		var files []history.File
		for _, name := range []string{inc.Name, inc.Name + "-node"} {
			path := filepath.Join(dir, name+".jsonl")
			if st, err := os.Stat(path); errors.Is(err, os.ErrNotExist) || (err == nil && st.Size() == 0) {
				continue // killed before it wrote its history's header
			}
			f, err := history.ReadFile(path)
			if err != nil {
				return nil, fmt.Errorf("chaos: %s: %w", name, err)
			}
			files = append(files, f)
		}
		if len(files) == 0 {
			continue
		}
		f := files[0]
		if len(files) > 1 {
			f.Events = append(slices.Clone(f.Events), files[1].Events...)
			slices.SortStableFunc(f.Events, func(a, b history.Event) int { return cmp.Compare(a.T, b.T) })
		}
		out[inc.Name] = entriesOf(f)
	}
	return out, nil
}

// TableKey is the key of the table of a run with [Profile.SortKey]: a
// single-table design's partition key and sort key, and the partition
// value of every record, as a table shared with Powertools' sortKeyAttr.
var TableKey = struct{ Partition, Sort, Value string }{"pk", "sk", "idempotency#chaos"}

func createTable(ctx context.Context, db *dynamodb.Client, name string, sortKey bool) error {
	in := &dynamodb.CreateTableInput{
		TableName:            aws.String(name),
		AttributeDefinitions: []dbtypes.AttributeDefinition{{AttributeName: aws.String("id"), AttributeType: dbtypes.ScalarAttributeTypeS}},
		KeySchema:            []dbtypes.KeySchemaElement{{AttributeName: aws.String("id"), KeyType: dbtypes.KeyTypeHash}},
		BillingMode:          dbtypes.BillingModePayPerRequest,
	}
	if sortKey {
		in.AttributeDefinitions = []dbtypes.AttributeDefinition{
			{AttributeName: aws.String(TableKey.Partition), AttributeType: dbtypes.ScalarAttributeTypeS},
			{AttributeName: aws.String(TableKey.Sort), AttributeType: dbtypes.ScalarAttributeTypeS},
		}
		in.KeySchema = []dbtypes.KeySchemaElement{
			{AttributeName: aws.String(TableKey.Partition), KeyType: dbtypes.KeyTypeHash},
			{AttributeName: aws.String(TableKey.Sort), KeyType: dbtypes.KeyTypeRange},
		}
	}
	_, err := db.CreateTable(ctx, in)
	if err != nil {
		return fmt.Errorf("chaos: create table %s: %w", name, err)
	}
	w := dynamodb.NewTableExistsWaiter(db, func(o *dynamodb.TableExistsWaiterOptions) { o.MinDelay = 50 * time.Millisecond })
	if err := w.Wait(ctx, &dynamodb.DescribeTableInput{TableName: aws.String(name)}, 30*time.Second); err != nil {
		return fmt.Errorf("chaos: wait for table %s: %w", name, err)
	}
	return nil
}

func createQueue(ctx context.Context, q *sqs.Client, name string, attrs map[string]string) (url, arn string, err error) {
	out, err := q.CreateQueue(ctx, &sqs.CreateQueueInput{QueueName: aws.String(name), Attributes: attrs})
	if err != nil {
		return "", "", fmt.Errorf("chaos: create queue %s: %w", name, err)
	}
	url = aws.ToString(out.QueueUrl)
	a, err := q.GetQueueAttributes(ctx, &sqs.GetQueueAttributesInput{QueueUrl: out.QueueUrl, AttributeNames: []sqstypes.QueueAttributeName{sqstypes.QueueAttributeNameQueueArn}})
	if err != nil {
		return "", "", fmt.Errorf("chaos: queue %s: %w", name, err)
	}
	return url, a.Attributes[string(sqstypes.QueueAttributeNameQueueArn)], nil
}
