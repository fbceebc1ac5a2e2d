package main

import (
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"os"
	"slices"
	"strings"

	"github.com/aws/aws-sdk-go-v2/aws"
	awsconfig "github.com/aws/aws-sdk-go-v2/config"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/kms"
	"github.com/aws/aws-sdk-go-v2/service/sqs"
	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/redis/go-redis/v9"

	"github.com/sqsonce/sqsonce/internal/redact"
	"github.com/sqsonce/sqsonce/middleware/idempotency"
	"github.com/sqsonce/sqsonce/middleware/idempotency/driver"
	"github.com/sqsonce/sqsonce/middleware/idempotency/dynamostore"
	"github.com/sqsonce/sqsonce/middleware/idempotency/kmsseal"
	"github.com/sqsonce/sqsonce/middleware/idempotency/pgstore"
	"github.com/sqsonce/sqsonce/middleware/idempotency/redisstore"
	"github.com/sqsonce/sqsonce/middleware/lambdaenv"
	"github.com/sqsonce/sqsonce/middleware/lambdaenv/envvars"
)

// The environment: the names cmd/summarise reads and infra's construct
// sets, with the app's meaning, so that an operator can reuse the
// function's environment. Flags override the environment.
const (
	envStore            = envvars.EnvStore            // dynamodb | redis | postgres; default dynamodb
	envTable            = envvars.EnvTable            // the DynamoDB table (the app's PostgreSQL table is pgstore's default)
	envNamespace        = envvars.EnvNamespace        // record id prefix; required
	envKey              = envvars.EnvKey              // the function's key source (envvars.KeySource)
	envTenancy          = envvars.EnvTenancy          // the function's tenancy: invocation | message-group | off
	envStrict           = envvars.EnvStrict           // true | false: the function's strict mode (idempotency.Config.Strict); default false
	envDynamoDBEndpoint = envvars.EnvDynamoDBEndpoint // DynamoDB endpoint override
	envSQSEndpoint      = envvars.EnvSQSEndpoint      // SQS endpoint override
	envRedisURL         = envvars.EnvRedisURL         // redis:// or rediss:// URL
	envPostgresURL      = envvars.EnvPostgresURL      // postgres:// URL or DSN
	envPartitionKey     = envvars.EnvPartitionKey     // dynamostore.Attributes.ID; default id
	envSortKey          = envvars.EnvSortKey          // dynamostore.SortKey.Attr
	envStaticPartition  = envvars.EnvStaticPartition  // dynamostore.SortKey.Partition (Powertools' static_pk_value)
	envSealKey          = envvars.EnvSealKey          // the KMS key the function seals results with (kmsseal)
)

// The store's and the guard's settings a function reads through lambdaenv
// (cmd/summarise does not have them).
const (
	envRedisCluster     = envvars.EnvRedisCluster              // on | off: SQSONCE_REDIS_URL names a Redis Cluster
	envRedisKeyPrefix   = envvars.EnvRedisKeyPrefix            // redisstore.WithKeyPrefix
	envRedisUnseparated = envvars.EnvRedisKeyPrefixUnseparated // on: redisstore.WithUnseparatedKeyPrefix
	envFormat           = envvars.EnvFormat                    // native | powertools-python | powertools-typescript
	envDataFormat       = envvars.EnvDataFormat                // json | powertools-python | powertools-typescript
)

// envNames are the variables the tool reads: the app's, then its own.
var envNames = []string{
	envStore, envTable, envNamespace, envDynamoDBEndpoint, envSQSEndpoint, envRedisURL, envPostgresURL,
	envPartitionKey, envSortKey, envStaticPartition, envKey, envTenancy, envStrict, envSealKey,
	envRedisCluster, envRedisKeyPrefix, envRedisUnseparated, envFormat, envDataFormat,
}

// envRenamed are variables earlier releases of the tool read, by the name
// that replaced them: set, they are refused rather than ignored.
var envRenamed = map[string]string{"SQSONCE_SORT_KEY_PARTITION": envStaticPartition}

