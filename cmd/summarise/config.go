package main

import (
	"errors"
	"fmt"
	"strconv"
	"strings"
	"time"

	"github.com/sqsonce/sqsonce/handler"
	"github.com/sqsonce/sqsonce/middleware/batch"
	"github.com/sqsonce/sqsonce/middleware/idempotency"
	"github.com/sqsonce/sqsonce/middleware/idempotency/driver"
	"github.com/sqsonce/sqsonce/middleware/lambdaenv"
	"github.com/sqsonce/sqsonce/middleware/lambdaenv/envvars"
)

// The environment contract, shared with infra (which sets the first group).
const (
	envTable            = envvars.EnvTable            // idempotency table (DynamoDB store); required inside Lambda
	envSummariesTable   = "SQSONCE_SUMMARIES_TABLE"   // summaries table, partition key "id" (S); optional
	envNamespace        = envvars.EnvNamespace        // record id prefix; default "summarise"
	envExpiresAfter     = envvars.EnvExpiresAfter     // Go duration; default 15 days (idempotency.Config.ExpiresAfter)
	envQueueWindow      = envvars.EnvQueueWindow      // Go duration: the queue's window; a shorter expiry is refused
	envProvider         = "SQSONCE_PROVIDER"          // stub | bedrock | openai; default stub
	envModel            = "SQSONCE_MODEL"             // default model for requests that name none
	envDocumentsBucket  = "SQSONCE_DOCUMENTS_BUCKET"  // S3 documents; else a local folder
	envDocumentsPrefix  = "SQSONCE_DOCUMENTS_PREFIX"  // S3 key prefix
	envConcurrency      = "SQSONCE_CONCURRENCY"       // records in flight per batch; default batch.DefaultConcurrency
	envMinRemaining     = envvars.EnvMinRemaining     // Go duration: time left before the deadline for a record to start; default 90s
	envRequestLog       = "SQSONCE_REQUEST_LOG"       // request log file (JSON lines); else log lines
	envDynamoDBEndpoint = envvars.EnvDynamoDBEndpoint // DynamoDB endpoint override, e.g. moto's
	envDocumentsDir     = "SQSONCE_DOCUMENTS_DIR"     // local documents folder; default samples/documents outside Lambda
	envStubDelay        = "SQSONCE_STUB_DELAY"        // Go duration: how long each stub call takes
	envOpenAIBaseURL    = "OPENAI_BASE_URL"           // e.g. https://api.openai.com/v1
	envOpenAIAPIKey     = "OPENAI_API_KEY"            // sent as a bearer token
	envStore            = "SQSONCE_STORE"             // memory | dynamodb | redis | postgres; default dynamodb inside Lambda, memory outside
	envRedisURL         = "SQSONCE_REDIS_URL"         // redis:// or rediss:// URL (Redis store)
	envPostgresURL      = "SQSONCE_POSTGRES_URL"      // postgres:// URL or DSN (PostgreSQL store)
	envPacing           = "SQSONCE_PACING"            // on | off: paced redelivery of failed records; default on inside Lambda, off outside
	envDeadLetter       = "SQSONCE_DEAD_LETTER"       // on | off: permanent failures to the dead-letter queue at once; default on inside Lambda, off outside
	envSQSEndpoint      = "SQSONCE_SQS_ENDPOINT"      // SQS endpoint override for pacing and dead-lettering, e.g. moto's
	envStrict           = envvars.EnvStrict           // true | false: strict mode (idempotency.Config.Strict); default false
	envPartitionKey     = envvars.EnvPartitionKey     // the table's partition key attribute with a sort key; default driver.AttrID
	envSortKey          = envvars.EnvSortKey          // the table's sort key attribute: records keyed as Powertools' sort_key_attr
	envStaticPartition  = envvars.EnvStaticPartition  // the partition value of every record with a sort key (Powertools' static_pk_value)
	envRuntimeAPI       = "AWS_LAMBDA_RUNTIME_API"    // set by Lambda and by the runtime emulator
	envMetricsNamespace = envvars.EnvMetricsNamespace // the metrics' CloudWatch namespace; default middleware/metrics.DefaultNamespace
	envMetricsService   = envvars.EnvMetricsService   // the metrics' Service dimension; default the namespace
	envSealKey          = envvars.EnvSealKey          // a KMS key's ARN: results sealed under it (kmsseal); default unsealed
	envTenancy          = envvars.EnvTenancy          // invocation | message-group | off: idempotency.Config.Tenancy; default invocation
	envKey              = envvars.EnvKey              // the construct's key source: refused, summarise keys by handler.RequestKey
)

