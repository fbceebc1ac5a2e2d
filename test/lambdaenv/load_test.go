package lambdaenv_test

import (
	"context"
	"errors"
	"fmt"
	"os"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/aws/aws-lambda-go/events"
	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/kms"
	"github.com/aws/aws-sdk-go-v2/service/sqs"
	"github.com/aws/aws-sdk-go-v2/service/sqs/types"

	"github.com/sqsonce/sqsonce/internal/testenv/esm"
	"github.com/sqsonce/sqsonce/internal/testenv/motoserver"
	"github.com/sqsonce/sqsonce/internal/testenv/pgserver"
	"github.com/sqsonce/sqsonce/internal/testenv/redisserver"
	"github.com/sqsonce/sqsonce/middleware/batch"
	"github.com/sqsonce/sqsonce/middleware/idempotency"
	"github.com/sqsonce/sqsonce/middleware/idempotency/driver"
	"github.com/sqsonce/sqsonce/middleware/lambdaenv"
	"github.com/sqsonce/sqsonce/middleware/lambdaenv/envvars"
	"github.com/sqsonce/sqsonce/middleware/lambdaenv/kmsenv"
	_ "github.com/sqsonce/sqsonce/middleware/lambdaenv/pgenv"
	_ "github.com/sqsonce/sqsonce/middleware/lambdaenv/redisenv"
)

var (
	moto   = motoserver.New()
	redisS = redisserver.New()
	pgS    = pgserver.New()
)

func TestMain(m *testing.M) {
	// The AWS SDK reads its credentials and region from the environment:
	// moto's, never a developer's profile.
	for k, v := range map[string]string{"AWS_ACCESS_KEY_ID": "test", "AWS_SECRET_ACCESS_KEY": "test", "AWS_REGION": motoserver.Region,
		"AWS_CONFIG_FILE": os.DevNull, "AWS_SHARED_CREDENTIALS_FILE": os.DevNull, "AWS_EC2_METADATA_DISABLED": "true"} {
		os.Setenv(k, v)
	}
	os.Unsetenv("AWS_PROFILE")
	code := moto.Run(m)
	_ = redisS.Close()
	_ = pgS.Close()
	os.Exit(code)
}

type order struct {
	OrderID string `json:"order_id"`
}

// setenv sets the function's variables for one test, with moto as its AWS.
func setenv(t *testing.T, vars map[string]string) {
	t.Setenv("AWS_ENDPOINT_URL", moto.Endpoint(t))
	t.Setenv(envvars.EnvMetrics, "off")
	for k, v := range vars {
		t.Setenv(k, v)
	}
}

// TestLoadStores: the README's main, unchanged, on each store the
// variables name: a duplicate (a new message id, one order id) replays
// the first run's result.
func TestLoadStores(t *testing.T) {
	for _, store := range []string{envvars.StoreDynamoDB, envvars.StoreRedis, envvars.StorePostgres} {
		t.Run(store, func(t *testing.T) {
			vars := map[string]string{envvars.EnvNamespace: "orders", envvars.EnvStore: store}
			switch store {
			case envvars.StoreDynamoDB:
				vars[envvars.EnvTable] = motoserver.NewTable(t, moto.DynamoDB(t))
			case envvars.StoreRedis:
				vars[envvars.EnvRedisURL] = redisS.URL(t)
			case envvars.StorePostgres:
				vars[envvars.EnvPostgresURL] = pgS.NewDatabase(t)
			}
			setenv(t, vars)
			env, err := lambdaenv.Load(t.Context())
			if err != nil {
				t.Fatal(err)
			}
			defer env.Close()
			if (env.Store != nil) != (store == envvars.StoreDynamoDB) || env.Config.Store == nil {
				t.Fatalf("store %s: Function.Store %v, Config.Store %T", store, env.Store, env.Config.Store)
			}
			g, err := idempotency.New(env.Config)
			if err != nil {
				t.Fatal(err)
			}
			var runs atomic.Int32
			h := env.Handler(batch.SQS(idempotency.WrapJSON(g, idempotency.BodyField("order_id"),
				func(ctx context.Context, o order, m events.SQSMessage) (string, error) {
					runs.Add(1)
					return "ch_" + o.OrderID, nil
				}), env.Options))
			orderID := fmt.Sprintf("o-%d", time.Now().UnixNano())
			for i := range 2 {
				ctx, cancel := context.WithTimeout(t.Context(), 3*time.Second)
				resp, err := h(ctx, events.SQSEvent{Records: []events.SQSMessage{{MessageId: fmt.Sprint("m-", i), Body: `{"order_id":"` + orderID + `"}`,
					EventSourceARN: "arn:aws:sqs:us-east-1:123456789012:orders"}}})
				cancel()
				if err != nil || len(resp.BatchItemFailures) != 0 {
					t.Fatalf("delivery %d: %v, %+v", i, err, resp)
				}
			}
			if n := runs.Load(); n != 1 {
				t.Errorf("the charge ran %d times on %s, want 1", n, store)
			}
		})
	}
}

