package idempotentconsumer

import (
	"strings"
	"testing"
	"time"
)

// TestPlanRefusesWhatLoadRefuses: a function's environment that
// lambdaenv.Load refuses at every cold start (envvars.Read, then
// envvars.CheckNames) is refused at synth, where props meet
// Props.Environment: each of these synthesised before, and the deployed
// function failed every invocation's init.
func TestPlanRefusesWhatLoadRefuses(t *testing.T) {
	short := func(p *Props) {
		p.Timeout, p.Retention, p.DeadLetterRetention, p.MaxReceiveCount = time.Second, time.Minute, time.Minute, 1
	}
	for _, tc := range []struct {
		name  string
		props Props
		edit  func(*Props)
		wants []string
	}{
		{"message-group tenancy with a Powertools format",
			Props{Tenancy: "message-group", Environment: map[string]string{"SQSONCE_FORMAT": "powertools-python"}}, nil,
			[]string{"SQSONCE_FORMAT=powertools-python with SQSONCE_TENANCY=message-group"}},
		{"sealed with a Powertools format",
			Props{CreateEncryptionKey: true, SealWithEncryptionKey: true, Environment: map[string]string{"SQSONCE_FORMAT": "powertools-typescript"}}, nil,
			[]string{"SQSONCE_SEAL_KEY with SQSONCE_FORMAT=powertools-typescript"}},
		{"sealed with a Powertools data format",
			Props{CreateEncryptionKey: true, SealWithEncryptionKey: true, Environment: map[string]string{"SQSONCE_DATA_FORMAT": "powertools-python"}}, nil,
			[]string{"SQSONCE_SEAL_KEY with SQSONCE_DATA_FORMAT=powertools-python"}},
		{"a sort key with the Redis store",
			Props{SortKey: SortKey{Attribute: "sk", Partition: "orders"},
				Environment: map[string]string{"SQSONCE_STORE": "redis", "SQSONCE_REDIS_URL": "redis://cache:6379/0"}}, nil,
			[]string{"SQSONCE_SORT_KEY is set, and SQSONCE_STORE names another store (redis)"}},
		{"a misspelt variable",
			Props{Environment: map[string]string{"SQSONCE_PACEING": "off"}}, nil,
			[]string{"SQSONCE_PACEING is not a variable sqsonce reads: is it SQSONCE_PACING"}},
		{"a flag neither on nor off",
			Props{Environment: map[string]string{"SQSONCE_METRICS": "false"}}, nil,
			[]string{`SQSONCE_METRICS is neither "on" nor "off"`}},
		{"keep visible without pacing",
			Props{Environment: map[string]string{"SQSONCE_PACING": "off", "SQSONCE_KEEP_VISIBLE": "on"}}, nil,
			[]string{"SQSONCE_KEEP_VISIBLE=on with SQSONCE_PACING=off"}},
		{"an expiry shorter than the guard's lease",
			Props{ExpiresAfter: 5 * time.Minute}, short,
			[]string{"SQSONCE_EXPIRES_AFTER (5m0s) is shorter than the guard's lease (15m0s)"}},
		{"a namespace with white space",
			Props{Namespace: "orders "}, nil,
			[]string{"SQSONCE_NAMESPACE has white space at its start or end"}},
		{"a metrics service with white space",
			Props{MetricsService: " orders-eu"}, nil,
			[]string{"SQSONCE_METRICS_SERVICE has white space at its start or end"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			p := tc.props
			if p.Namespace == "" {
				p.Namespace = "orders"
			}
			if tc.edit != nil {
				tc.edit(&p)
			}
			pl, err := p.Plan()
			if err == nil {
				t.Fatalf("Plan() = %+v, want an error", pl)
			}
			for _, w := range tc.wants {
				if !strings.Contains(err.Error(), w) {
					t.Errorf("error %q\nwant it to contain %q", err, w)
				}
			}
			for _, line := range strings.Split(err.Error(), "\n") {
				if !strings.HasPrefix(line, "idempotentconsumer: ") {
					t.Errorf("error line %q lacks the package prefix", line)
				}
				if strings.Contains(line, "redis://cache") {
					t.Errorf("error line %q quotes the Redis URL", line)
				}
			}
		})
	}
}

// TestPlanTakesWhatLoadTakes: environments lambdaenv.Load takes plan, the
// reference app's own variables and a value the CDK resolves at deploy
// time among them.
func TestPlanTakesWhatLoadTakes(t *testing.T) {
	for _, p := range []Props{
		{Namespace: "orders"},
		{Namespace: "orders", Tenancy: "off", Environment: map[string]string{"SQSONCE_FORMAT": "powertools-python", "SQSONCE_DATA_FORMAT": "powertools-python"}},
		{Namespace: "orders", Environment: map[string]string{"SQSONCE_STORE": "redis", "SQSONCE_REDIS_URL": "${Token[TOKEN.123]}"}},
		{Namespace: "orders", Environment: map[string]string{"SQSONCE_SUMMARIES_TABLE": "${Token[TOKEN.7]}", "SQSONCE_PROVIDER": "stub", "SQSONCE_CONCURRENCY": "10"}},
		{Namespace: "orders", CreateEncryptionKey: true, SealWithEncryptionKey: true, SortKey: SortKey{Attribute: "sk", Partition: "orders"}, Strict: true},
		{Namespace: "orders", Environment: map[string]string{"SQSONCE_PACING": "off", "SQSONCE_DEAD_LETTER": "off", "SQSONCE_METRICS": "off"}},
	} {
		if _, err := p.Plan(); err != nil {
			t.Errorf("%+v: %v", p, err)
		}
	}
}