// Store and provider names.
const (
	storeMemory     = "memory"
	storeDynamoDB   = "dynamodb"
	storeRedis      = "redis"
	storePostgres   = "postgres"
	providerStub    = "stub"
	providerBedrock = "bedrock"
	providerOpenAI  = "openai"
)

// defaultDocumentsDir is the local documents folder outside Lambda.
const defaultDocumentsDir = "samples/documents"

// defaultStubModel is the model a stub run uses when none is configured.
const defaultStubModel = "stub-model"

// defaultMinRemaining is the time that must be left before the invocation's
// deadline for a record to start: more than one model call takes (60–90 s
// for a long document), so that a record is never started only to be
// killed half way through its call, billed, and called again on the
// redelivery. It needs a function timeout above it (infra sets one of
// twice as much).
const defaultMinRemaining = 90 * time.Second

// config is the whole configuration, from the environment and, outside
// Lambda, the command line.
type config struct {
	Lambda           bool
	Store            string
	Table            string
	SummariesTable   string
	Namespace        string
	ExpiresAfter     time.Duration
	QueueWindow      time.Duration
	Provider         string
	Model            string
	DocumentsBucket  string
	DocumentsPrefix  string
	DocumentsDir     string
	Concurrency      int
	MinRemaining     time.Duration // zero: start records until the deadline itself
	RequestLog       string
	DynamoDBEndpoint string
	RedisURL         string
	PostgresURL      string
	StubDelay        time.Duration
	OpenAIBaseURL    string
	OpenAIAPIKey     string
	Pacing           bool // change failed records' visibility (batch.Options.Pacing) through SQS
	DeadLetter       bool // move permanent failures to the dead-letter queue (batch.Options.DeadLetter) through SQS
	SQSEndpoint      string
	Strict           bool                // run every record in strict mode (idempotency.Config.Strict)
	MetricsNamespace string              // the metrics' namespace; empty: the library's default
	MetricsService   string              // the metrics' Service dimension; empty: Namespace
	SortKey          *sortKey            // the DynamoDB table's composite key; nil: the record id is the partition key
	SealKey          string              // the KMS key results are sealed under (idempotency.Config.Sealer); empty: unsealed
	Tenancy          idempotency.Tenancy // what scopes a record id (idempotency.Config.Tenancy); zero: TenancyInvocation

	// testProvider and testStore, set by tests only, replace the provider
	// and the idempotency store named above: the seam for injected faults.
	testProvider handler.Provider
	testStore    driver.Store
	// testMover, set by tests only, takes the permanent failures in place
	// of the dead-letter queue.
	testMover batch.DeadLetterMover
}