// TestLoadSealed: with SQSONCE_SEAL_KEY (a key on moto's KMS) and package
// kmsenv imported, Load's guard seals: the stored result is sealed, the
// plaintext nowhere in the item, and a duplicate replays the result. A
// key KMS refuses fails Load, naming the variable.
func TestLoadSealed(t *testing.T) {
	out, err := kms.NewFromConfig(moto.Config(t)).CreateKey(t.Context(), &kms.CreateKeyInput{Description: aws.String(t.Name())})
	if err != nil {
		t.Fatalf("moto KMS CreateKey: %v", err)
	}
	db := moto.DynamoDB(t)
	table := motoserver.NewTable(t, db)
	setenv(t, map[string]string{envvars.EnvNamespace: "orders", envvars.EnvTable: table, envvars.EnvSealKey: aws.ToString(out.KeyMetadata.Arn)})
	env, err := lambdaenv.Load(t.Context())
	if err != nil {
		t.Fatal(err)
	}
	if env.Config.Sealer == nil {
		t.Fatal("Config.Sealer is nil with " + envvars.EnvSealKey)
	}
	g, err := idempotency.New(env.Config)
	if err != nil {
		t.Fatal(err)
	}
	const answer = "ch-sealed-4b1d"
	var runs atomic.Int32
	op := func(context.Context) (string, error) { runs.Add(1); return answer, nil }
	for i := range 2 {
		got, err := idempotency.Do(t.Context(), g, idempotency.Raw([]byte("o-1")), op)
		if err != nil || got != answer {
			t.Fatalf("call %d: %q, %v", i, got, err)
		}
	}
	if runs.Load() != 1 {
		t.Errorf("%d runs, want 1", runs.Load())
	}
	scan, err := db.Scan(t.Context(), &dynamodb.ScanInput{TableName: aws.String(table)})
	if err != nil || len(scan.Items) != 1 {
		t.Fatalf("scan: %v, %d items", err, len(scan.Items))
	}
	data := fmt.Sprint(scan.Items[0][driver.AttrData])
	if !strings.Contains(data, "sqsonce:sealed:1:") || strings.Contains(fmt.Sprint(scan.Items[0]), answer) {
		t.Errorf("stored item %v: want a sealed result, no plaintext", scan.Items[0])
	}

	t.Setenv(envvars.EnvSealKey, "arn:aws:kms:"+motoserver.Region+":123456789012:key/00000000-0000-0000-0000-000000000000")
	if env, err := lambdaenv.Load(t.Context()); err == nil || !strings.Contains(err.Error(), envvars.EnvSealKey) {
		if env != nil {
			env.Close()
		}
		t.Errorf("an unknown key: Load = %v, want an error naming %s", err, envvars.EnvSealKey)
	}
}

// TestLoadNeverQuotesSecrets: a connection string that does not parse,
// or whose server refuses, is an error naming its variable, never quoting
// the string or its password.
func TestLoadNeverQuotesSecrets(t *testing.T) {
	const pw = "s3cret-pw"
	for _, tc := range []struct{ store, name, url string }{
		{envvars.StoreRedis, envvars.EnvRedisURL, "redis://:" + pw + "@127.0.0.1:1/0"},
		{envvars.StoreRedis, envvars.EnvRedisURL, "redis://:" + pw + "@[::1/0"},
		{envvars.StorePostgres, envvars.EnvPostgresURL, "postgres://app:" + pw + "@127.0.0.1:1/app?connect_timeout=2"},
		{envvars.StorePostgres, envvars.EnvPostgresURL, "host=127.0.0.1 port=1 user=app password=" + pw + " connect_timeout=2"},
		{envvars.StorePostgres, envvars.EnvPostgresURL, "postgres://app:" + pw + "@127.0.0.1:notaport/app"},
	} {
		// A case of its own: the variables of one store's case are not
		// left set for the next, which Load would refuse for that alone.
		t.Run(tc.store, func(t *testing.T) {
			setenv(t, map[string]string{envvars.EnvNamespace: "orders", envvars.EnvStore: tc.store, tc.name: tc.url})
			env, err := lambdaenv.Load(t.Context())
			if err == nil {
				env.Close()
				t.Errorf("%s: Load accepted an unreachable server", tc.name)
				return
			}
			if msg := err.Error(); !strings.Contains(msg, tc.name) || strings.Contains(msg, pw) || strings.Contains(msg, tc.url) {
				t.Errorf("%s: %q: want an error naming the variable, without its value", tc.name, msg)
			}
		})
	}
}

