package lambdaenv_test

import (
	"strings"
	"testing"
	"time"

	"github.com/aws/aws-lambda-go/events"
	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/sqs"

	"github.com/sqsonce/sqsonce/middleware/idempotency"
	"github.com/sqsonce/sqsonce/middleware/idempotency/jmespath"
	"github.com/sqsonce/sqsonce/middleware/lambdaenv"
	"github.com/sqsonce/sqsonce/middleware/lambdaenv/envvars"
)

// sqsClient is a client no test call reaches: New only keeps it.
var sqsClient = sqs.New(sqs.Options{Region: "us-east-1", Credentials: aws.AnonymousCredentials{}})

// TestNew: the settings land in plain values, the metrics are wired into
// both hooks by default, and off leaves the hooks and the handler alone.
func TestNew(t *testing.T) {
	db := dynamodb.New(dynamodb.Options{Region: "us-east-1", Credentials: aws.AnonymousCredentials{}})
	s, err := envvars.Read(func(k string) string {
		return map[string]string{envvars.EnvTable: "idem", envvars.EnvNamespace: "charges", envvars.EnvQueueWindow: "60s",
			envvars.EnvMinRemaining: "2s", envvars.EnvStrict: "true"}[k]
	})
	if err != nil {
		t.Fatal(err)
	}
	f, err := lambdaenv.New(t.Context(), s, lambdaenv.Clients{DynamoDB: db, SQS: sqsClient})
	if err != nil {
		t.Fatal(err)
	}
	c := f.Config
	if c.Store != f.Store || c.Namespace != "charges" || c.MinExpiry != time.Minute || !c.Strict || f.Options.MinRemaining != 2*time.Second {
		t.Errorf("Config %+v, Options %+v", c, f.Options)
	}
	if f.Metrics == nil || c.OnOutcome == nil || f.Options.OnRecord == nil {
		t.Errorf("metrics not on by default: recorder %v, OnOutcome set %v, OnRecord set %v", f.Metrics, c.OnOutcome != nil, f.Options.OnRecord != nil)
	}
	s.Metrics = false
	off, err := lambdaenv.New(t.Context(), s, lambdaenv.Clients{DynamoDB: db, SQS: sqsClient})
	if err != nil {
		t.Fatal(err)
	}
	if off.Metrics != nil || off.Config.OnOutcome != nil || off.Options.OnRecord != nil || off.Handler(nil) != nil {
		t.Error("SQSONCE_METRICS=off still counts")
	}
	if _, err := lambdaenv.New(t.Context(), envvars.Settings{Namespace: "n"}, lambdaenv.Clients{DynamoDB: db}); err == nil {
		t.Error("New without a table accepted")
	}
}

// TestKey: SQSONCE_KEY's selector gives the record id of the selector it
// names, written by hand; unset, Key is the zero Selector.
func TestKey(t *testing.T) {
	db := dynamodb.New(dynamodb.Options{Region: "us-east-1", Credentials: aws.AnonymousCredentials{}})
	msg := events.SQSMessage{MessageId: "m-1", Body: `{"order_id":"o-1","order":{"id":7},"customer_id":"c-9","amount":1250}`}
	for v, want := range map[string]idempotency.Selector{
		"body:order_id":                           idempotency.BodyField("order_id"),
		"body:order.id":                           idempotency.BodyField("order", "id"),
		"body:customer_id,amount":                 idempotency.BodySubset("customer_id", "amount"),
		"jmespath:powertools_json(body).order_id": jmespath.MustCompile("powertools_json(body).order_id").Selector(),
	} {
		s, err := envvars.Read(func(k string) string {
			return map[string]string{envvars.EnvTable: "idem", envvars.EnvNamespace: "charges", envvars.EnvKey: v}[k]
		})
		if err != nil {
			t.Fatal(err)
		}
		f, err := lambdaenv.New(t.Context(), s, lambdaenv.Clients{DynamoDB: db, SQS: sqsClient})
		if err != nil {
			t.Fatal(err)
		}
		g, err := idempotency.New(f.Config)
		if err != nil {
			t.Fatal(err)
		}
		got, err := idempotency.Select(f.Key, msg)
		if err != nil {
			t.Fatalf("%s: %v", v, err)
		}
		wantSel, err := idempotency.Select(want, msg)
		if err != nil {
			t.Fatal(err)
		}
		gotID, _ := g.ID(got)
		wantID, _ := g.ID(wantSel)
		if gotID != wantID || gotID == "" {
			t.Errorf("%s: id %q, want %q", v, gotID, wantID)
		}
	}
	if _, err := lambdaenv.Selector(envvars.KeySource{Kind: envvars.KeyJMESPath, Expr: "a[?"}); err == nil || !strings.Contains(err.Error(), envvars.EnvKey) {
		t.Errorf("a bad expression: %v, want an error naming %s", err, envvars.EnvKey)
	}
}

// TestSealKeyNeedsKMSEnv: with SQSONCE_SEAL_KEY set and package kmsenv not
// imported (it is not, in this module), New fails with an error naming the
// variable and the import: results are never left unsealed.
func TestSealKeyNeedsKMSEnv(t *testing.T) {
	db := dynamodb.New(dynamodb.Options{Region: "us-east-1", Credentials: aws.AnonymousCredentials{}})
	s, err := envvars.Read(func(k string) string {
		return map[string]string{envvars.EnvTable: "idem", envvars.EnvNamespace: "charges",
			envvars.EnvSealKey: "arn:aws:kms:us-east-1:123456789012:key/1234abcd-12ab-34cd-56ef-1234567890ab"}[k]
	})
	if err != nil {
		t.Fatal(err)
	}
	f, err := lambdaenv.New(t.Context(), s, lambdaenv.Clients{DynamoDB: db, SQS: sqsClient})
	if err == nil || !strings.Contains(err.Error(), envvars.EnvSealKey) || !strings.Contains(err.Error(), `import _ "github.com/sqsonce/sqsonce/middleware/lambdaenv/kmsenv"`) {
		t.Fatalf("New = %v, %v; want an error naming %s and the kmsenv import", f, err, envvars.EnvSealKey)
	}
	if strings.Contains(err.Error(), "1234abcd") {
		t.Errorf("the error quotes the key: %v", err)
	}
}