// Store names.
const (
	storeDynamoDB = envvars.StoreDynamoDB
	storeRedis    = envvars.StoreRedis
	storePostgres = envvars.StorePostgres
)

// globals are the flags every command takes.
type globals struct {
	store            string
	table            string
	endpoint         string
	dynamoDBEndpoint string
	sqsEndpoint      string
	redisURL         string
	redisURLFlag     string // --redis-url, which must carry no password
	redisURLFile     string // --redis-url-file
	redisCluster     bool
	redisKeyPrefix   string
	redisUnseparated bool
	postgresURL      string
	postgresURLFlag  string // --postgres-url, which must carry no password
	postgresURLFile  string // --postgres-url-file
	namespace        string
	keySource        string
	tenancy          string
	strict           bool   // the function runs in strict mode: redrive classes a lapsed lease quarantined
	strictEnv        string // $SQSONCE_STRICT as set, checked by check
	format           string
	dataFormat       string
	partitionKey     string
	sortKey          string
	staticPartition  string
	functionName     string
	sealKey          string
	json             bool
	// renamed are the variables of envRenamed that are set.
	renamed []string
}

// defaults reads the environment.
func defaults(getenv func(string) string) globals {
	or := func(name, def string) string {
		if v := getenv(name); v != "" {
			return v
		}
		return def
	}
	g := globals{
		store:            or(envStore, storeDynamoDB),
		table:            getenv(envTable),
		dynamoDBEndpoint: getenv(envDynamoDBEndpoint),
		sqsEndpoint:      getenv(envSQSEndpoint),
		redisURL:         getenv(envRedisURL),
		redisCluster:     getenv(envRedisCluster) == "on",
		redisKeyPrefix:   getenv(envRedisKeyPrefix),
		redisUnseparated: getenv(envRedisUnseparated) == "on",
		postgresURL:      getenv(envPostgresURL),
		namespace:        getenv(envNamespace),
		keySource:        getenv(envKey),
		tenancy:          or(envTenancy, envvars.TenancyInvocation),
		strict:           getenv(envStrict) == "true",
		strictEnv:        getenv(envStrict),
		format:           or(envFormat, envvars.FormatNative),
		dataFormat:       or(envDataFormat, envvars.DataJSON),
		partitionKey:     or(envPartitionKey, driver.AttrID),
		sortKey:          getenv(envSortKey),
		staticPartition:  getenv(envStaticPartition),
		sealKey:          getenv(envSealKey),
	}
	for old := range envRenamed {
		if getenv(old) != "" {
			g.renamed = append(g.renamed, old)
		}
	}
	slices.Sort(g.renamed)
	return g
}

