package main

import (
	"context"
	"fmt"
	"os"
	"slices"
	"strings"
	"testing"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/sqs"
)

// envTranscript names a file the worked example writes its transcript to.
const envTranscript = "SQSONCE_OPS_TRANSCRIPT"

// transcript records commands and their output as an operator sees them.
type transcript struct {
	b        strings.Builder
	replacer *strings.Replacer // shortens long names
}

func (tr *transcript) run(t *testing.T, env map[string]string, code int, args ...string) result {
	t.Helper()
	r := cli(t, env, args...).want(t, code)
	quoted := make([]string, len(args))
	for i, a := range args {
		quoted[i] = a
		if strings.ContainsAny(a, ` "{}`) {
			quoted[i] = "'" + a + "'"
		}
	}
	fmt.Fprintf(&tr.b, "$ sqsonce-ops %s\n%s%s", tr.replacer.Replace(strings.Join(quoted, " ")),
		tr.replacer.Replace(r.stdout), tr.replacer.Replace(r.stderr))
	if code != exitOK {
		fmt.Fprintf(&tr.b, "(exit %d)\n", code)
	}
	tr.b.WriteString("\n")
	return r
}

// TestWorkedExample is the Operating page (docs/operating.md) run on moto: a table
// with a completed record, a claim stuck past its lease, a quarantined
// claim, and their messages in the dead-letter queue; then list, inspect,
// release, resolve and redrive. It logs the transcript, and writes it to
// $SQSONCE_OPS_TRANSCRIPT when set.
func TestWorkedExample(t *testing.T) {
	env, store, db, table := dynamoEnv(t, "orders")
	s := seed(t, store, "orders", quarantineDynamo(db, table))
	q := newQueues(t)
	q.failToDLQ(t, s.bodies[s.completed], s.bodies[s.stuck], s.bodies[s.quarantined], s.bodies[s.absent])
	tr := &transcript{replacer: strings.NewReplacer(q.dlq.URL, "$DLQ", q.source.URL, "$QUEUE",
		moto.Endpoint(t), "$MOTO", table, "orders-table")}
	fmt.Fprintf(&tr.b, "$ export SQSONCE_STORE=dynamodb SQSONCE_TABLE=orders-table SQSONCE_NAMESPACE=orders SQSONCE_PROVIDER=stub   # the reference app's function: its key\n")
	fmt.Fprintf(&tr.b, "$ export SQSONCE_DYNAMODB_ENDPOINT=$MOTO SQSONCE_SQS_ENDPOINT=$MOTO   # moto_server; leave out on AWS\n\n")

	out := tr.run(t, env, exitOK, "list").stdout
	if !strings.Contains(out, "1 past their lease, 1 quarantined") || !strings.Contains(out, s.stuck) || !strings.Contains(out, s.quarantined) {
		t.Errorf("list:\n%s", out)
	}
	out = tr.run(t, env, exitOK, "inspect", "--key", `"order-quarantined"`).stdout
	if !strings.Contains(out, "state        quarantined") || !strings.Contains(out, s.quarantinedOwner) {
		t.Errorf("inspect:\n%s", out)
	}
	// The provider shows the side effect happened: record its result.
	tr.run(t, env, exitOK, "resolve", "--id", s.quarantined, "--owner", s.quarantinedOwner, "--result", `{"summary":"sent by hand"}`, "--dry-run")
	out = tr.run(t, env, exitOK, "resolve", "--id", s.quarantined, "--owner", s.quarantinedOwner, "--result", `{"summary":"sent by hand"}`).stdout
	if !strings.Contains(out, "resolved "+s.quarantined) || !strings.Contains(out, "state        completed") {
		t.Errorf("resolve:\n%s", out)
	}
	// The stuck claim: its worker died; let the next delivery run it.
	tr.run(t, env, exitOK, "inspect", "--id", s.stuck)
	tr.run(t, env, exitFailed, "release", "--id", s.stuck, "--owner", "a-stale-owner")
	out = tr.run(t, env, exitOK, "release", "--id", s.stuck, "--owner", s.stuckOwner).stdout
	if !strings.Contains(out, "released "+s.stuck) || !strings.Contains(out, "state        released") {
		t.Errorf("release:\n%s", out)
	}
	tr.run(t, env, exitOK, "list")
	// The dead-letter queue: check, then move back.
	out = tr.run(t, env, exitOK, "redrive", "--dlq", q.dlq.URL, "--queue", q.source.URL, "--rate", "20/s", "--dry-run").stdout
	if !strings.Contains(out, "   2 will replay") || !strings.Contains(out, "   2 will run") || !strings.Contains(out, "dry run: would send all 4") {
		t.Errorf("redrive --dry-run:\n%s", out)
	}
	out = tr.run(t, env, exitOK, "redrive", "--dlq", q.dlq.URL, "--queue", q.source.URL, "--rate", "20/s").stdout
	if !strings.Contains(out, "4 sent and deleted, 0 not sent") {
		t.Errorf("redrive:\n%s", out)
	}
	var bodies []string
	for _, m := range q.drain(t, q.source.URL) {
		bodies = append(bodies, aws.ToString(m.Body))
	}
	want := []string{s.bodies[s.completed], s.bodies[s.stuck], s.bodies[s.quarantined], s.bodies[s.absent]}
	slices.Sort(bodies)
	slices.Sort(want)
	if !slices.Equal(bodies, want) {
		t.Errorf("the queue got %q, want %q", bodies, want)
	}
	if n := q.count(t, q.dlq.URL); n != 0 {
		t.Errorf("the dead-letter queue holds %d", n)
	}
	_, _ = q.client.PurgeQueue(context.Background(), &sqs.PurgeQueueInput{QueueUrl: aws.String(q.dlq.URL)})

	t.Logf("transcript:\n%s", tr.b.String())
	if path := os.Getenv(envTranscript); path != "" {
		if err := os.WriteFile(path, []byte(tr.b.String()), 0o644); err != nil {
			t.Error(err)
		}
	}
}