// loadConfig reads the environment through getenv. The store is DynamoDB
// inside Lambda and memory outside, unless SQSONCE_STORE says otherwise;
// outside Lambda, store and provider (when not empty) override the
// environment, as the -store and -provider flags do. Every problem is
// reported at once.
func loadConfig(getenv func(string) string, store, provider string) (config, error) {
	var errs []error
	c := config{
		Lambda:           getenv(envRuntimeAPI) != "",
		Table:            getenv(envTable),
		SummariesTable:   getenv(envSummariesTable),
		Namespace:        getenv(envNamespace),
		Provider:         getenv(envProvider),
		Model:            getenv(envModel),
		DocumentsBucket:  getenv(envDocumentsBucket),
		DocumentsPrefix:  getenv(envDocumentsPrefix),
		DocumentsDir:     getenv(envDocumentsDir),
		RequestLog:       getenv(envRequestLog),
		DynamoDBEndpoint: getenv(envDynamoDBEndpoint),
		RedisURL:         getenv(envRedisURL),
		PostgresURL:      getenv(envPostgresURL),
		OpenAIBaseURL:    getenv(envOpenAIBaseURL),
		OpenAIAPIKey:     getenv(envOpenAIAPIKey),
		MinRemaining:     defaultMinRemaining,
		SQSEndpoint:      getenv(envSQSEndpoint),
		MetricsNamespace: getenv(envMetricsNamespace),
		MetricsService:   getenv(envMetricsService),
		SealKey:          getenv(envSealKey),
	}
	duration := func(name string, dst *time.Duration) {
		v := getenv(name)
		if v == "" {
			return
		}
		d, err := time.ParseDuration(v)
		if err != nil || d < 0 {
			errs = append(errs, fmt.Errorf("%s=%q is not a non-negative Go duration (e.g. 360h)", name, v))
			return
		}
		*dst = d
	}
	duration(envExpiresAfter, &c.ExpiresAfter)
	duration(envQueueWindow, &c.QueueWindow)
	duration(envStubDelay, &c.StubDelay)
	duration(envMinRemaining, &c.MinRemaining)
	if v := getenv(envConcurrency); v != "" {
		n, err := strconv.Atoi(v)
		if err != nil || n < 1 {
			errs = append(errs, fmt.Errorf("%s=%q is not a positive integer", envConcurrency, v))
		}
		c.Concurrency = n
	}
	if c.Namespace == "" {
		c.Namespace = "summarise"
	}

	c.Store = getenv(envStore)
	if store != "" && !c.Lambda {
		c.Store = store
	}
	if c.Store == "" {
		c.Store = storeMemory
		if c.Lambda {
			c.Store = storeDynamoDB
		}
	}
	if provider != "" && !c.Lambda {
		c.Provider = provider
	}
	if c.Provider == "" {
		c.Provider = providerStub
	}

	// Pacing calls SQS with the records' receipt handles: on by default
	// where they are real (inside Lambda), off for the local runner's
	// event files.
	// So does moving permanent failures to the dead-letter queue.
	for _, s := range []struct {
		env string
		on  *bool
	}{{envPacing, &c.Pacing}, {envDeadLetter, &c.DeadLetter}} {
		switch v := getenv(s.env); v {
		case "":
			*s.on = c.Lambda
		case "on":
			*s.on = true
		case "off":
		default:
			errs = append(errs, fmt.Errorf("%s=%q is not on or off", s.env, v))
		}
	}

	switch c.Store {
	case storeMemory:
	case storeDynamoDB:
		if c.Table == "" {
			errs = append(errs, fmt.Errorf("%s is required with the DynamoDB store", envTable))
		}
	case storeRedis:
		if c.RedisURL == "" {
			errs = append(errs, fmt.Errorf("%s is required with the Redis store", envRedisURL))
		}
	case storePostgres:
		if c.PostgresURL == "" {
			errs = append(errs, fmt.Errorf("%s is required with the PostgreSQL store", envPostgresURL))
		}
	default:
		errs = append(errs, fmt.Errorf("store %q (%s or -store) is not one of %s, %s, %s, %s",
			c.Store, envStore, storeMemory, storeDynamoDB, storeRedis, storePostgres))
	}
	switch c.Provider {
	case providerStub:
		if c.Model == "" {
			c.Model = defaultStubModel
		}
	case providerBedrock:
	case providerOpenAI:
		if c.OpenAIBaseURL == "" {
			errs = append(errs, fmt.Errorf("%s is required with the openai provider", envOpenAIBaseURL))
		}
	default:
		errs = append(errs, fmt.Errorf("%s=%q is not one of %s, %s, %s", envProvider, c.Provider, providerStub, providerBedrock, providerOpenAI))
	}
	if c.StubDelay > 0 && c.Provider != providerStub {
		errs = append(errs, fmt.Errorf("%s is only for the stub provider", envStubDelay))
	}
	if c.DocumentsBucket == "" && c.DocumentsDir == "" {
		if c.Lambda {
			errs = append(errs, fmt.Errorf("%s (or %s) is required inside Lambda", envDocumentsBucket, envDocumentsDir))
		}
		c.DocumentsDir = defaultDocumentsDir
	}
	if c.DocumentsBucket != "" && getenv(envDocumentsDir) != "" {
		errs = append(errs, fmt.Errorf("set %s or %s, not both", envDocumentsBucket, envDocumentsDir))
	}
	if c.SummariesTable != "" && c.Store != storeDynamoDB {
		c.SummariesTable = "" // summaries go to DynamoDB only with its store; the memory store keeps them in memory
	}
	switch v := getenv(envStrict); v {
	case "", "false":
	case "true":
		c.Strict = true
	default:
		errs = append(errs, fmt.Errorf("%s=%q is not true or false", envStrict, v))
	}
	// The construct sets SQSONCE_TENANCY (Props.Tenancy), and sqsonce-ops
	// scopes the ids it computes by it: the guard must scope its ids alike.
	if t, err := lambdaenv.Tenancy(getenv(envTenancy)); err != nil {
		errs = append(errs, err)
	} else {
		c.Tenancy = t
	}
	// The construct sets SQSONCE_KEY (Props.KeySource), and sqsonce-ops
	// computes ids by it. Summarise keys by handler.RequestKey, the body's
	// idempotency_key else a digest of the work, which no key source
	// spells; unset, sqsonce-ops takes the same key (handler.Key). A key
	// source is refused rather than ignored: the tool's ids would not be
	// the function's.
	if v := getenv(envKey); v != "" {
		errs = append(errs, fmt.Errorf("%s=%q: summarise keys each request by %s, else a digest of the work (handler.RequestKey), "+
			"which no key source spells: unset it (Props.KeySource), and sqsonce-ops takes summarise's key", envKey, v, handler.KeyField))
	}
	// sqsonce-ops reads these as the function's settings (the construct's
	// Environment may set them), and summarise applies none: its ids are
	// native, its data JSON, its Redis keys unprefixed on one server. Any
	// other value is refused rather than ignored, as SQSONCE_KEY is.
	for _, v := range []struct{ name, def string }{
		{envvars.EnvFormat, envvars.FormatNative}, {envvars.EnvDataFormat, envvars.DataJSON},
		{envvars.EnvRedisKeyPrefix, ""}, {envvars.EnvRedisKeyPrefixUnseparated, "off"}, {envvars.EnvRedisCluster, "off"},
	} {
		if got := getenv(v.name); got != "" && got != v.def {
			errs = append(errs, fmt.Errorf("%s=%q: summarise does not apply it, and sqsonce-ops would compute ids and read records by it: unset it", v.name, got))
		}
	}
	sk, err := loadSortKey(getenv, c.Store)
	if err != nil {
		errs = append(errs, err)
	}
	c.SortKey = sk
	if err := errors.Join(errs...); err != nil {
		return config{}, fmt.Errorf("summarise: bad configuration:\n  %s", strings.ReplaceAll(err.Error(), "\n", "\n  "))
	}
	return c, nil
}

