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
//	SQSONCE_FORMAT            optional, native, powertools-python or powertools-typescript: idempotency.Config.Format; default native
//	SQSONCE_DATA_FORMAT       optional, with the DynamoDB store, json, powertools-python or powertools-typescript: dynamostore.WithDataFormat; default json
//	SQSONCE_REDIS_KEY_PREFIX  optional, with the Redis store: redisstore.WithKeyPrefix; default none
//	SQSONCE_REDIS_KEY_PREFIX_UNSEPARATED optional, "on" or "off": the prefix joined with no "#" (redisstore.WithUnseparatedKeyPrefix); default off
//	SQSONCE_REDIS_CLUSTER     optional, "on" or "off": SQSONCE_REDIS_URL names a Redis Cluster; default off
//
// sqsonce-ops reads the same variables by these constants, so that with the
// function's environment it finds the records the function writes.
//
// [Read] refuses a value with white space at its start or end, a variable
// of another store than SQSONCE_STORE's, SQSONCE_KEEP_VISIBLE=on with
// SQSONCE_PACING=off, and what the guard, the store or CloudWatch would
// refuse or drop (an expiry shorter than the queue's window or the guard's
// lease, SQSONCE_MIN_REMAINING of Lambda's longest timeout, a metrics
// namespace CloudWatch drops), each naming the variables at fault;
// [CheckNames] refuses a misspelt SQSONCE_ name, which would leave a
// default running.
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

	EnvFormat                    = "SQSONCE_FORMAT"
	EnvDataFormat                = "SQSONCE_DATA_FORMAT"
	EnvRedisKeyPrefix            = "SQSONCE_REDIS_KEY_PREFIX"
	EnvRedisKeyPrefixUnseparated = "SQSONCE_REDIS_KEY_PREFIX_UNSEPARATED"
	EnvRedisCluster              = "SQSONCE_REDIS_CLUSTER"
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

// The formats SQSONCE_FORMAT names: idempotency.FormatNative,
// FormatPowertoolsPython and FormatPowertoolsTypeScript (lambdaenv.Format
// maps them).
const (
	FormatNative               = "native"
	FormatPowertoolsPython     = "powertools-python"
	FormatPowertoolsTypeScript = "powertools-typescript"
)

// The data formats SQSONCE_DATA_FORMAT names: dynamostore.DataJSON,
// DataPowertoolsPython and DataPowertoolsTypeScript (lambdaenv.DataFormat
// maps them).
const (
	DataJSON                 = "json"
	DataPowertoolsPython     = "powertools-python"
	DataPowertoolsTypeScript = "powertools-typescript"
)

// The limits [Read] holds the variables to: the guard's defaults
// (idempotency.Config's Lease and ExpiresAfter), Lambda's longest timeout
// and DynamoDB's longest partition key value.
const (
	defaultLease        = 15 * time.Minute    // a record must outlive a lease
	defaultExpiresAfter = 15 * 24 * time.Hour // with SQSONCE_EXPIRES_AFTER unset
	maxTimeout          = 15 * time.Minute    // Lambda's: no record starts with a MinRemaining above it
	maxPartition        = 2048                // bytes
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
	return []string{EnvMetrics, EnvDynamoDBEndpoint, EnvStore, EnvRedisURL, EnvPostgresURL, EnvDeadLetter, EnvPacing, EnvKeepVisible, EnvSQSEndpoint,
		EnvFormat, EnvDataFormat, EnvRedisKeyPrefix, EnvRedisKeyPrefixUnseparated, EnvRedisCluster}
}

// dynamoDBOnly are the variables of the DynamoDB store only; redisOnly
// and postgresOnly those of the others'.
var (
	dynamoDBOnly = []string{EnvSortKey, EnvPartitionKey, EnvStaticPartition, EnvDynamoDBEndpoint, EnvDataFormat}
	redisOnly    = []string{EnvRedisURL, EnvRedisKeyPrefix, EnvRedisKeyPrefixUnseparated, EnvRedisCluster}
	postgresOnly = []string{EnvPostgresURL}
)