// register adds the global flags to fs, their defaults as g holds them.
func (g *globals) register(fs *flag.FlagSet) {
	fs.StringVar(&g.store, "store", g.store, "the record store: dynamodb, redis or postgres ($"+envStore+")")
	fs.StringVar(&g.table, "table", g.table, "the DynamoDB table ($"+envTable+"), or the PostgreSQL table (default "+pgstore.DefaultTable+", as the app's)")
	fs.StringVar(&g.endpoint, "endpoint", g.endpoint, "DynamoDB and SQS endpoint override, e.g. moto's ($"+envDynamoDBEndpoint+", $"+envSQSEndpoint+")")
	// The URLs' defaults are not shown: they may hold a password.
	fs.StringVar(&g.redisURLFlag, "redis-url", "", "redis:// or rediss:// URL without a password ($"+envRedisURL+", which may hold one)")
	fs.StringVar(&g.redisURLFile, "redis-url-file", "", "a file holding the redis:// or rediss:// URL, password included")
	fs.BoolVar(&g.redisCluster, "redis-cluster", g.redisCluster, "the Redis URL names a Redis Cluster ($"+envRedisCluster+"=on)")
	fs.StringVar(&g.redisKeyPrefix, "redis-key-prefix", g.redisKeyPrefix, "redisstore.WithKeyPrefix ($"+envRedisKeyPrefix+")")
	fs.BoolVar(&g.redisUnseparated, "redis-key-prefix-unseparated", g.redisUnseparated, "the prefix is joined to the record id with no \"#\", as by redisstore.WithUnseparatedKeyPrefix (records of releases before v0.10.0; $"+envRedisUnseparated+"=on)")
	fs.StringVar(&g.postgresURLFlag, "postgres-url", "", "postgres:// URL or DSN without a password ($"+envPostgresURL+", which may hold one; or PGPASSWORD, ~/.pgpass)")
	fs.StringVar(&g.postgresURLFile, "postgres-url-file", "", "a file holding the postgres:// URL or DSN, password included")
	fs.StringVar(&g.namespace, "namespace", g.namespace, "the guard's Namespace, the record ids' prefix ($"+envNamespace+")")
	fs.StringVar(&g.tenancy, "tenancy", g.tenancy, "the function's tenancy, as the construct's Props.Tenancy: invocation, message-group (a fair queue's MessageGroupId scopes the id) or off ($"+envTenancy+")")
	fs.BoolVar(&g.strict, "strict", g.strict, "the function runs in strict mode, as the construct's Props.Strict: redrive counts a claim whose lease lapsed as quarantined, not run ($"+envStrict+"=true)")
	fs.StringVar(&g.keySource, "key-source", g.keySource, "the function's key source, as the construct's Props.KeySource: body:FIELD, body:FIELD,FIELD... or jmespath:EXPR ($"+envKey+")")
	fs.StringVar(&g.format, "format", g.format, "the guard's Format: native, powertools-python or powertools-typescript ($"+envFormat+")")
	fs.StringVar(&g.dataFormat, "data-format", g.dataFormat, "dynamostore.WithDataFormat: json, powertools-python or powertools-typescript ($"+envDataFormat+")")
	fs.StringVar(&g.partitionKey, "partition-key", g.partitionKey, "the DynamoDB table's partition key attribute ($"+envPartitionKey+")")
	fs.StringVar(&g.sortKey, "sort-key", g.sortKey, "dynamostore.WithSortKey: the table's sort key attribute ($"+envSortKey+")")
	fs.StringVar(&g.staticPartition, "static-partition", g.staticPartition, "dynamostore.SortKey.Partition, the partition value of every record with --sort-key ($"+envStaticPartition+")")
	fs.StringVar(&g.functionName, "function-name", g.functionName, "dynamostore.SortKey.FunctionName: with --sort-key and no --static-partition, Powertools' default partition idempotency#{function name}")
	fs.StringVar(&g.sealKey, "seal-key", g.sealKey, "the KMS key the function seals results with, as the construct's Props.SealKey: resolve seals what it writes, inspect opens a sealed result ($"+envSealKey+"; AWS_ENDPOINT_URL_KMS overrides KMS's endpoint)")
	fs.BoolVar(&g.json, "json", g.json, "print JSON")
}

// formats are the guard's formats by flag value: SQSONCE_FORMAT's names,
// mapped as the function maps them (lambdaenv.Format).
var formats = byName(lambdaenv.Format, envvars.FormatNative, envvars.FormatPowertoolsPython, envvars.FormatPowertoolsTypeScript)

// dataFormats are dynamostore's data formats by flag value:
// SQSONCE_DATA_FORMAT's names, mapped as the function maps them
// (lambdaenv.DataFormat).
var dataFormats = byName(lambdaenv.DataFormat, envvars.DataJSON, envvars.DataPowertoolsPython, envvars.DataPowertoolsTypeScript)

// byName maps each name to what parse makes of it.
func byName[T any](parse func(string) (T, error), names ...string) map[string]T {
	m := make(map[string]T, len(names))
	for _, n := range names {
		v, err := parse(n)
		if err != nil {
			panic(err)
		}
		m[n] = v
	}
	return m
}

