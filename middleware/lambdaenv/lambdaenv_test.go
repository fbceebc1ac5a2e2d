package lambdaenv_test

import (
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"

	"github.com/sqsonce/sqsonce/middleware/lambdaenv"
	"github.com/sqsonce/sqsonce/middleware/lambdaenv/envvars"
)

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
	f, err := lambdaenv.New(s, db)
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
	off, err := lambdaenv.New(s, db)
	if err != nil {
		t.Fatal(err)
	}
	if off.Metrics != nil || off.Config.OnOutcome != nil || off.Options.OnRecord != nil || off.Handler(nil) != nil {
		t.Error("SQSONCE_METRICS=off still counts")
	}
	if _, err := lambdaenv.New(envvars.Settings{Namespace: "n"}, db); err == nil {
		t.Error("New without a table accepted")
	}
}
