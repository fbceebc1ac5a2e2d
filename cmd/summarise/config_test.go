package main

import (
	"strings"
	"testing"
	"time"

	"github.com/sqsonce/sqsonce/middleware/lambdaenv/envvars"
)

func env(kv map[string]string) func(string) string {
	return func(k string) string { return kv[k] }
}

func TestLoadConfig(t *testing.T) {
	tests := []struct {
		name     string
		env      map[string]string
		store    string
		provider string
		check    func(t *testing.T, c config)
	}{
		{"local defaults", nil, "", "", func(t *testing.T, c config) {
			if c.Lambda || c.Store != storeMemory || c.Provider != providerStub || c.Namespace != "summarise" ||
				c.Model != defaultStubModel || c.DocumentsDir != defaultDocumentsDir || c.Concurrency != 0 ||
				c.MinRemaining != 90*time.Second {
				t.Errorf("config = %+v", c)
			}
		}},
		{"lambda uses DynamoDB and the env", map[string]string{
			envRuntimeAPI: "127.0.0.1:9001", envTable: "records", envSummariesTable: "summaries", envNamespace: "prod-summarise",
			envExpiresAfter: "360h", envQueueWindow: "98h", envProvider: "bedrock", envModel: "anthropic.claude-3-haiku-20240307-v1:0",
			envDocumentsBucket: "docs", envDocumentsPrefix: "in/", envConcurrency: "4", envMinRemaining: "2m",
		}, "memory", "stub", func(t *testing.T, c config) {
			want := config{Lambda: true, Store: storeDynamoDB, Table: "records", SummariesTable: "summaries", Namespace: "prod-summarise",
				ExpiresAfter: 360 * time.Hour, QueueWindow: 98 * time.Hour, Provider: providerBedrock,
				Model: "anthropic.claude-3-haiku-20240307-v1:0", DocumentsBucket: "docs", DocumentsPrefix: "in/", Concurrency: 4,
				MinRemaining: 2 * time.Minute, Pacing: true, DeadLetter: true}
			if c != want {
				t.Errorf("config\n got %+v\nwant %+v", c, want)
			}
		}},
		{"flags override the env outside Lambda", map[string]string{envProvider: "bedrock", envTable: "t"}, "dynamodb", "stub", func(t *testing.T, c config) {
			if c.Store != storeDynamoDB || c.Provider != providerStub {
				t.Errorf("config = %+v", c)
			}
		}},
		{"memory store inside Lambda, when asked for", map[string]string{envRuntimeAPI: "x", envStore: "memory", envDocumentsDir: "d"}, "dynamodb", "", func(t *testing.T, c config) {
			if !c.Lambda || c.Store != storeMemory || c.Table != "" {
				t.Errorf("config = %+v", c)
			}
		}},
		{"redis store with its URL", map[string]string{envStore: "redis", envRedisURL: "redis://h:6379/0", envSummariesTable: "s"}, "", "", func(t *testing.T, c config) {
			if c.Store != storeRedis || c.RedisURL != "redis://h:6379/0" || c.SummariesTable != "" {
				t.Errorf("store %q url %q summaries %q, want redis with its URL and no DynamoDB summaries", c.Store, c.RedisURL, c.SummariesTable)
			}
		}},
		{"postgres store with its URL", map[string]string{envRuntimeAPI: "x", envStore: "postgres", envPostgresURL: "postgres://h/db", envDocumentsDir: "d"}, "", "", func(t *testing.T, c config) {
			if c.Store != storePostgres || c.PostgresURL != "postgres://h/db" {
				t.Errorf("store %q url %q, want postgres with its URL", c.Store, c.PostgresURL)
			}
		}},
		{"store from the env outside Lambda", map[string]string{envStore: "dynamodb", envTable: "t"}, "", "", func(t *testing.T, c config) {
			if c.Store != storeDynamoDB {
				t.Errorf("config = %+v", c)
			}
		}},
		{"summaries table ignored with the memory store", map[string]string{envSummariesTable: "s"}, "", "", func(t *testing.T, c config) {
			if c.SummariesTable != "" {
				t.Errorf("config = %+v", c)
			}
		}},
		{"no deadline margin", map[string]string{envMinRemaining: "0s"}, "", "", func(t *testing.T, c config) {
			if c.MinRemaining != 0 {
				t.Errorf("MinRemaining = %v, want 0", c.MinRemaining)
			}
		}},
		{"pacing off inside Lambda", map[string]string{envRuntimeAPI: "x", envTable: "t", envDocumentsDir: "d", envPacing: "off"}, "", "", func(t *testing.T, c config) {
			if c.Pacing {
				t.Errorf("Pacing = true with %s=off", envPacing)
			}
		}},
		{"pacing on outside Lambda", map[string]string{envPacing: "on", envSQSEndpoint: "http://127.0.0.1:1"}, "", "", func(t *testing.T, c config) {
			if !c.Pacing || c.SQSEndpoint != "http://127.0.0.1:1" {
				t.Errorf("config = %+v", c)
			}
		}},
		{"pacing off by default outside Lambda", nil, "", "", func(t *testing.T, c config) {
			if c.Pacing {
				t.Error("Pacing = true outside Lambda by default: the local runner's receipt handles are not real")
			}
		}},
		{"strict mode", map[string]string{envStrict: "true"}, "", "", func(t *testing.T, c config) {
			if !c.Strict {
				t.Errorf("Strict = false with %s=true", envStrict)
			}
		}},
		{"strict mode off", map[string]string{envStrict: "false"}, "", "", func(t *testing.T, c config) {
			if c.Strict || c.SortKey != nil {
				t.Errorf("config = %+v", c)
			}
		}},
		{"sort key, as the construct sets it", map[string]string{envRuntimeAPI: "x", envTable: "t", envDocumentsDir: "d",
			envPartitionKey: "pk", envSortKey: "sk", envStaticPartition: "orders#idempotency"}, "", "", func(t *testing.T, c config) {
			if c.SortKey == nil || *c.SortKey != (sortKey{PartitionKey: "pk", Attr: "sk", Partition: "orders#idempotency"}) {
				t.Errorf("SortKey = %+v", c.SortKey)
			}
		}},
		{"sort key with the default partition key", map[string]string{envTable: "t", envSortKey: "sk", envStaticPartition: "p"}, "dynamodb", "", func(t *testing.T, c config) {
			if c.SortKey == nil || *c.SortKey != (sortKey{PartitionKey: "id", Attr: "sk", Partition: "p"}) {
				t.Errorf("SortKey = %+v", c.SortKey)
			}
		}},
		{"openai", map[string]string{envOpenAIBaseURL: "http://127.0.0.1:1/v1", envOpenAIAPIKey: "k"}, "", "openai", func(t *testing.T, c config) {
			if c.Provider != providerOpenAI || c.OpenAIBaseURL == "" || c.OpenAIAPIKey != "k" || c.Model != "" {
				t.Errorf("config = %+v", c)
			}
		}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			c, err := loadConfig(env(tt.env), tt.store, tt.provider)
			if err != nil {
				t.Fatal(err)
			}
			tt.check(t, c)
		})
	}
}

