package envvars_test

import (
	"cmp"
	"encoding/json"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/sqsonce/sqsonce/middleware/lambdaenv/envvars"
)

func env(m map[string]string) func(string) string { return func(k string) string { return m[k] } }

func TestRead(t *testing.T) {
	s, err := envvars.Read(env(map[string]string{
		envvars.EnvTable: "idem", envvars.EnvNamespace: "charges", envvars.EnvExpiresAfter: "1647000s", envvars.EnvQueueWindow: "351000s",
		envvars.EnvSortKey: "sk", envvars.EnvStaticPartition: "p", envvars.EnvStrict: "true", envvars.EnvMinRemaining: "2s",
	}))
	if err != nil {
		t.Fatal(err)
	}
	want := envvars.Settings{Table: "idem", Namespace: "charges", ExpiresAfter: 1647000 * time.Second, QueueWindow: 351000 * time.Second,
		SortKey: &envvars.SortKey{PartitionKey: "id", Attr: "sk", Partition: "p"}, Strict: true, MinRemaining: 2 * time.Second,
		Metrics: true, MetricsNamespace: "sqsonce", MetricsService: "charges",
		Tenancy: envvars.TenancyInvocation, Store: envvars.StoreDynamoDB, DeadLetter: true, Pacing: true, KeepVisible: true,
		Format: envvars.FormatNative, DataFormat: envvars.DataJSON}
	if s.SortKey == nil || *s.SortKey != *want.SortKey {
		t.Errorf("SortKey %+v, want %+v", s.SortKey, want.SortKey)
	}
	s.SortKey, want.SortKey = nil, nil
	if s != want {
		t.Errorf("Read\n got %+v\nwant %+v", s, want)
	}
}

// TestReadRefuses: every problem at once, each naming its variable, none
// quoting its value.
func TestReadRefuses(t *testing.T) {
	for _, tc := range []struct {
		vars  map[string]string
		wants []string
	}{
		{map[string]string{}, []string{envvars.EnvTable + " is required", envvars.EnvNamespace + " is required"}},
		{map[string]string{envvars.EnvTable: "t", envvars.EnvNamespace: "n", envvars.EnvExpiresAfter: "two weeks", envvars.EnvMinRemaining: "-1s"},
			[]string{envvars.EnvExpiresAfter + " is not a positive Go duration", envvars.EnvMinRemaining + " is not a positive Go duration"}},
		{map[string]string{envvars.EnvTable: "t", envvars.EnvNamespace: "n", envvars.EnvStrict: "yes", envvars.EnvMetrics: "maybe"},
			[]string{envvars.EnvStrict + ` is neither "true" nor "false"`, envvars.EnvMetrics + ` is neither "on" nor "off"`}},
		{map[string]string{envvars.EnvTable: "t", envvars.EnvNamespace: "n", envvars.EnvSortKey: "sk"}, []string{envvars.EnvStaticPartition + " is required with " + envvars.EnvSortKey}},
		// Zero would silently be the guard's default: unset says that.
		{map[string]string{envvars.EnvTable: "t", envvars.EnvNamespace: "n", envvars.EnvExpiresAfter: "0s"}, []string{envvars.EnvExpiresAfter + " is zero"}},
		{map[string]string{envvars.EnvTable: "t", envvars.EnvNamespace: "n", envvars.EnvTenancy: "tenant", envvars.EnvStore: "mongo"},
			[]string{envvars.EnvTenancy + ` is not "invocation", "message-group" or "off"`, envvars.EnvStore + " is not"}},
		{map[string]string{envvars.EnvNamespace: "n", envvars.EnvStore: envvars.StoreRedis}, []string{envvars.EnvRedisURL + " is required"}},
		{map[string]string{envvars.EnvNamespace: "n", envvars.EnvStore: envvars.StorePostgres}, []string{envvars.EnvPostgresURL + " is required"}},
		{map[string]string{envvars.EnvTable: "t", envvars.EnvNamespace: "n", envvars.EnvRedisURL: "redis://x"}, []string{"names another store"}},
		{map[string]string{envvars.EnvTable: "t", envvars.EnvNamespace: "n", envvars.EnvDeadLetter: "no", envvars.EnvPacing: "0", envvars.EnvKeepVisible: "false"},
			[]string{envvars.EnvDeadLetter + ` is neither "on" nor "off"`, envvars.EnvPacing + ` is neither`, envvars.EnvKeepVisible + ` is neither`}},
		{map[string]string{envvars.EnvTable: "t", envvars.EnvNamespace: "n", envvars.EnvStaticPartition: "p"}, []string{"set only with " + envvars.EnvSortKey}},
		{map[string]string{envvars.EnvTable: "t", envvars.EnvNamespace: "n", envvars.EnvSortKey: "id", envvars.EnvStaticPartition: "p"}, []string{"name one attribute"}},
	} {
		_, err := envvars.Read(env(tc.vars))
		if err == nil {
			t.Errorf("Read(%v) accepted", tc.vars)
			continue
		}
		for _, w := range tc.wants {
			if !strings.Contains(err.Error(), w) {
				t.Errorf("Read(%v) = %q, want it to hold %q", tc.vars, err, w)
			}
		}
		for _, v := range []string{"two weeks", "maybe", "yes"} {
			if tc.vars[envvars.EnvExpiresAfter] == v || tc.vars[envvars.EnvMetrics] == v || tc.vars[envvars.EnvStrict] == v {
				if strings.Contains(err.Error(), v) {
					t.Errorf("error %q quotes the value %q", err, v)
				}
			}
		}
	}
}