// check reports every problem of g at once, without connecting.
func (g *globals) check() error {
	var errs []error
	if g.endpoint != "" {
		g.dynamoDBEndpoint, g.sqsEndpoint = g.endpoint, g.endpoint
	}
	errs = append(errs, connFlag("--redis-url", envRedisURL, g.redisURLFlag, g.redisURLFile, &g.redisURL),
		connFlag("--postgres-url", envPostgresURL, g.postgresURLFlag, g.postgresURLFile, &g.postgresURL))
	switch g.store {
	case storeDynamoDB:
		if g.table == "" {
			errs = append(errs, fmt.Errorf("--table ($%s) is required with the DynamoDB store", envTable))
		}
		if g.sortKey != "" && g.staticPartition == "" && g.functionName == "" {
			errs = append(errs, fmt.Errorf("--sort-key ($%s) needs --static-partition ($%s), or --function-name for Powertools' default partition", envSortKey, envStaticPartition))
		}
		if g.sortKey == "" && (g.staticPartition != "" || g.functionName != "") {
			errs = append(errs, fmt.Errorf("--static-partition ($%s) and --function-name are for a table with --sort-key ($%s)", envStaticPartition, envSortKey))
		}
	case storeRedis:
		if g.redisURL == "" {
			errs = append(errs, fmt.Errorf("--redis-url ($%s) is required with the Redis store", envRedisURL))
		}
	case storePostgres:
		if g.postgresURL == "" {
			errs = append(errs, fmt.Errorf("--postgres-url ($%s) is required with the PostgreSQL store", envPostgresURL))
		}
	default:
		errs = append(errs, fmt.Errorf("--store %q is not one of dynamodb, redis, postgres", g.store))
	}
	for _, old := range g.renamed {
		errs = append(errs, fmt.Errorf("$%s is now $%s, the name the app reads", old, envRenamed[old]))
	}
	if g.namespace == "" {
		errs = append(errs, fmt.Errorf("--namespace ($%s) is required: the function's namespace (the construct's Props.Namespace), the prefix of its record ids", envNamespace))
	}
	if _, err := lambdaenv.Tenancy(g.tenancy); err != nil {
		errs = append(errs, fmt.Errorf("--tenancy ($%s): %q is not %s, %s or %s", envTenancy, g.tenancy, envvars.TenancyInvocation, envvars.TenancyMessageGroup, envvars.TenancyOff))
	}
	if g.tenancy == envvars.TenancyMessageGroup && g.format != "" && g.format != "native" {
		// The function refuses it (idempotency.New): Powertools scopes no id by group.
		errs = append(errs, fmt.Errorf("--tenancy %s with --format %s: Powertools does not scope its ids by message group; the function refuses it too", g.tenancy, g.format))
	}
	if g.strictEnv != "" && g.strictEnv != "true" && g.strictEnv != "false" {
		// The function refuses it too (envvars.Read).
		errs = append(errs, fmt.Errorf("$%s=%q is not true or false", envStrict, g.strictEnv))
	}
	if g.keySource != "" {
		if _, err := envvars.ParseKey(g.keySource); err != nil {
			errs = append(errs, fmt.Errorf("--key-source ($%s): %w", envKey, err))
		}
	}
	if strings.Contains(g.namespace, "#") {
		errs = append(errs, fmt.Errorf("--namespace %q holds a \"#\", which ends the namespace in a record id", g.namespace))
	}
	if _, ok := formats[g.format]; !ok {
		errs = append(errs, fmt.Errorf("--format %q is not one of native, powertools-python, powertools-typescript", g.format))
	}
	if _, ok := dataFormats[g.dataFormat]; !ok {
		errs = append(errs, fmt.Errorf("--data-format %q is not one of json, powertools-python, powertools-typescript", g.dataFormat))
	}
	return errors.Join(errs...)
}