// recordAttributes are the attributes of a DynamoDB record besides its
// id: dynamostore.Attributes' defaults (data_format and release_call are
// dynamostore's own, which this package may not import: test/lambdaenv
// holds them to dynamostore.AttrDataFormat and AttrReleaseCall). Neither
// key attribute may be one.
var recordAttributes = []string{driver.AttrStatus, driver.AttrExpiration, driver.AttrLeaseExpiry, driver.AttrData, driver.AttrValidation,
	driver.AttrOwner, driver.AttrDataEncoding, driver.AttrDataOmitted, "data_format", "release_call", driver.AttrQuarantined, driver.AttrStrictLease}

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
	Format           string // FormatNative, FormatPowertoolsPython or FormatPowertoolsTypeScript; never empty
	DataFormat       string // StoreDynamoDB's: DataJSON, DataPowertoolsPython or DataPowertoolsTypeScript; never empty
	RedisKeyPrefix   string // StoreRedis's key prefix; empty: none
	// RedisUnseparated joins RedisKeyPrefix and the record id with no "#"
	// (redisstore.WithUnseparatedKeyPrefix), as releases before v0.10.0 did.
	RedisUnseparated bool
	RedisCluster     bool // RedisURL names a Redis Cluster
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
// with every problem at once, each naming its variable and none quoting a
// secret: a value with white space at its start or end, a variable of
// another store than SQSONCE_STORE's, a setting another makes meaningless
// (SQSONCE_KEEP_VISIBLE=on with SQSONCE_PACING=off), and a combination
// the guard, the store or CloudWatch would refuse or drop are refused, never
// silently replaced by a default.
func Read(getenv func(string) string) (Settings, error) {
	var errs []error
	bad := func(format string, args ...any) { errs = append(errs, fmt.Errorf("lambdaenv: "+format, args...)) }
	// get reads a variable: white space around a value (a table name
	// pasted with a trailing space) is refused, not carried to the store.
	spaced := map[string]bool{}
	get := func(name string) string {
		v := getenv(name)
		if t := strings.TrimSpace(v); t != v {
			if !spaced[name] {
				spaced[name] = true
				bad("%s has white space at its start or end: remove it", name)
			}
			return t
		}
		return v
	}
	// dur reads a duration; zero is refused where it would silently
	// mean the default (unset is the way to say that).
	dur := func(name string, zeroOK bool) time.Duration {
		v := get(name)
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
		switch get(name) {
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
		Table:            get(EnvTable),
		Namespace:        get(EnvNamespace),
		ExpiresAfter:     dur(EnvExpiresAfter, false),
		QueueWindow:      dur(EnvQueueWindow, true),
		Tenancy:          cmp.Or(get(EnvTenancy), TenancyInvocation),
		Strict:           flag(EnvStrict, "true", "false", false),
		MinRemaining:     dur(EnvMinRemaining, false),
		Metrics:          flag(EnvMetrics, "on", "off", true),
		MetricsNamespace: get(EnvMetricsNamespace),
		MetricsService:   get(EnvMetricsService),
		DynamoDBEndpoint: get(EnvDynamoDBEndpoint),
		Store:            cmp.Or(get(EnvStore), StoreDynamoDB),
		RedisURL:         get(EnvRedisURL),
		PostgresURL:      get(EnvPostgresURL),
		DeadLetter:       flag(EnvDeadLetter, "on", "off", true),
		Pacing:           flag(EnvPacing, "on", "off", true),
		KeepVisible:      flag(EnvKeepVisible, "on", "off", true),
		SQSEndpoint:      get(EnvSQSEndpoint),
		SealKey:          get(EnvSealKey),
		Format:           cmp.Or(get(EnvFormat), FormatNative),
		DataFormat:       cmp.Or(get(EnvDataFormat), DataJSON),
		RedisKeyPrefix:   get(EnvRedisKeyPrefix),
		RedisUnseparated: flag(EnvRedisKeyPrefixUnseparated, "on", "off", false),
		RedisCluster:     flag(EnvRedisCluster, "on", "off", false),
	}
	switch s.Tenancy {
	case TenancyInvocation, TenancyMessageGroup, TenancyOff:
	default:
		bad("%s is not %q, %q or %q", EnvTenancy, TenancyInvocation, TenancyMessageGroup, TenancyOff)
	}
	if err := checkFormat(s.Format); err != nil {
		bad("%s %v", EnvFormat, err)
	}
	if err := checkDataFormat(s.DataFormat); err != nil {
		bad("%s %v", EnvDataFormat, err)
	}
	// others are the variables of the stores SQSONCE_STORE does not name.
	var others []string
	switch s.Store {
	case StoreDynamoDB:
		if s.Table == "" {
			bad("%s is required: the idempotency table's name (the construct sets it)", EnvTable)
		}
		others = slices.Concat(redisOnly, postgresOnly)
	case StoreRedis:
		if s.RedisURL == "" {
			bad("%s is required with %s=%s: the server's redis:// or rediss:// URL", EnvRedisURL, EnvStore, StoreRedis)
		}
		others = slices.Concat(dynamoDBOnly, postgresOnly)
	case StorePostgres:
		if s.PostgresURL == "" {
			bad("%s is required with %s=%s: the server's postgres:// URL or DSN", EnvPostgresURL, EnvStore, StorePostgres)
		}
		others = slices.Concat(dynamoDBOnly, redisOnly)
	default:
		bad("%s is not %q, %q or %q", EnvStore, StoreDynamoDB, StoreRedis, StorePostgres)
	}
	// SQSONCE_TABLE is every store's: the construct always sets it.
	for _, name := range others {
		if getenv(name) != "" {
			bad("%s is set, and %s names another store (%s), which does not read it: unset it, or set %s to use its store", name, EnvStore, s.Store, EnvStore)
		}
	}
	if s.RedisUnseparated && s.RedisKeyPrefix == "" {
		bad("%s=on needs %s: without a prefix there is nothing to join", EnvRedisKeyPrefixUnseparated, EnvRedisKeyPrefix)
	}
	if !s.Pacing && s.KeepVisible && getenv(EnvKeepVisible) != "" {
		bad("%s=on with %s=off: keeping messages invisible is part of pacing; unset %s, or turn pacing on", EnvKeepVisible, EnvPacing, EnvKeepVisible)
	}
	if s.Namespace == "" {
		bad("%s is required: the key namespace, a fixed string (the construct sets it from Props.Namespace)", EnvNamespace)
	}
	if strings.Contains(s.Namespace, "#") {
		bad("%s holds a \"#\", which ends the namespace in a record id: its ids would read as those of the namespace before it", EnvNamespace)
	}
	switch {
	case s.ExpiresAfter > 0 && s.ExpiresAfter < s.QueueWindow:
		bad("%s (%v) is shorter than %s (%v): a late redelivery would find no record and run again", EnvExpiresAfter, s.ExpiresAfter, EnvQueueWindow, s.QueueWindow)
	case s.ExpiresAfter == 0 && s.QueueWindow > defaultExpiresAfter:
		bad("%s (%v) is longer than the guard's default expiry (%v): set %s to at least the window", EnvQueueWindow, s.QueueWindow, defaultExpiresAfter, EnvExpiresAfter)
	}
	if s.ExpiresAfter > 0 && s.ExpiresAfter < defaultLease {
		bad("%s (%v) is shorter than the guard's lease (%v): a record would expire while its operation runs", EnvExpiresAfter, s.ExpiresAfter, defaultLease)
	}
	if s.MinRemaining >= maxTimeout {
		bad("%s (%v) is not below Lambda's longest timeout (%v): no record could ever start", EnvMinRemaining, s.MinRemaining, maxTimeout)
	}
	powertools := s.Format == FormatPowertoolsPython || s.Format == FormatPowertoolsTypeScript
	if powertools && s.Tenancy == TenancyMessageGroup {
		bad("%s=%s with %s=%s: Powertools does not scope its ids by message group, so a key would run once in Powertools and once here; use %s=%s to share its records",
			EnvFormat, s.Format, EnvTenancy, s.Tenancy, EnvTenancy, TenancyOff)
	}
	if s.SealKey != "" && powertools {
		bad("%s with %s=%s: the record ids are Powertools', and Powertools cannot open a sealed result; seal only with %s=%s", EnvSealKey, EnvFormat, s.Format, EnvFormat, FormatNative)
	}
	if s.SealKey != "" && s.Store == StoreDynamoDB && s.DataFormat != DataJSON && checkDataFormat(s.DataFormat) == nil {
		bad("%s with %s=%s: Powertools shares the table and would replay a sealed result's text as the result; seal only with %s=%s", EnvSealKey, EnvDataFormat, s.DataFormat, EnvDataFormat, DataJSON)
	}
	if v := get(EnvKey); v != "" {
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
	if err := metrics.CheckNamespace(s.MetricsNamespace); err != nil {
		bad("%s: %v: CloudWatch would drop the metrics, and the outcome alarms would watch nothing", EnvMetricsNamespace, err)
	}
	k := SortKey{PartitionKey: get(EnvPartitionKey), Attr: get(EnvSortKey), Partition: get(EnvStaticPartition)}
	if k != (SortKey{}) && s.Store == StoreDynamoDB {
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
		if slices.Contains(recordAttributes, k.Attr) {
			bad("%s names an attribute of the records (%s): the sort key cannot be one", EnvSortKey, strings.Join(recordAttributes, ", "))
		}
		if slices.Contains(recordAttributes, k.PartitionKey) {
			bad("%s names an attribute of the records (%s): the partition key cannot be one", EnvPartitionKey, strings.Join(recordAttributes, ", "))
		}
		if len(k.Partition) > maxPartition {
			bad("%s is %d bytes, above DynamoDB's %d for a partition key value", EnvStaticPartition, len(k.Partition), maxPartition)
		}
		s.SortKey = &k
	}
	if err := errors.Join(errs...); err != nil {
		return Settings{}, err
	}
	return s, nil
}

// checkFormat returns nil when v is a format SQSONCE_FORMAT may name, else
// an error listing them, not quoting v.
func checkFormat(v string) error {
	switch v {
	case FormatNative, FormatPowertoolsPython, FormatPowertoolsTypeScript:
		return nil
	}
	return fmt.Errorf("is not %q, %q or %q", FormatNative, FormatPowertoolsPython, FormatPowertoolsTypeScript)
}

// checkDataFormat returns nil when v is a data format SQSONCE_DATA_FORMAT
// may name, else an error listing them, not quoting v.
func checkDataFormat(v string) error {
	switch v {
	case DataJSON, DataPowertoolsPython, DataPowertoolsTypeScript:
		return nil
	}
	return fmt.Errorf("is not %q, %q or %q", DataJSON, DataPowertoolsPython, DataPowertoolsTypeScript)
}

// prefix begins every variable of the contract.
const prefix = "SQSONCE_"

// CheckNames returns an error naming each variable of environ (as
// os.Environ gives them, NAME=value) whose name begins with SQSONCE_ but
// is not one [Read] reads ([Set] and [Optional]), and is within two edits
// (a letter added, dropped, changed, or two swapped) of one it reads: a
// misspelling, such as SQSONCE_PACEING, that would leave that variable's
// default running. Other SQSONCE_ names, a function's own such as
// SQSONCE_SUMMARIES_TABLE, pass. It never quotes a value.
func CheckNames(environ []string) error {
	known := slices.Concat(Set(), Optional())
	var errs []error
	for _, kv := range environ {
		name, _, _ := strings.Cut(kv, "=")
		upper := strings.ToUpper(name)
		if !strings.HasPrefix(upper, prefix) || slices.Contains(known, name) {
			continue
		}
		best, bestD := "", 3
		for _, k := range known {
			if d := editDistance(upper, k); d < bestD {
				best, bestD = k, d
			}
		}
		if best != "" {
			errs = append(errs, fmt.Errorf("lambdaenv: %s is not a variable sqsonce reads: is it %s, misspelt? (its default would run)", name, best))
		}
	}
	return errors.Join(errs...)
}

// editDistance is the optimal string alignment distance of a and b: the
// fewest insertions, deletions, substitutions and swaps of adjacent bytes
// that make one the other.
func editDistance(a, b string) int {
	// d[i][j] is the distance of a[:i] and b[:j].
	d := make([][]int, len(a)+1)
	for i := range d {
		d[i] = make([]int, len(b)+1)
		d[i][0] = i
	}
	for j := range d[0] {
		d[0][j] = j
	}
	for i := 1; i <= len(a); i++ {
		for j := 1; j <= len(b); j++ {
			cost := 1
			if a[i-1] == b[j-1] {
				cost = 0
			}
			d[i][j] = min(d[i-1][j]+1, d[i][j-1]+1, d[i-1][j-1]+cost)
			if i > 1 && j > 1 && a[i-1] == b[j-2] && a[i-2] == b[j-1] {
				d[i][j] = min(d[i][j], d[i-2][j-2]+1)
			}
		}
	}
	return d[len(a)][len(b)]
}

// Format formats a duration as the variables hold it: whole seconds as
// "90s", anything finer exactly.
func Format(d time.Duration) string {
	if d%time.Second == 0 {
		return strconv.FormatInt(int64(d/time.Second), 10) + "s"
	}
	return d.String()
}