// TestDefaultsUseWhatTheConstructGrants: with the construct's variables
// only, a poison message goes to the dead-letter queue at its first
// delivery, and a message whose key is in progress elsewhere comes back
// near the holder's lease end, well before the queue's visibility
// timeout; each is one variable away from off.
func TestDefaultsUseWhatTheConstructGrants(t *testing.T) {
	client := esm.SQSClient(t, moto)
	dlq := esm.NewQueue(t, client, nil)
	source := esm.NewQueue(t, client, map[string]string{
		"RedrivePolicy":     fmt.Sprintf(`{"deadLetterTargetArn":%q,"maxReceiveCount":5}`, dlq.ARN),
		"VisibilityTimeout": "60",
	})
	table := motoserver.NewTable(t, moto.DynamoDB(t))
	setenv(t, map[string]string{envvars.EnvNamespace: "orders", envvars.EnvTable: table})
	env, err := lambdaenv.Load(t.Context())
	if err != nil {
		t.Fatal(err)
	}
	if env.Options.DeadLetter.Mover == nil || env.Options.Pacing.Changer == nil || env.Options.KeepVisible.Every < 0 {
		t.Fatalf("defaults: dead letter %v, pacing %v, keep visible every %v", env.Options.DeadLetter.Mover, env.Options.Pacing.Changer, env.Options.KeepVisible.Every)
	}
	g, err := idempotency.New(env.Config)
	if err != nil {
		t.Fatal(err)
	}
	h := env.Handler(batch.SQS(idempotency.WrapJSON(g, idempotency.BodyField("order_id"),
		func(ctx context.Context, o order, m events.SQSMessage) (string, error) { return "ch_" + o.OrderID, nil }), env.Options))

	// The holder: another function's invocation (a guard of its own) runs
	// the order for a few seconds.
	holder, err := idempotency.New(env.Config)
	if err != nil {
		t.Fatal(err)
	}
	orderID := fmt.Sprintf("o-%d", time.Now().UnixNano())
	started, release := make(chan struct{}), make(chan struct{})
	holderStart := time.Now()
	var wg sync.WaitGroup
	wg.Go(func() {
		ctx, cancel := context.WithTimeout(t.Context(), 3*time.Second)
		defer cancel()
		_, _ = idempotency.WrapJSON(holder, idempotency.BodyField("order_id"), func(ctx context.Context, o order, m events.SQSMessage) (string, error) {
			close(started)
			select {
			case <-release:
			case <-ctx.Done():
			}
			return "ch_" + o.OrderID, nil
		})(ctx, events.SQSMessage{MessageId: "holder", Body: `{"order_id":"` + orderID + `"}`})
	})
	defer wg.Wait()
	defer close(release)
	<-started

	for _, body := range []string{"not json", `{"order_id":"` + orderID + `"}`} {
		if _, err := client.SendMessage(t.Context(), &sqs.SendMessageInput{QueueUrl: aws.String(source.URL), MessageBody: aws.String(body)}); err != nil {
			t.Fatal(err)
		}
	}
	msgs := receive(t, client, source.URL, 2)
	ev := events.SQSEvent{}
	for _, m := range msgs {
		ev.Records = append(ev.Records, events.SQSMessage{MessageId: aws.ToString(m.MessageId), ReceiptHandle: aws.ToString(m.ReceiptHandle),
			Body: aws.ToString(m.Body), EventSourceARN: source.ARN, Attributes: m.Attributes})
	}
	ctx, cancel := context.WithTimeout(t.Context(), 3*time.Second)
	resp, err := h(ctx, ev)
	cancel()
	handled := time.Now()
	if err != nil && len(resp.BatchItemFailures) == 0 {
		t.Fatal(err)
	}
	if len(resp.BatchItemFailures) != 1 {
		t.Fatalf("failures %+v, want one: the order in progress (the poison message moved)", resp.BatchItemFailures)
	}
	if moved := receive(t, client, dlq.URL, 1); aws.ToString(moved[0].Body) != "not json" {
		t.Errorf("the dead-letter queue got %q", aws.ToString(moved[0].Body))
	}
	again := receive(t, client, source.URL, 1)
	if aws.ToString(again[0].Body) == "not json" {
		t.Errorf("the poison message is still in its queue")
	}
	// The holder's lease ends about 3 s after it started; the queue's
	// visibility timeout would bring the message back 30 s after receive.
	// The holder's lease ends at its deadline (3 s) plus the guard's
	// SkewMargin (5 s); pacing adds up to Jitter × Base (5 s). The queue's
	// visibility timeout would bring the message back 60 s after receive.
	back := time.Since(holderStart)
	t.Logf("the order in progress came back %v after the holder started (the batch returned at %v)", back, handled.Sub(holderStart))
	if back < 3*time.Second || back > 16*time.Second {
		t.Errorf("the order in progress came back %v after the holder started, want near the holder's lease end (8 s to 13 s), not the queue's 60 s", back)
	}

	for _, off := range []string{envvars.EnvDeadLetter, envvars.EnvPacing} {
		t.Setenv(off, "off")
	}
	t.Setenv(envvars.EnvKeepVisible, "off")
	env, err = lambdaenv.Load(t.Context())
	if err != nil {
		t.Fatal(err)
	}
	if env.Options.DeadLetter.Mover != nil || env.Options.Pacing.Changer != nil {
		t.Errorf("off: dead letter %v, pacing %v", env.Options.DeadLetter.Mover, env.Options.Pacing.Changer)
	}
	t.Setenv(envvars.EnvPacing, "on")
	if env, err = lambdaenv.Load(t.Context()); err != nil || env.Options.Pacing.Changer == nil || env.Options.KeepVisible.Every >= 0 {
		t.Errorf("%s=off: %v, keep visible every %v", envvars.EnvKeepVisible, err, env.Options.KeepVisible.Every)
	}
}