// connFlag sets *url from the flag named name (value) or the file it
// names (file), in place of the environment's: a password on the command
// line is refused, as every user of the machine reads it (ps) and the
// shell's history keeps it; in the environment or a file it is not.
func connFlag(name, env, value, file string, url *string) error {
	switch {
	case value != "" && file != "":
		return fmt.Errorf("%s and %s-file: give one", name, name)
	case value != "" && redact.HasPassword(value):
		return fmt.Errorf("%s carries a password, which any user of this machine can read: set $%s, or put the URL in a file (mode 0600) and give %s-file", name, env, name)
	case value != "":
		*url = value
	case file != "":
		b, err := os.ReadFile(file)
		if err != nil {
			return fmt.Errorf("%s-file: %w", name, err)
		}
		if *url = strings.TrimSpace(string(b)); *url == "" {
			return fmt.Errorf("%s-file %s is empty", name, file)
		}
	}
	return nil
}

// ops is what a command works with: the store, its inspector, the guard
// that computes record ids, and SQS when the command needs it.
type ops struct {
	g       globals
	store   driver.Store
	inspect driver.Inspector
	guard   *idempotency.Guard
	sealer  driver.Sealer // with --seal-key: the function's
	sqs     sqsAPI
	closers []func()
	stdout  io.Writer
	stderr  io.Writer
}

func (o *ops) close() {
	for _, c := range o.closers {
		c()
	}
}

// open connects to the configured store (and SQS when withSQS).
func open(ctx context.Context, g globals, withSQS bool, stdout, stderr io.Writer) (*ops, error) {
	o := &ops{g: g, stdout: stdout, stderr: stderr}
	logger := slog.New(slog.NewTextHandler(stderr, &slog.HandlerOptions{Level: slog.LevelWarn}))
	var awsCfg aws.Config
	if g.store == storeDynamoDB || withSQS || g.sealKey != "" {
		var err error
		if awsCfg, err = awsconfig.LoadDefaultConfig(ctx); err != nil {
			return nil, fmt.Errorf("AWS configuration: %w", err)
		}
	}
	switch g.store {
	case storeDynamoDB:
		db := dynamodb.NewFromConfig(awsCfg, func(opt *dynamodb.Options) {
			if g.dynamoDBEndpoint != "" {
				opt.BaseEndpoint = aws.String(g.dynamoDBEndpoint)
			}
		})
		opts := []dynamostore.Option{dynamostore.WithLogger(logger), dynamostore.WithDataFormat(dataFormats[g.dataFormat]),
			dynamostore.WithAttributes(dynamostore.Attributes{ID: g.partitionKey})}
		if g.sortKey != "" {
			opts = append(opts, dynamostore.WithSortKey(dynamostore.SortKey{Attr: g.sortKey, Partition: g.staticPartition, FunctionName: g.functionName}))
		}
		s, err := dynamostore.New(db, g.table, opts...)
		if err != nil {
			return nil, err
		}
		o.store, o.inspect = s, s
	case storeRedis:
		var rdb redis.UniversalClient
		if g.redisCluster {
			opts, err := redis.ParseClusterURL(g.redisURL)
			if err != nil {
				return nil, fmt.Errorf("--redis-url: %w", redact.ConnError(g.redisURL, err))
			}
			opts.ContextTimeoutEnabled = true
			rdb = redis.NewClusterClient(opts)
		} else {
			opts, err := redis.ParseURL(g.redisURL)
			if err != nil {
				return nil, fmt.Errorf("--redis-url: %w", redact.ConnError(g.redisURL, err))
			}
			opts.ContextTimeoutEnabled = true
			rdb = redis.NewClient(opts)
		}
		o.closers = append(o.closers, func() { _ = rdb.Close() })
		prefix := redisstore.WithKeyPrefix(g.redisKeyPrefix)
		if g.redisUnseparated {
			prefix = redisstore.WithUnseparatedKeyPrefix(g.redisKeyPrefix)
		}
		s, err := redisstore.New(ctx, rdb, prefix, redisstore.WithLogger(logger))
		if err != nil {
			o.close()
			return nil, fmt.Errorf("--redis-url: %w", redact.ConnError(g.redisURL, err))
		}
		o.store, o.inspect = s, s
	case storePostgres:
		pool, err := pgxpool.New(ctx, g.postgresURL)
		if err != nil {
			return nil, fmt.Errorf("--postgres-url: %w", redact.ConnError(g.postgresURL, err))
		}
		o.closers = append(o.closers, pool.Close)
		table := g.table
		if table == "" {
			table = pgstore.DefaultTable
		}
		s, err := pgstore.New(pool, pgstore.WithTable(table))
		if err != nil {
			o.close()
			return nil, err
		}
		o.store, o.inspect = s, s
	}
	if g.sealKey != "" {
		s, err := kmsseal.New(kms.NewFromConfig(awsCfg), g.sealKey)
		if err != nil {
			o.close()
			return nil, fmt.Errorf("--seal-key: %w", err)
		}
		o.sealer = s
	}
	// With the sealer, a store whose other readers would misread a sealed
	// result (a Powertools data format) is refused, as the function's is.
	guard, err := idempotency.New(idempotency.Config{Store: o.store, Namespace: g.namespace, Format: formats[g.format], Sealer: o.sealer})
	if err != nil {
		o.close()
		return nil, err
	}
	o.guard = guard
	if withSQS {
		o.sqs = wrapSQS(sqs.NewFromConfig(awsCfg, func(opt *sqs.Options) {
			if g.sqsEndpoint != "" {
				opt.BaseEndpoint = aws.String(g.sqsEndpoint)
			}
		}))
	}
	return o, nil
}

