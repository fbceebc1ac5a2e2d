package idempotentconsumer

import (
	"strings"
	"testing"

	"github.com/sqsonce/sqsonce/middleware/idempotency/jmespath"
	"github.com/sqsonce/sqsonce/middleware/lambdaenv/envvars"
)

// readerRefuses reports whether the function's reader refuses the key
// source v: lambdaenv.Load parses SQSONCE_KEY with envvars.ParseKey, and
// lambdaenv.Selector compiles a JMESPath source with jmespath.Compile.
// (This module cannot import lambdaenv, which needs the AWS SDK; those two
// calls are all Selector adds for a source ParseKey accepts.)
func readerRefuses(v string) bool {
	k, err := envvars.ParseKey(v)
	if err != nil {
		return true
	}
	if k.Kind == envvars.KeyJMESPath {
		_, err = jmespath.Compile(k.Expr)
	}
	return err != nil
}

// TestKeySourcePlanCompilesJMESPath: Plan refuses, naming Props.KeySource,
// every JMESPath source the function's reader refuses at its cold start,
// and keeps every one it accepts.
func TestKeySourcePlanCompilesJMESPath(t *testing.T) {
	bad := []string{
		"jmespath:body.[",                        // unterminated multi-select
		"jmespath:powertools_json(body",          // unclosed call
		"jmespath:no_such_function(body)",        // unknown function
		"jmespath:length(body, messageId)",       // wrong number of arguments
		"jmespath:a[?x].b[?y]",                   // Powertools Python and TypeScript parse it differently
		"jmespath:body.`{\"a\":`",                // a JSON literal that is not JSON
		"jmespath:body..order_id",                // an empty member name
		"jmespath:  powertools_json(body).id ))", // trailing tokens
	}
	for _, v := range bad {
		if !readerRefuses(v) {
			t.Fatalf("%s: the function's reader accepts it: not a bad source for this test", v)
		}
		_, err := (Props{Namespace: "orders", KeySource: v}).Plan()
		if err == nil || !strings.Contains(err.Error(), "Props.KeySource") {
			t.Errorf("KeySource %s: Plan gives %v, want a refusal naming Props.KeySource (the function would fail every cold start)", v, err)
		}
	}
	good := map[string]string{
		"jmespath:powertools_json(body).idempotency_key":  "jmespath:powertools_json(body).idempotency_key",
		"jmespath: powertools_json(body).[user, amount] ": "jmespath:powertools_json(body).[user, amount]",
		"jmespath:messageId":                              "jmespath:messageId",
		"jmespath:attributes.MessageGroupId":              "jmespath:attributes.MessageGroupId",
		"body:order_id":                                   "body:order_id",
	}
	for v, want := range good {
		if readerRefuses(v) {
			t.Fatalf("%s: the function's reader refuses it: not a good source for this test", v)
		}
		pl, err := (Props{Namespace: "orders", KeySource: v}).Plan()
		if err != nil || pl.KeySource != want {
			t.Errorf("KeySource %q: Plan gives %q, %v; want %q", v, pl.KeySource, err, want)
		}
	}
}

// TestEnvironmentRefusesEveryOwnedVariable: Props.Environment may set none
// of the variables the construct owns, which are envvars.Set's.
func TestEnvironmentRefusesEveryOwnedVariable(t *testing.T) {
	for _, k := range envvars.Set() {
		_, err := (Props{Namespace: "orders", Environment: map[string]string{k: "x"}}).Plan()
		if err == nil || !strings.Contains(err.Error(), "Props.Environment sets "+k) {
			t.Errorf("Props.Environment with %s: Plan gives %v, want a refusal naming it", k, err)
		}
	}
	// Each optional variable with a value the function's reader takes, and
	// the store it belongs to: Plan checks the environment as Load does.
	valid := map[string]map[string]string{
		envvars.EnvMetrics:                   {envvars.EnvMetrics: "off"},
		envvars.EnvDynamoDBEndpoint:          {envvars.EnvDynamoDBEndpoint: "http://127.0.0.1:5000"},
		envvars.EnvStore:                     {envvars.EnvStore: "postgres", envvars.EnvPostgresURL: "postgres://db/orders"},
		envvars.EnvRedisURL:                  {envvars.EnvStore: "redis", envvars.EnvRedisURL: "redis://cache:6379/0"},
		envvars.EnvPostgresURL:               {envvars.EnvStore: "postgres", envvars.EnvPostgresURL: "postgres://db/orders"},
		envvars.EnvDeadLetter:                {envvars.EnvDeadLetter: "off"},
		envvars.EnvPacing:                    {envvars.EnvPacing: "off"},
		envvars.EnvKeepVisible:               {envvars.EnvKeepVisible: "off"},
		envvars.EnvSQSEndpoint:               {envvars.EnvSQSEndpoint: "http://127.0.0.1:5000"},
		envvars.EnvFormat:                    {envvars.EnvFormat: "powertools-python"},
		envvars.EnvDataFormat:                {envvars.EnvDataFormat: "powertools-typescript"},
		envvars.EnvRedisKeyPrefix:            {envvars.EnvStore: "redis", envvars.EnvRedisURL: "redis://cache", envvars.EnvRedisKeyPrefix: "orders"},
		envvars.EnvRedisKeyPrefixUnseparated: {envvars.EnvStore: "redis", envvars.EnvRedisURL: "redis://cache", envvars.EnvRedisKeyPrefix: "orders", envvars.EnvRedisKeyPrefixUnseparated: "on"},
		envvars.EnvRedisCluster:              {envvars.EnvStore: "redis", envvars.EnvRedisURL: "redis://cache", envvars.EnvRedisCluster: "on"},
	}
	for _, k := range envvars.Optional() {
		env, ok := valid[k]
		if !ok {
			t.Errorf("%s: no valid value in this test", k)
			continue
		}
		if _, err := (Props{Namespace: "orders", Environment: env}).Plan(); err != nil {
			t.Errorf("Props.Environment with %s, the function's own: %v", k, err)
		}
	}
}
