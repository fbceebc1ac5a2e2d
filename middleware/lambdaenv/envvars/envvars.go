// Package envvars names and parses the variables of the contract between
// infra's construct (infra/idempotentconsumer), which sets them, and the
// function it deploys, which reads them with package middleware/lambdaenv.
// It needs no AWS SDK, so that the construct's module can import it.
//
// # Variables
//
//	SQSONCE_TABLE             required with the DynamoDB store: the idempotency table (dynamostore.New)
//	SQSONCE_NAMESPACE         required: idempotency.Config.Namespace, and the metrics' Service
//	SQSONCE_EXPIRES_AFTER     positive Go duration: idempotency.Config.ExpiresAfter; unset: the guard's default
//	SQSONCE_TENANCY           invocation, message-group or off: idempotency.Config.Tenancy; default invocation
//	SQSONCE_QUEUE_WINDOW      Go duration: idempotency.Config.MinExpiry, the queue's window
//	SQSONCE_PARTITION_KEY     with SQSONCE_SORT_KEY: the partition key attribute; default driver.AttrID
//	SQSONCE_SORT_KEY          the sort key attribute (dynamostore.WithSortKey)
//	SQSONCE_STATIC_PARTITION  required with SQSONCE_SORT_KEY: every record's partition value
//	SQSONCE_STRICT            "true" or "false": idempotency.Config.Strict; default false
//	SQSONCE_MIN_REMAINING     Go duration: batch.Options.MinRemaining; default follows the invocation
//	SQSONCE_METRICS           optional, "on" or "off": the EMF metrics the construct's alarms watch; default on
//	SQSONCE_METRICS_NAMESPACE optional: the metrics' CloudWatch namespace; default metrics.DefaultNamespace
//	SQSONCE_METRICS_SERVICE   optional: the metrics' Service dimension; default SQSONCE_NAMESPACE
//	SQSONCE_DYNAMODB_ENDPOINT optional: a DynamoDB endpoint override, such as moto_server's, for local runs
//	SQSONCE_KEY               the key source (see [KeySource]): body:order_id, body:a,b or jmespath:EXPR
//	SQSONCE_STORE             optional, dynamodb, redis or postgres: the store; default dynamodb
//	SQSONCE_REDIS_URL         required with the Redis store: a redis:// or rediss:// URL (a secret: never quoted)
//	SQSONCE_POSTGRES_URL      required with the PostgreSQL store: a postgres:// URL or DSN (a secret: never quoted)
//	SQSONCE_DEAD_LETTER       optional, "on" or "off": a permanent failure goes to the queue's dead-letter queue at once (sqsdlq); default on
//	SQSONCE_PACING            optional, "on" or "off": failed records come back when they can succeed (sqsvisibility); default on
//	SQSONCE_KEEP_VISIBLE      optional, "on" or "off": with pacing, messages stay invisible while their records run; default on
//	SQSONCE_SQS_ENDPOINT      optional: an SQS endpoint override for pacing and the dead-letter queue, for local runs
//	SQSONCE_SEAL_KEY          a KMS key's ARN (or id or alias): results sealed under it (idempotency.Config.Sealer, package lambdaenv/kmsenv)
//
// The construct sets SQSONCE_TABLE, _NAMESPACE, _EXPIRES_AFTER and
// _QUEUE_WINDOW always; the sort key ones with Props.SortKey,
// SQSONCE_STRICT with Props.Strict, SQSONCE_MIN_REMAINING with
// Props.MinRemaining, and the metrics' namespace and service when
// Props.MetricsNamespace or MetricsService differ from their defaults (so
// that the function writes what its alarms watch), and SQSONCE_KEY with
// Props.KeySource (so that the function and sqsonce-ops take the key one
// way), and SQSONCE_TENANCY with Props.Tenancy (so that sqsonce-ops scopes
// a record id as the function does), and SQSONCE_SEAL_KEY with
// Props.SealKey (so that sqsonce-ops seals what it writes). The others are the function's own,
// optional: set them with Props.Environment. The construct grants what
// the defaults use: sqs:SendMessage on the dead-letter queue, and
// sqs:ChangeMessageVisibility on the queue.
package envvars

import (
	"cmp"
	"errors"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/sqsonce/sqsonce/middleware/idempotency/driver"
	"github.com/sqsonce/sqsonce/middleware/metrics"
)

