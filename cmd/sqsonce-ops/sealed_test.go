package main

import (
	"context"
	"fmt"
	"log/slog"
	"strings"
	"testing"
	"time"

	"github.com/aws/aws-lambda-go/events"
	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"
	"github.com/aws/aws-sdk-go-v2/service/kms"

	"github.com/sqsonce/sqsonce/handler"
	"github.com/sqsonce/sqsonce/middleware/idempotency"
	"github.com/sqsonce/sqsonce/middleware/idempotency/driver"
	"github.com/sqsonce/sqsonce/middleware/idempotency/kmsseal"
)

// plainSealer "seals" by reversing, enough to store a result in the sealed
// form.
type plainSealer struct{}

func (plainSealer) Seal(_ context.Context, _ string, p []byte) ([]byte, error) {
	out := make([]byte, len(p))
	for i, b := range p {
		out[len(p)-1-i] = b
	}
	return out, nil
}

func (s plainSealer) Open(ctx context.Context, id string, p []byte) ([]byte, error) {
	return s.Seal(ctx, id, p)
}

// TestInspectSealed: inspect shows a sealed record's result as sealed, in
// its text and its JSON, and never its content.
func TestInspectSealed(t *testing.T) {
	env, store, _, _ := dynamoEnv(t, "orders")
	ctx := context.Background()
	id := "orders#" + strings.Repeat("a", 64)
	now := time.Now()
	rec := driver.Record{ID: id, Status: driver.StatusInProgress, ExpiresAt: now.Add(time.Hour), LeaseUntil: now.Add(time.Minute), Owner: "o"}
	if _, _, err := store.Acquire(ctx, rec, now, driver.Takeover); err != nil {
		t.Fatal(err)
	}
	data, err := driver.SealData(ctx, plainSealer{}, id, []byte(`"result-text"`))
	if err != nil {
		t.Fatal(err)
	}
	rec.Status, rec.Data = driver.StatusCompleted, data
	if _, err := store.Complete(ctx, rec); err != nil {
		t.Fatal(err)
	}
	if v := inspectJSON(t, env, exitOK, "--id", id); !v.Sealed || v.State != stateCompleted {
		t.Errorf("inspect --json: %+v, want sealed and completed", v)
	}
	text := cli(t, env, "inspect", "--id", id).want(t, exitOK).stdout
	if !strings.Contains(text, "data         sealed: ") || strings.Contains(text, "txet-tluser") {
		t.Errorf("inspect's text:\n%s", text)
	}
}

// claimLapsed writes a claim of id whose lease has lapsed, owner "o".
func claimLapsed(t *testing.T, store driver.Store, id string) {
	t.Helper()
	now := time.Now()
	rec := driver.Record{ID: id, Status: driver.StatusInProgress, ExpiresAt: now.Add(time.Hour), LeaseUntil: now.Add(-time.Minute), Owner: "o"}
	if _, _, err := store.Acquire(context.Background(), rec, now.Add(-2*time.Minute), driver.Takeover); err != nil {
		t.Fatal(err)
	}
}

// TestResolveSealed: with the function's key ($SQSONCE_SEAL_KEY, on moto's
// KMS), resolve writes the result sealed for its record id (the plaintext
// is nowhere in the item), the function's guard replays it, and inspect
// opens it; a withheld result shows as withheld.
func TestResolveSealed(t *testing.T) {
	env, store, db, table := dynamoEnv(t, "orders")
	t.Setenv("AWS_ENDPOINT_URL_KMS", moto.Endpoint(t))
	client := kms.NewFromConfig(moto.Config(t))
	key, err := client.CreateKey(t.Context(), &kms.CreateKeyInput{Description: aws.String(t.Name())})
	if err != nil {
		t.Fatalf("moto KMS CreateKey: %v", err)
	}
	env[envSealKey] = aws.ToString(key.KeyMetadata.Arn)
	const result = `{"summary":"resolved-by-hand-91c2"}`
	id := "orders#" + strings.Repeat("b", 64)
	claimLapsed(t, store, id)
	var w writeResult
	cli(t, env, "resolve", "--json", "--id", id, "--owner", "o", "--result", result).want(t, exitOK).decode(t, &w)
	if w.After == nil || !w.After.Sealed || !w.After.Opened || w.After.DataBytes != len(result) || w.After.Problem != "" {
		t.Errorf("after resolve: %+v, want sealed, opened, %d bytes", w.After, len(result))
	}
	item, err := db.GetItem(t.Context(), &dynamodb.GetItemInput{TableName: aws.String(table), Key: map[string]types.AttributeValue{driver.AttrID: &types.AttributeValueMemberS{Value: id}}})
	if err != nil || strings.Contains(fmt.Sprint(item.Item), "resolved-by-hand") {
		t.Fatalf("stored item %v, %v: want no plaintext", item.Item, err)
	}
	sealer, err := kmsseal.New(client, env[envSealKey])
	if err != nil {
		t.Fatal(err)
	}
	rec, err := store.Inspect(t.Context(), id)
	if err != nil {
		t.Fatal(err)
	}
	if plain, err := driver.OpenData(t.Context(), sealer, id, rec.Data); err != nil || string(plain) != result {
		t.Errorf("the function's sealer opens %q, %v; want the result", plain, err)
	}
	if text := cli(t, env, "inspect", "--id", id).want(t, exitOK).stdout; !strings.Contains(text, "opened with --seal-key") || strings.Contains(text, "resolved-by-hand") {
		t.Errorf("inspect's text:\n%s", text)
	}
	// Sealed for another record, it does not open there: inspect says so.
	moved := "orders#" + strings.Repeat("c", 64)
	claimLapsed(t, store, moved)
	if _, err := store.Complete(t.Context(), driver.Record{ID: moved, Status: driver.StatusCompleted, Owner: "o", ExpiresAt: time.Now().Add(time.Hour), Data: rec.Data}); err != nil {
		t.Fatal(err)
	}
	if v := inspectJSON(t, env, exitRefused, "--id", moved); v.Opened || !strings.Contains(v.Problem, "cannot be opened") {
		t.Errorf("a result moved to another record: %+v, want a problem", v)
	}
	// A withheld result.
	withheld := "orders#" + strings.Repeat("d", 64)
	claimLapsed(t, store, withheld)
	if _, err := store.Complete(t.Context(), driver.Record{ID: withheld, Status: driver.StatusCompleted, Owner: "o", ExpiresAt: time.Now().Add(time.Hour), Data: []byte(driver.WithheldData)}); err != nil {
		t.Fatal(err)
	}
	if v := inspectJSON(t, env, exitOK, "--id", withheld); !v.Withheld {
		t.Errorf("a withheld result: %+v", v)
	}
}