// sortKey is the composite primary key of a DynamoDB table shared with
// Powertools for AWS Lambda (dynamostore.WithSortKey), as infra's
// idempotentconsumer sets it.
type sortKey struct {
	PartitionKey string // the partition key attribute
	Attr         string // the sort key attribute, which holds the record id
	Partition    string // the partition value of every record
}

// loadSortKey reads SQSONCE_SORT_KEY, SQSONCE_PARTITION_KEY and
// SQSONCE_STATIC_PARTITION: all three or none but the partition key
// (default driver.AttrID), with the DynamoDB store only. Records
// written under another key are not found, so an inconsistent set is
// refused rather than guessed at.
func loadSortKey(getenv func(string) string, store string) (*sortKey, error) {
	k := sortKey{PartitionKey: getenv(envPartitionKey), Attr: getenv(envSortKey), Partition: getenv(envStaticPartition)}
	if k == (sortKey{}) {
		return nil, nil
	}
	var errs []error
	switch {
	case k.Attr == "":
		errs = append(errs, fmt.Errorf("%s and %s are set only with %s, the sort key attribute", envPartitionKey, envStaticPartition, envSortKey))
	case k.Partition == "":
		errs = append(errs, fmt.Errorf("%s is required with %s: the partition value of every record (Powertools' static_pk_value)", envStaticPartition, envSortKey))
	}
	if k.PartitionKey == "" {
		k.PartitionKey = driver.AttrID
	}
	if k.Attr != "" && k.Attr == k.PartitionKey {
		errs = append(errs, fmt.Errorf("%s=%q and %s=%q: the sort key and the partition key cannot be one attribute", envSortKey, k.Attr, envPartitionKey, k.PartitionKey))
	}
	if store != storeDynamoDB {
		errs = append(errs, fmt.Errorf("%s, %s and %s are for the DynamoDB store, not %s", envSortKey, envPartitionKey, envStaticPartition, store))
	}
	if err := errors.Join(errs...); err != nil {
		return nil, err
	}
	return &k, nil
}