// The variables of the contract. infra's construct sets them by these
// constants.
const (
	EnvTable            = "SQSONCE_TABLE"
	EnvNamespace        = "SQSONCE_NAMESPACE"
	EnvExpiresAfter     = "SQSONCE_EXPIRES_AFTER"
	EnvQueueWindow      = "SQSONCE_QUEUE_WINDOW"
	EnvPartitionKey     = "SQSONCE_PARTITION_KEY"
	EnvSortKey          = "SQSONCE_SORT_KEY"
	EnvStaticPartition  = "SQSONCE_STATIC_PARTITION"
	EnvStrict           = "SQSONCE_STRICT"
	EnvMinRemaining     = "SQSONCE_MIN_REMAINING"
	EnvMetrics          = "SQSONCE_METRICS"
	EnvMetricsNamespace = "SQSONCE_METRICS_NAMESPACE"
	EnvMetricsService   = "SQSONCE_METRICS_SERVICE"
	EnvDynamoDBEndpoint = "SQSONCE_DYNAMODB_ENDPOINT"
	EnvKey              = "SQSONCE_KEY"
	EnvTenancy          = "SQSONCE_TENANCY"
	EnvStore            = "SQSONCE_STORE"
	EnvRedisURL         = "SQSONCE_REDIS_URL"
	EnvPostgresURL      = "SQSONCE_POSTGRES_URL"
	EnvDeadLetter       = "SQSONCE_DEAD_LETTER"
	EnvPacing           = "SQSONCE_PACING"
	EnvKeepVisible      = "SQSONCE_KEEP_VISIBLE"
	EnvSQSEndpoint      = "SQSONCE_SQS_ENDPOINT"
	EnvSealKey          = "SQSONCE_SEAL_KEY"
)

// The stores SQSONCE_STORE names.
const (
	StoreDynamoDB = "dynamodb"
	StoreRedis    = "redis"
	StorePostgres = "postgres"
)

// The tenancies SQSONCE_TENANCY names: idempotency.TenancyInvocation,
// TenancyMessageGroup and TenancyOff.
const (
	TenancyInvocation   = "invocation"
	TenancyMessageGroup = "message-group"
	TenancyOff          = "off"
)

// Set returns the variables the construct sets, in the package doc's
// order; [Optional] the ones only the function sets.
func Set() []string {
	return []string{EnvTable, EnvNamespace, EnvExpiresAfter, EnvQueueWindow, EnvPartitionKey, EnvSortKey, EnvStaticPartition, EnvStrict, EnvMinRemaining,
		EnvMetricsNamespace, EnvMetricsService, EnvKey, EnvTenancy, EnvSealKey}
}

// Optional returns the variables [Read] reads that the construct does not
// set.
func Optional() []string {
	return []string{EnvMetrics, EnvDynamoDBEndpoint, EnvStore, EnvRedisURL, EnvPostgresURL, EnvDeadLetter, EnvPacing, EnvKeepVisible, EnvSQSEndpoint}
}

// SortKey is a table's sort key, as the variables give it.
type SortKey struct {
	PartitionKey string // the partition key attribute; default driver.AttrID
	Attr         string // the sort key attribute
	Partition    string // every record's partition value
}

// Settings is what the variables say, parsed and checked. RedisURL and
// PostgresURL may hold passwords: do not print Settings.
type Settings struct {
	Table            string // empty with another store than DynamoDB
	Namespace        string
	ExpiresAfter     time.Duration // zero: the guard's default
	Tenancy          string        // TenancyInvocation, TenancyMessageGroup or TenancyOff; never empty
	QueueWindow      time.Duration // zero: none
	SortKey          *SortKey      // nil: none
	Strict           bool
	MinRemaining     time.Duration // zero: follows the invocation
	Metrics          bool
	MetricsNamespace string
	MetricsService   string
	DynamoDBEndpoint string
	Key              *KeySource // nil: the function chooses its own selector
	Store            string     // StoreDynamoDB, StoreRedis or StorePostgres; never empty
	RedisURL         string     // StoreRedis's server
	PostgresURL      string     // StorePostgres's server
	DeadLetter       bool       // permanent failures to the dead-letter queue at once
	Pacing           bool       // paced redelivery of failed records
	KeepVisible      bool       // with Pacing: messages invisible while their records run
	SQSEndpoint      string
	SealKey          string // the KMS key results are sealed under; empty: not sealed
}