func TestLoadConfigErrors(t *testing.T) {
	tests := []struct {
		name     string
		env      map[string]string
		store    string
		provider string
		want     []string
	}{
		{"lambda without table or documents", map[string]string{envRuntimeAPI: "x"}, "", "", []string{envTable, envDocumentsBucket}},
		{"dynamodb store without table", nil, "dynamodb", "", []string{envTable}},
		{"unknown store", nil, "valkey", "", []string{`store "valkey"`}},
		{"redis store without URL", nil, "redis", "", []string{envRedisURL}},
		{"postgres store without URL", map[string]string{envStore: "postgres"}, "", "", []string{envPostgresURL}},
		{"unknown store in the env", map[string]string{envStore: "s3"}, "", "", []string{envStore, `"s3"`}},
		{"unknown provider", map[string]string{envProvider: "gemini"}, "", "", []string{envProvider, "gemini"}},
		{"openai without base URL", nil, "", "openai", []string{envOpenAIBaseURL}},
		{"bad durations", map[string]string{envExpiresAfter: "15 days", envQueueWindow: "-1h", envStubDelay: "x"}, "", "",
			[]string{envExpiresAfter, envQueueWindow, envStubDelay}},
		{"bad concurrency", map[string]string{envConcurrency: "0"}, "", "", []string{envConcurrency}},
		{"negative deadline margin", map[string]string{envMinRemaining: "-5s"}, "", "", []string{envMinRemaining, `"-5s"`}},
		{"deadline margin without a unit", map[string]string{envMinRemaining: "90"}, "", "", []string{envMinRemaining, `"90"`}},
		{"stub delay with bedrock", map[string]string{envStubDelay: "1s"}, "", "bedrock", []string{envStubDelay}},
		{"bad pacing", map[string]string{envPacing: "yes"}, "", "", []string{envPacing, `"yes"`}},
		{"bad dead letter", map[string]string{envDeadLetter: "yes"}, "", "", []string{envDeadLetter, `"yes"`}},
		{"bucket and dir", map[string]string{envDocumentsBucket: "b", envDocumentsDir: "d"}, "", "", []string{"not both"}},
		{"bad strict", map[string]string{envStrict: "on"}, "", "", []string{envStrict, `"on"`}},
		{"sort key without its partition", map[string]string{envTable: "t", envSortKey: "sk"}, "dynamodb", "", []string{envStaticPartition, "required"}},
		{"partition without a sort key", map[string]string{envTable: "t", envPartitionKey: "pk", envStaticPartition: "p"}, "dynamodb", "",
			[]string{envPartitionKey, envStaticPartition, "only with " + envSortKey}},
		{"sort key is the partition key", map[string]string{envTable: "t", envSortKey: "pk", envPartitionKey: "pk", envStaticPartition: "p"}, "dynamodb", "",
			[]string{envSortKey, envPartitionKey, "one attribute"}},
		{"sort key with another store", map[string]string{envSortKey: "sk", envStaticPartition: "p"}, "", "", []string{envSortKey, "DynamoDB store, not memory"}},
		{"bad tenancy", map[string]string{envTenancy: "bogus", envStrict: "on"}, "", "", []string{envTenancy, `"message-group"`, envStrict}},
		{"a key source", map[string]string{envKey: "body:order_id"}, "", "", []string{envKey, `"body:order_id"`, "handler.RequestKey", "Props.KeySource"}},
		// sqsonce-ops reads these as the function's settings: ignored, its
		// ids and reads would not be the function's.
		{"a key format", map[string]string{envvars.EnvFormat: "powertools-python"}, "", "", []string{envvars.EnvFormat, `"powertools-python"`, "sqsonce-ops"}},
		{"a data format", map[string]string{envTable: "t", envvars.EnvDataFormat: "powertools-typescript"}, "dynamodb", "", []string{envvars.EnvDataFormat, `"powertools-typescript"`}},
		{"a redis key prefix", map[string]string{envRedisURL: "redis://127.0.0.1:1", envvars.EnvRedisKeyPrefix: "p"}, "redis", "", []string{envvars.EnvRedisKeyPrefix}},
		{"an unseparated prefix", map[string]string{envvars.EnvRedisKeyPrefixUnseparated: "on"}, "", "", []string{envvars.EnvRedisKeyPrefixUnseparated}},
		{"a redis cluster", map[string]string{envvars.EnvRedisCluster: "on"}, "", "", []string{envvars.EnvRedisCluster}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := loadConfig(env(tt.env), tt.store, tt.provider)
			if err == nil {
				t.Fatal("no error")
			}
			for _, w := range tt.want {
				if !strings.Contains(err.Error(), w) {
					t.Errorf("error %q does not mention %q", err, w)
				}
			}
		})
	}
}

// TestLoadConfigOpsSettingsAtDefault: the settings sqsonce-ops reads that
// summarise does not apply are taken at their defaults, which are
// summarise's own.
func TestLoadConfigOpsSettingsAtDefault(t *testing.T) {
	c, err := loadConfig(env(map[string]string{envvars.EnvFormat: "native", envvars.EnvDataFormat: "json",
		envvars.EnvRedisKeyPrefixUnseparated: "off", envvars.EnvRedisCluster: "off"}), "", "")
	if err != nil {
		t.Fatal(err)
	}
	if c.Store != storeMemory {
		t.Errorf("store %q, want %q", c.Store, storeMemory)
	}
}
