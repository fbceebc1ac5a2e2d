package main

import (
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"testing"
	"time"

	"github.com/sqsonce/sqsonce/internal/testenv/esm"
	"github.com/sqsonce/sqsonce/internal/testenv/motoserver"
	"github.com/sqsonce/sqsonce/internal/testenv/powertools"
	"github.com/sqsonce/sqsonce/internal/testenv/workspace"
)

var moto = motoserver.New()

// streamEnv makes the test binary the sqsonce streamer, as -worker -stream
// makes benchpeer's.
const streamEnv = "BENCHPEER_TEST_STREAM"

func TestMain(m *testing.M) {
	serveFake() // BenchmarkFloor's fake DynamoDB, in a process of its own
	if os.Getenv(streamEnv) == "1" {
		if err := runStream(os.Stdin, os.Stdout); err != nil {
			os.Stderr.WriteString(err.Error() + "\n")
			os.Exit(1)
		}
		os.Exit(0)
	}
	os.Exit(moto.Run(m))
}

// TestAckBatch sends a batch whose five keys each come twice through a real
// queue with a 1 s visibility timeout, to each side's streamer: sqsonce
// acknowledges all ten records in one delivery; Powertools fails second
// copies (their first copy is in progress), which SQS hands back after the
// timeout, so the batch takes more than one delivery and at least the
// timeout. The elapsed time is measured, not computed: this is what the
// report's acknowledgement row shows.
func TestAckBatch(t *testing.T) {
	const (
		visibility = time.Second
		model      = 300 * time.Millisecond
	)
	driver := filepath.Join(workspace.Root(t), defaultDriver)
	nodeOK := powertools.Available(driver)
	if nodeOK != nil && os.Getenv("CI") == "true" {
		t.Fatal(nodeOK)
	}
	db := moto.DynamoDB(t)
	table := motoserver.NewTable(t, db)
	sqsc := esm.SQSClient(t, moto)
	mq := esm.NewQueue(t, sqsc, map[string]string{"VisibilityTimeout": "1"})
	q := queue{client: sqsc, url: mq.URL, arn: mq.ARN}
	req := powertools.Request{Endpoint: moto.Endpoint(t), Table: table, KeyPrefix: keyPrefix, EventKeyJMESPath: keyJMESPath,
		RemainingMs: 60_000, ModelMs: int(model / time.Millisecond)}
	run := randomText(8)

	for _, tc := range []struct {
		name    string
		cmd     func(ctx context.Context) *exec.Cmd
		redeliv bool // some records failed and came back
		atLeast time.Duration
	}{
		{"sqsonce", func(ctx context.Context) *exec.Cmd {
			c := exec.CommandContext(ctx, os.Args[0])
			c.Env = append(os.Environ(), streamEnv+"=1")
			return c
		}, false, model},
		{"Powertools TS", func(ctx context.Context) *exec.Cmd {
			dir, err := nodeStreamDir(driver)
			if err != nil {
				t.Fatal(err)
			}
			t.Cleanup(func() { _ = os.RemoveAll(dir) })
			c := exec.CommandContext(ctx, "node", "stream.mjs")
			c.Dir = dir
			c.Env = append(os.Environ(), "AWS_REGION=us-east-1", "POWERTOOLS_IDEMPOTENCY_DISABLED=false")
			return c
		}, true, visibility}, // the timer starts at the first receive
	} {
		t.Run(tc.name, func(t *testing.T) {
			if tc.name == "Powertools TS" && nodeOK != nil {
				t.Skip(nodeOK)
			}
			ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
			defer cancel()
			st, err := startStreamer(tc.cmd(ctx), req)
			if err != nil {
				t.Fatal(err)
			}
			keys := newKeys(run, 0, tc.name, 1, true)[0]
			bodies := make([]string, len(keys))
			for i, k := range keys {
				bodies[i] = body(k)
			}
			res, err := ackBatch(ctx, q, st, bodies, 30*time.Second)
			if cerr := st.close(); err == nil {
				err = cerr
			}
			if err != nil {
				t.Fatal(err)
			}
			once := res.deliveries == 1 && res.failures == 0
			again := res.deliveries > 1 && res.failures > 0
			if (tc.redeliv && !again) || (!tc.redeliv && !once) {
				t.Errorf("%d deliveries, %d failures; want a redelivery: %v", res.deliveries, res.failures, tc.redeliv)
			}
			t.Logf("%d deliveries, %d failures, all acknowledged after %v", res.deliveries, res.failures, res.elapsed)
			if res.elapsed < tc.atLeast {
				t.Errorf("all acknowledged after %v; want at least %v", res.elapsed, tc.atLeast)
			}
		})
	}
}