// The kinds of [KeySource].
const (
	KeyBody     = "body"     // one body field: idempotency.BodyField(Path[0], Path[1:]...)
	KeySubset   = "subset"   // body fields that define the work: idempotency.BodySubset(Names...)
	KeyJMESPath = "jmespath" // a Powertools JMESPath expression on the record (package jmespath)
)

// KeySource is where the function takes its idempotency key, as
// SQSONCE_KEY spells it, so that the function (lambdaenv's Function.Key)
// and the operator's tool (sqsonce-ops --key-source) compute one record id:
//
//	body:order_id           BodyField("order_id")
//	body:order.id           BodyField("order", "id"): a nested member, names joined by dots
//	body:customer_id,amount BodySubset("customer_id", "amount"): the fields that define the work
//	jmespath:EXPR           jmespath.MustCompile(EXPR).Selector(), on the record as Lambda delivers it
type KeySource struct {
	Kind  string   // KeyBody, KeySubset or KeyJMESPath
	Path  []string // KeyBody: the member path
	Names []string // KeySubset: the top-level member names
	Expr  string   // KeyJMESPath: the expression
}

// String returns k as SQSONCE_KEY spells it: ParseKey(k.String()) is k.
func (k KeySource) String() string {
	switch k.Kind {
	case KeyBody:
		return "body:" + strings.Join(k.Path, ".")
	case KeySubset:
		return "body:" + strings.Join(k.Names, ",")
	case KeyJMESPath:
		return "jmespath:" + k.Expr
	}
	return ""
}

// ParseKey parses a key source (see [KeySource]). It does not compile a
// JMESPath expression: lambdaenv.Selector does.
func ParseKey(v string) (KeySource, error) {
	kind, rest, ok := strings.Cut(v, ":")
	kind, rest = strings.TrimSpace(kind), strings.TrimSpace(rest)
	switch {
	case !ok || rest == "":
		return KeySource{}, errors.New(`not "body:FIELD", "body:FIELD,FIELD..." or "jmespath:EXPR"`)
	case kind == "jmespath":
		return KeySource{Kind: KeyJMESPath, Expr: rest}, nil
	case kind != "body":
		return KeySource{}, errors.New(`the source is neither "body" nor "jmespath"`)
	}
	if strings.Contains(rest, ",") {
		names := strings.Split(rest, ",")
		for i, n := range names {
			names[i] = strings.TrimSpace(n)
			if names[i] == "" || strings.Contains(names[i], ".") {
				return KeySource{}, errors.New("a body subset lists top-level member names, none empty or dotted")
			}
		}
		return KeySource{Kind: KeySubset, Names: names}, nil
	}
	path := strings.Split(rest, ".")
	for i, n := range path {
		path[i] = strings.TrimSpace(n)
	}
	if slices.Contains(path, "") {
		return KeySource{}, errors.New("an empty member name in the body path")
	}
	return KeySource{Kind: KeyBody, Path: path}, nil
}