// receive waits for n messages of url, at most 20 s.
func receive(t *testing.T, client *sqs.Client, url string, n int) []types.Message {
	t.Helper()
	var out []types.Message
	deadline := time.Now().Add(20 * time.Second)
	for len(out) < n {
		if time.Now().After(deadline) {
			t.Fatalf("%d of %d messages from %s within 20 s", len(out), n, url)
		}
		r, err := client.ReceiveMessage(t.Context(), &sqs.ReceiveMessageInput{QueueUrl: aws.String(url), MaxNumberOfMessages: int32(n - len(out)),
			WaitTimeSeconds: 1, MessageSystemAttributeNames: []types.MessageSystemAttributeName{types.MessageSystemAttributeNameAll}})
		if err != nil {
			t.Fatal(err)
		}
		out = append(out, r.Messages...)
	}
	return out
}

// noDecrypt is a KMS client whose role may generate data keys but not
// decrypt them, as AWS answers a missing kms:Decrypt.
type noDecrypt struct{ *kms.Client }

func (noDecrypt) Decrypt(context.Context, *kms.DecryptInput, ...func(*kms.Options)) (*kms.DecryptOutput, error) {
	return nil, errors.New("AccessDeniedException: not authorized to perform: kms:Decrypt")
}

// TestKMSEnvChecksDecrypt: kmsenv.New fails at start-up, naming
// kms:Decrypt and the variable, for a key the function may seal under but
// not open (its duplicates from other processes would fail for good); with
// both permissions (moto's KMS) it returns the sealer.
func TestKMSEnvChecksDecrypt(t *testing.T) {
	client := kms.NewFromConfig(moto.Config(t))
	out, err := client.CreateKey(t.Context(), &kms.CreateKeyInput{Description: aws.String(t.Name())})
	if err != nil {
		t.Fatalf("moto KMS CreateKey: %v", err)
	}
	key := aws.ToString(out.KeyMetadata.Arn)
	if _, err := kmsenv.New(t.Context(), client, key); err != nil {
		t.Fatalf("both permissions: %v", err)
	}
	_, err = kmsenv.New(t.Context(), noDecrypt{client}, key)
	if err == nil || !strings.Contains(err.Error(), "kms:Decrypt") || !strings.Contains(err.Error(), envvars.EnvSealKey) {
		t.Errorf("without kms:Decrypt: %v, want an error naming kms:Decrypt and %s", err, envvars.EnvSealKey)
	}
}