// TestResolveRefusesPlaintextWhereSealed: without a key, resolve in a
// namespace whose completed records are sealed is refused, naming
// --seal-key, and writes nothing; in a namespace of unsealed records it
// writes as before.
func TestResolveRefusesPlaintextWhereSealed(t *testing.T) {
	env, store, _, _ := dynamoEnv(t, "orders")
	done := "orders#" + strings.Repeat("e", 64)
	claimLapsed(t, store, done)
	data, err := driver.SealData(t.Context(), plainSealer{}, done, []byte(`"x"`))
	if err != nil {
		t.Fatal(err)
	}
	if _, err := store.Complete(t.Context(), driver.Record{ID: done, Status: driver.StatusCompleted, Owner: "o", ExpiresAt: time.Now().Add(time.Hour), Data: data}); err != nil {
		t.Fatal(err)
	}
	id := "orders#" + strings.Repeat("f", 64)
	claimLapsed(t, store, id)
	r := cli(t, env, "resolve", "--id", id, "--owner", "o", "--result", `{"a":1}`).want(t, exitRefused)
	if !strings.Contains(r.stderr, "--seal-key") || !strings.Contains(r.stderr, envSealKey) {
		t.Errorf("stderr %q: want it to name --seal-key and $%s", r.stderr, envSealKey)
	}
	if v := inspectJSON(t, env, exitOK, "--id", id); v.Status != string(driver.StatusInProgress) {
		t.Errorf("after the refusal: %+v, want the claim untouched", v)
	}
	other, store2, _, _ := dynamoEnv(t, "orders")
	claimLapsed(t, store2, id)
	cli(t, other, "resolve", "--id", id, "--owner", "o", "--result", `{"a":1}`).want(t, exitOK)
}

// TestRedriveSealedUnopenable: a message whose record holds a sealed result
// that the function's key (--seal-key, $SQSONCE_SEAL_KEY) does not open, as
// after the key changed, is classed unreadable and nothing is sent: its
// redelivery would fail again (ErrUnsealed). Under the right key it replays.
func TestRedriveSealedUnopenable(t *testing.T) {
	env, store, _, _ := dynamoEnv(t, "orders")
	t.Setenv("AWS_ENDPOINT_URL_KMS", moto.Endpoint(t))
	client := kms.NewFromConfig(moto.Config(t))
	keys := make([]string, 2)
	for i := range keys {
		key, err := client.CreateKey(t.Context(), &kms.CreateKeyInput{Description: aws.String(t.Name())})
		if err != nil {
			t.Fatalf("moto KMS CreateKey: %v", err)
		}
		keys[i] = aws.ToString(key.KeyMetadata.Arn)
	}
	sealer, err := kmsseal.New(client, keys[0])
	if err != nil {
		t.Fatal(err)
	}
	g, err := idempotency.New(idempotency.Config{Store: store, Namespace: "orders", Sealer: sealer, Logger: slog.New(slog.DiscardHandler)})
	if err != nil {
		t.Fatal(err)
	}
	body := `{"idempotency_key":"order-sealed","document":{"id":"d","version":1},"prompt_version":"v1"}`
	f := idempotency.Wrap(g, handler.Key(), func(context.Context, events.SQSMessage) (string, error) { return "done", nil })
	if _, err := f(t.Context(), events.SQSMessage{MessageId: "m-1", Body: body}); err != nil {
		t.Fatal(err)
	}
	q := newQueues(t)
	id := sendToDLQ(t, q, body, nil)
	defer q.drain(t, q.dlq.URL)
	for _, c := range []struct {
		key, class string
		exit       int
	}{{keys[0], classReplay, exitOK}, {keys[1], classUnreadable, exitRefused}} {
		env[envSealKey] = c.key
		var r redriveReport
		cli(t, env, "redrive", "--dlq", q.dlq.URL, "--queue", q.source.URL, "--wait", "1s", "--dry-run", "--json").want(t, c.exit).decode(t, &r)
		if len(r.Messages) != 1 || r.Messages[0].MessageID != id || r.Messages[0].Class != c.class {
			t.Errorf("--seal-key %s: %+v, want message %s classed %q", c.key, r.Messages, id, c.class)
		}
	}
	// Not a dry run: refused, nothing sent.
	cli(t, env, "redrive", "--dlq", q.dlq.URL, "--queue", q.source.URL, "--wait", "1s").want(t, exitRefused)
	if n := q.count(t, q.source.URL); n != 0 {
		t.Errorf("%d messages sent to the queue, want none", n)
	}
}