// Every store the tool opens has an Inspector: its release and resolve
// write with ReleaseInspected and CompleteInspected, fenced on the record
// as inspect read it.
var (
	_ driver.Inspector = (*dynamostore.Store)(nil)
	_ driver.Inspector = (*redisstore.Store)(nil)
	_ driver.Inspector = (*pgstore.Store)(nil)
)

// keyPath parses --key-field: member names separated by dots, or a JSON
// array of them (for names that hold a dot).
func keyPath(field string) ([]string, error) {
	var path []string
	if strings.HasPrefix(field, "[") {
		if err := json.Unmarshal([]byte(field), &path); err != nil {
			return nil, fmt.Errorf("--key-field: not a JSON array of member names: %w", err)
		}
	} else {
		path = strings.Split(field, ".")
	}
	if len(path) == 0 {
		return nil, errors.New("--key-field: no member name")
	}
	for _, p := range path {
		if p == "" {
			return nil, errors.New("--key-field: an empty member name")
		}
	}
	return path, nil
}

// sqsAPI is the part of *sqs.Client that redrive calls.
type sqsAPI interface {
	ReceiveMessage(ctx context.Context, params *sqs.ReceiveMessageInput, optFns ...func(*sqs.Options)) (*sqs.ReceiveMessageOutput, error)
	SendMessage(ctx context.Context, params *sqs.SendMessageInput, optFns ...func(*sqs.Options)) (*sqs.SendMessageOutput, error)
	DeleteMessage(ctx context.Context, params *sqs.DeleteMessageInput, optFns ...func(*sqs.Options)) (*sqs.DeleteMessageOutput, error)
	ChangeMessageVisibilityBatch(ctx context.Context, params *sqs.ChangeMessageVisibilityBatchInput, optFns ...func(*sqs.Options)) (*sqs.ChangeMessageVisibilityBatchOutput, error)
	GetQueueAttributes(ctx context.Context, params *sqs.GetQueueAttributesInput, optFns ...func(*sqs.Options)) (*sqs.GetQueueAttributesOutput, error)
}

var _ sqsAPI = (*sqs.Client)(nil)

// wrapSQS wraps the SQS client: the seam of tests' injected faults.
var wrapSQS = func(c sqsAPI) sqsAPI { return c }