// TestConstructEnvironment holds the function environments infra's
// construct synthesizes (pinned by its TestEnvironmentSnapshot) against the
// reader, both ways: every variable the construct sets is one Read reads
// and Read accepts each environment as synthesized; every variable Read
// reads is set by some environment or listed in Optional.
func TestConstructEnvironment(t *testing.T) {
	b, err := os.ReadFile(filepath.Join("..", "..", "..", "infra", "idempotentconsumer", "testdata", "environment.json"))
	if err != nil {
		t.Fatal(err)
	}
	var snapshot map[string]map[string]any
	if err := json.Unmarshal(b, &snapshot); err != nil {
		t.Fatal(err)
	}
	read := append(envvars.Set(), envvars.Optional()...)
	setBySome := map[string]bool{}
	for name, vars := range snapshot {
		strs := map[string]string{}
		for k, v := range vars {
			setBySome[k] = true
			if !slices.Contains(envvars.Set(), k) {
				t.Errorf("%s: the construct sets %s, which the reader does not read (or lists as optional)", name, k)
			}
			s, ok := v.(string)
			if !ok {
				s = "resolved-at-deploy" // a CloudFormation reference, such as the table's name
			}
			strs[k] = s
		}
		s, err := envvars.Read(env(strs))
		if err != nil {
			t.Errorf("%s: the reader refuses the construct's environment: %v", name, err)
			continue
		}
		wantService, wantNS := cmp.Or(strs[envvars.EnvMetricsService], s.Namespace), cmp.Or(strs[envvars.EnvMetricsNamespace], "sqsonce")
		if s.Namespace != strs[envvars.EnvNamespace] || s.MetricsService != wantService || s.MetricsNamespace != wantNS {
			t.Errorf("%s: namespace %q, metrics %q/%q; want metrics %q/%q", name, s.Namespace, s.MetricsNamespace, s.MetricsService, wantNS, wantService)
		}
	}
	for _, k := range read {
		optional := slices.Contains(envvars.Optional(), k)
		switch {
		case !optional && !setBySome[k]:
			t.Errorf("the reader reads %s, which no synthesized environment sets and which is not optional", k)
		case optional && setBySome[k]:
			t.Errorf("%s is listed optional, but the construct sets it", k)
		}
	}
}

func TestFormat(t *testing.T) {
	for d, want := range map[time.Duration]string{90 * time.Second: "90s", 1500 * time.Millisecond: "1.5s", 0: "0s"} {
		if got := envvars.Format(d); got != want {
			t.Errorf("Format(%v) = %q, want %q", d, got, want)
		}
		if got, err := time.ParseDuration(envvars.Format(d)); err != nil || got != d {
			t.Errorf("Format(%v) parses to %v, %v", d, got, err)
		}
	}
}

// TestParseKey: each spelling parses to its kind and back; bad ones are
// refused, and Read names SQSONCE_KEY without quoting it.
func TestParseKey(t *testing.T) {
	for v, want := range map[string]envvars.KeySource{
		"body:order_id":                    {Kind: envvars.KeyBody, Path: []string{"order_id"}},
		"body: order_id":                   {Kind: envvars.KeyBody, Path: []string{"order_id"}}, // the space is trimmed
		" body : order . id ":              {Kind: envvars.KeyBody, Path: []string{"order", "id"}},
		"body:customer_id, amount":         {Kind: envvars.KeySubset, Names: []string{"customer_id", "amount"}},
		"body:order.id":                    {Kind: envvars.KeyBody, Path: []string{"order", "id"}},
		"body:customer_id,amount":          {Kind: envvars.KeySubset, Names: []string{"customer_id", "amount"}},
		"jmespath:powertools_json(body).a": {Kind: envvars.KeyJMESPath, Expr: "powertools_json(body).a"},
	} {
		got, err := envvars.ParseKey(v)
		if err != nil || got.Kind != want.Kind || !slices.Equal(got.Path, want.Path) || !slices.Equal(got.Names, want.Names) || got.Expr != want.Expr {
			t.Errorf("ParseKey(%q) = %+v, %v; want %+v", v, got, err, want)
		}
		if got.String() != v && !strings.Contains(v, " ") {
			t.Errorf("ParseKey(%q).String() = %q", v, got.String())
		}
	}
	for _, v := range []string{"order_id", "body:", "header:x", "body:a,", "body:a..b", "body:a.b,c"} {
		if k, err := envvars.ParseKey(v); err == nil {
			t.Errorf("ParseKey(%q) accepted: %+v", v, k)
		}
		_, err := envvars.Read(env(map[string]string{envvars.EnvTable: "t", envvars.EnvNamespace: "n", envvars.EnvKey: v}))
		if err == nil || !strings.Contains(err.Error(), envvars.EnvKey) {
			t.Errorf("Read with %s=%q: %v, want an error naming it", envvars.EnvKey, v, err)
		}
	}
}
