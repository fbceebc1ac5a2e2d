package batch_test

import (
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/aws/aws-lambda-go/events"

	"github.com/sqsonce/sqsonce/internal/testenv/rie"
	"github.com/sqsonce/sqsonce/internal/testenv/testproc"
)

// TestEmulatorThreeSecondTimeout runs testdata/threeseconds, a handler
// built with batch.Options{}, under the Lambda emulator at Lambda's default
// 3 s timeout. Twenty 300 ms records (two waves of DefaultConcurrency) all
// run: the minimum remaining time follows the invocation (625 ms of a
// 2.5 s window), where the fixed 10 s of before started none. Then ten
// 2 s records run and the ten after them are reported not started, logged
// with the time left and the threshold.
func TestEmulatorThreeSecondTimeout(t *testing.T) {
	path, err := rie.Find()
	if err != nil {
		testproc.Unavailable(t, "rie", err, rie.Install)
	}
	bootstrap := filepath.Join(t.TempDir(), "bootstrap")
	cmd := exec.Command("go", "build", "-tags", "lambda.norpc", "-o", bootstrap, "./testdata/threeseconds")
	cmd.Env = append(os.Environ(), "CGO_ENABLED=0")
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("go build: %v\n%s", err, out)
	}
	fn := rie.StartTest(t, rie.Config{RIE: path, Bootstrap: bootstrap, Timeout: 3 * time.Second})
	event := func(ms ...int) events.SQSEvent {
		var ev events.SQSEvent
		for i, m := range ms {
			ev.Records = append(ev.Records, events.SQSMessage{MessageId: "m" + strconv.Itoa(i), Body: strconv.Itoa(m), EventSource: "aws:sqs"})
		}
		return ev
	}
	repeat := func(n, ms int) []int {
		out := make([]int, n)
		for i := range out {
			out[i] = ms
		}
		return out
	}

	resp, err := fn.Invoke(context.Background(), event(repeat(20, 300)...))
	if err != nil {
		t.Fatal(err)
	}
	if len(resp.BatchItemFailures) != 0 {
		t.Errorf("twenty 300 ms records at a 3 s timeout: %d failed, want none: %+v", len(resp.BatchItemFailures), resp.BatchItemFailures)
	}

	resp, err = fn.Invoke(context.Background(), event(append(repeat(10, 2000), repeat(10, 1)...)...))
	if err != nil {
		t.Fatal(err)
	}
	failed := map[string]bool{}
	for _, f := range resp.BatchItemFailures {
		failed[f.ItemIdentifier] = true
	}
	for i := range 20 {
		if id := "m" + strconv.Itoa(i); failed[id] != (i >= 10) {
			t.Errorf("record %s (%d of 20): failed %v, want %v", id, i, failed[id], i >= 10)
		}
	}
	// The function's log lines reach the emulator's output after its
	// answer: wait for them a little.
	out := fn.Output()
	for end := time.Now().Add(5 * time.Second); strings.Count(out, "batch: record not started") < 10 && time.Now().Before(end); out = fn.Output() {
		time.Sleep(50 * time.Millisecond)
	}
	if n := strings.Count(out, "batch: record not started"); n < 10 {
		t.Errorf("%d lines say a record was not started, want 10", n)
	}
	// A quarter of a window of 2.5 s less the handler's start-up.
	if !regexp.MustCompile(`left before the records' deadline, below the minimum of 62\dms \(Options.MinRemaining; the window was 2\.[45]\d*s\)`).MatchString(out) {
		t.Errorf("the not-started line does not give the threshold and the window of a 3 s timeout")
	}
}