// Read parses the variables through getenv (os.Getenv in a function),
// with every problem at once, each naming its variable.
func Read(getenv func(string) string) (Settings, error) {
	var errs []error
	bad := func(format string, args ...any) { errs = append(errs, fmt.Errorf("lambdaenv: "+format, args...)) }
	// dur reads a duration; zero is refused where it would silently
	// mean the default (unset is the way to say that).
	dur := func(name string, zeroOK bool) time.Duration {
		v := getenv(name)
		if v == "" {
			return 0
		}
		d, err := time.ParseDuration(v)
		switch {
		case err != nil || d < 0:
			bad("%s is not a positive Go duration such as 90s", name)
		case d == 0 && !zeroOK:
			bad("%s is zero: unset it for the default, or give a positive Go duration such as 360h", name)
		}
		return max(d, 0)
	}
	flag := func(name, on, off string, def bool) bool {
		switch getenv(name) {
		case "":
			return def
		case on:
			return true
		case off:
			return false
		}
		bad("%s is neither %q nor %q", name, on, off)
		return def
	}
	s := Settings{
		Table:            getenv(EnvTable),
		Namespace:        getenv(EnvNamespace),
		ExpiresAfter:     dur(EnvExpiresAfter, false),
		QueueWindow:      dur(EnvQueueWindow, true),
		Tenancy:          cmp.Or(getenv(EnvTenancy), TenancyInvocation),
		Strict:           flag(EnvStrict, "true", "false", false),
		MinRemaining:     dur(EnvMinRemaining, false),
		Metrics:          flag(EnvMetrics, "on", "off", true),
		MetricsNamespace: getenv(EnvMetricsNamespace),
		MetricsService:   getenv(EnvMetricsService),
		DynamoDBEndpoint: getenv(EnvDynamoDBEndpoint),
		Store:            cmp.Or(getenv(EnvStore), StoreDynamoDB),
		RedisURL:         getenv(EnvRedisURL),
		PostgresURL:      getenv(EnvPostgresURL),
		DeadLetter:       flag(EnvDeadLetter, "on", "off", true),
		Pacing:           flag(EnvPacing, "on", "off", true),
		KeepVisible:      flag(EnvKeepVisible, "on", "off", true),
		SQSEndpoint:      getenv(EnvSQSEndpoint),
		SealKey:          getenv(EnvSealKey),
	}
	switch s.Tenancy {
	case TenancyInvocation, TenancyMessageGroup, TenancyOff:
	default:
		bad("%s is not %q, %q or %q", EnvTenancy, TenancyInvocation, TenancyMessageGroup, TenancyOff)
	}
	switch s.Store {
	case StoreDynamoDB:
		if s.Table == "" {
			bad("%s is required: the idempotency table's name (the construct sets it)", EnvTable)
		}
	case StoreRedis:
		if s.RedisURL == "" {
			bad("%s is required with %s=%s: the server's redis:// or rediss:// URL", EnvRedisURL, EnvStore, StoreRedis)
		}
	case StorePostgres:
		if s.PostgresURL == "" {
			bad("%s is required with %s=%s: the server's postgres:// URL or DSN", EnvPostgresURL, EnvStore, StorePostgres)
		}
	default:
		bad("%s is not %q, %q or %q", EnvStore, StoreDynamoDB, StoreRedis, StorePostgres)
	}
	if s.Store != StoreRedis && s.RedisURL != "" || s.Store != StorePostgres && s.PostgresURL != "" {
		bad("%s or %s is set, and %s names another store (%s): set %s to use it", EnvRedisURL, EnvPostgresURL, EnvStore, s.Store, EnvStore)
	}
	if s.Namespace == "" {
		bad("%s is required: the key namespace, a fixed string (the construct sets it from Props.Namespace)", EnvNamespace)
	}
	if v := getenv(EnvKey); v != "" {
		if k, err := ParseKey(v); err != nil {
			bad("%s: %v", EnvKey, err)
		} else {
			s.Key = &k
		}
	}
	if s.MetricsService == "" {
		s.MetricsService = s.Namespace
	}
	if s.MetricsNamespace == "" {
		s.MetricsNamespace = metrics.DefaultNamespace
	}
	k := SortKey{PartitionKey: getenv(EnvPartitionKey), Attr: getenv(EnvSortKey), Partition: getenv(EnvStaticPartition)}
	if k != (SortKey{}) {
		switch {
		case k.Attr == "":
			bad("%s and %s are set only with %s, the sort key attribute", EnvPartitionKey, EnvStaticPartition, EnvSortKey)
		case k.Partition == "":
			bad("%s is required with %s: the partition value of every record (Powertools' static_pk_value)", EnvStaticPartition, EnvSortKey)
		}
		if k.PartitionKey == "" {
			k.PartitionKey = driver.AttrID
		}
		if k.Attr == k.PartitionKey {
			bad("%s and %s name one attribute: the sort key and the partition key cannot be one", EnvSortKey, EnvPartitionKey)
		}
		s.SortKey = &k
	}
	if err := errors.Join(errs...); err != nil {
		return Settings{}, err
	}
	return s, nil
}

// Format formats a duration as the variables hold it: whole seconds as
// "90s", anything finer exactly.
func Format(d time.Duration) string {
	if d%time.Second == 0 {
		return strconv.FormatInt(int64(d/time.Second), 10) + "s"
	}
	return d.String()
}
