package idempotentconsumer

import (
	"errors"
	"fmt"
	"regexp"
	"slices"
	"strings"
	"time"

	"github.com/aws/aws-cdk-go/awscdk/v2"
	"github.com/aws/aws-cdk-go/awscdk/v2/awsdynamodb"
	"github.com/aws/aws-cdk-go/awscdk/v2/awskms"
	"github.com/aws/aws-cdk-go/awscdk/v2/awslambda"
	"github.com/aws/aws-cdk-go/awscdk/v2/awslogs"
	"github.com/aws/aws-cdk-go/awscdk/v2/awssns"

	"github.com/sqsonce/sqsonce/middleware/batch"
	"github.com/sqsonce/sqsonce/middleware/idempotency/driver"
	"github.com/sqsonce/sqsonce/middleware/idempotency/jmespath"
	"github.com/sqsonce/sqsonce/middleware/lambdaenv/envvars"
	"github.com/sqsonce/sqsonce/middleware/metrics"
)

// Defaults for the zero values of [Props].
const (
	// DefaultHandler is the executable a provided.al2023 function runs.
	DefaultHandler = "bootstrap"
	// DefaultMemorySize is the function's memory in MB.
	DefaultMemorySize = 256
	// DefaultTimeout is sized for one batch of model calls; it is not
	// Lambda's own default of 3 s, which the library's defaults also hold at.
	DefaultTimeout = 3 * time.Minute
	// VisibilityFactor is AWS's guidance for an SQS event source: the
	// queue's visibility timeout is at least this many function timeouts,
	// so that Lambda can retry a throttled batch before the messages
	// reappear. It is also the default.
	VisibilityFactor = 6
	// DefaultRetention is how long the queue keeps a message.
	DefaultRetention = 4 * 24 * time.Hour
	// DefaultDeadLetterRetention is SQS's maximum. A message keeps its
	// first enqueue time when it moves to the dead-letter queue, so the
	// dead-letter queue must keep messages longer than the queue does.
	DefaultDeadLetterRetention = 14 * 24 * time.Hour
	// DefaultMaxReceiveCount is how many receives a message gets before it
	// moves to the dead-letter queue.
	DefaultMaxReceiveCount = 5
	// DefaultExpiryMargin is added to the queue's window to make the
	// default record expiry. Err long: a stale record costs storage, a
	// missing one costs running the operation twice.
	DefaultExpiryMargin = 24 * time.Hour
	// DefaultBatchSize is the largest batch the event source delivers.
	DefaultBatchSize = 10
	// DefaultMaxBatchingWindow is how long the event source gathers
	// messages before it invokes the function.
	DefaultMaxBatchingWindow = 5 * time.Second
	// DefaultMaxConcurrency caps the concurrent invocations the event
	// source makes in standard mode (SQS's minimum is 2).
	DefaultMaxConcurrency = 5
	// DefaultMinimumPollers and DefaultMaximumPollers are the bounds of a
	// provisioned event source ([Props.ProvisionedPollers]) whose own are
	// zero: Lambda's defaults for SQS.
	DefaultMinimumPollers = 2
	DefaultMaximumPollers = 200
	// DefaultOldestMessageAlarm is the age of the oldest queued message
	// above which the age alarm fires.
	DefaultOldestMessageAlarm = time.Hour
	// DefaultMetricsNamespace is the CloudWatch namespace of the
	// idempotency outcome metrics the function writes in Embedded Metric
	// Format: the default of package middleware/metrics, which writes them.
	DefaultMetricsNamespace = metrics.DefaultNamespace
)

// Environment variables the construct sets on the function: package
// middleware/lambdaenv's, which the function's main reads with
// lambdaenv.Load. [Props.Environment] may not set them.
const (
	// EnvTable is the idempotency table's name.
	EnvTable = envvars.EnvTable
	// EnvNamespace is the key namespace, a fixed string from [Props].
	EnvNamespace = envvars.EnvNamespace
	// EnvExpiresAfter is the record expiry as a Go duration in whole
	// seconds ("1647000s"), at least [Plan.DeadLetterWindow].
	EnvExpiresAfter = envvars.EnvExpiresAfter
	// EnvQueueWindow is the queue's window ([batch.QueueWindow]) as a
	// Go duration in whole seconds. The runtime refuses an expiry below it.
	EnvQueueWindow = envvars.EnvQueueWindow
	// EnvPartitionKey, EnvSortKey and EnvStaticPartition are
	// [Props.SortKey]'s PartitionKey, Attribute and Partition, set only
	// with it: pass them to dynamostore.WithAttributes (ID) and
	// dynamostore.WithSortKey (Attr, Partition).
	EnvPartitionKey    = envvars.EnvPartitionKey
	EnvSortKey         = envvars.EnvSortKey
	EnvStaticPartition = envvars.EnvStaticPartition
	// EnvStrict is "true" with [Props.Strict], and unset otherwise: the
	// function's guard runs in strict mode (idempotency.Config.Strict).
	EnvStrict = envvars.EnvStrict
	// EnvMinRemaining is [Props.MinRemaining] as a Go duration, set only
	// when it is: the function's batch.Options.MinRemaining.
	EnvMinRemaining = envvars.EnvMinRemaining
	// EnvMetricsNamespace and EnvMetricsService are [Props.MetricsNamespace]
	// and [Props.MetricsService], set only when they differ from their
	// defaults: the function's metrics recorder writes what the alarms
	// watch.
	EnvMetricsNamespace = envvars.EnvMetricsNamespace
	EnvMetricsService   = envvars.EnvMetricsService
	// EnvKey is [Props.KeySource], set only when it is: the function's
	// and sqsonce-ops's key source.
	EnvKey = envvars.EnvKey
	// EnvTenancy is [Props.Tenancy], set only when it is: the function's
	// idempotency.Config.Tenancy, and how sqsonce-ops scopes a record id.
	EnvTenancy = envvars.EnvTenancy
	// EnvSealKey is the ARN of [Props.SealKey] (the alias's ARN for an
	// alias), or of the encryption key with [Props.SealWithEncryptionKey],
	// set only then: the function's idempotency.Config.Sealer (lambdaenv
	// with package kmsenv), and the key sqsonce-ops seals what it writes
	// with.
	EnvSealKey = envvars.EnvSealKey
)

// maxPartitionValue is DynamoDB's limit on a partition key value, in bytes.
const maxPartitionValue = 2048

// SortKey is the key of an idempotency table with a sort key, as a table
// shared with Powertools for AWS Lambda configured with keyAttr,
// sortKeyAttr and staticPkValue (dynamostore.WithSortKey on the function's
// side). The zero SortKey is none.
type SortKey struct {
	// Attribute is the sort key attribute (S), which holds the record id.
	Attribute string
	// PartitionKey is the partition key attribute (S). Default
	// driver.AttrID.
	PartitionKey string
	// Partition is the partition key value of every record the function
	// writes: Powertools' staticPkValue. Required with Attribute: a fixed
	// string, since Powertools' default, "idempotency#" and the function's
	// name, changes with the name CloudFormation generates.
	Partition string
}

// ProvisionedPollers is the provisioned mode of the queue's event source:
// dedicated event pollers, at least Minimum kept ready at all times (and
// billed), at most Maximum, each handling up to 10 concurrent invocations
// and 1 MB/s. The zero ProvisionedPollers is standard mode, in which
// [Props.MaxConcurrency] caps the event source. AWS refuses both at once.
type ProvisionedPollers struct {
	// Minimum is the pollers kept ready. Default [DefaultMinimumPollers];
	// 2–200.
	Minimum int
	// Maximum is the most pollers the event source scales to. Default
	// [DefaultMaximumPollers]; 2–2000, not below Minimum.
	Maximum int
}

// WarmThroughput is the read and write units per second a new idempotency
// table serves from its first request (DynamoDB's warm throughput, set at
// creation: pre-warming, which is billed). A zero field is the table's
// own: a new on-demand table serves 12,000 reads and 4,000 writes per
// second. DynamoDB never lowers a table's warm throughput, so lowering a
// figure later changes nothing. Each partition still serves at most 1,000
// write units per second (see docs/sizing.md).
type WarmThroughput struct {
	// ReadUnitsPerSecond, if set, is at least 12,000.
	ReadUnitsPerSecond int
	// WriteUnitsPerSecond, if set, is at least 4,000.
	WriteUnitsPerSecond int
}

// Limits of the services, checked by [Props.Plan].
const (
	maxTimeout           = 15 * time.Minute
	maxVisibilityTimeout = 12 * time.Hour
	minRetention         = time.Minute
	maxRetention         = 14 * 24 * time.Hour
	maxReceiveCountLimit = 1000
	maxBatchingWindow    = 5 * time.Minute
	maxBatchSize         = 10000
	maxUnbatchedSize     = 10 // also the largest batch of a FIFO queue
	maxQueueName         = 80 // with the ".fifo" suffix
	fifoSuffix           = ".fifo"
	minMaxConcurrency    = 2
	maxMaxConcurrency    = 1000
	minPollers           = 2    // both bounds of SQS provisioned mode
	maxMinimumPollers    = 200  // the CDK's and CloudFormation's bounds for SQS
	maxMaximumPollers    = 2000 // (a newer API reference says 10,000; the CDK throws above 2000)
	newTableWarmReads    = 12000
	newTableWarmWrites   = 4000
	minMemorySize        = 128
	maxMemorySize        = 10240
)

// Props configures a [Consumer]. Code and Namespace are required; every
// other zero value is a documented default. Durations are whole seconds.
type Props struct {
	// Code is the function's deployment package, for example
	// awslambda.Code_FromAsset of the zip that holds bootstrap. Required.
	Code awslambda.Code

	// Namespace prefixes every idempotency key. Required. Use a fixed
	// string, never the generated function name, so that a redeploy or a
	// rename does not reset every key.
	Namespace string

	// Handler is the handler name. Default [DefaultHandler].
	Handler string

	// Runtime is the function's runtime. Default provided.al2023
	// (awslambda.Runtime_PROVIDED_AL2023), what a Go binary named
	// bootstrap runs on.
	Runtime awslambda.Runtime

	// Architecture is the function's instruction set. Default arm64
	// (awslambda.Architecture_ARM_64); the zip must be built for it.
	Architecture awslambda.Architecture

	// Environment adds variables to the function's environment. It may not
	// set the variables the construct owns (envvars.Set: [EnvTable] and
	// the others); Plan refuses them, and an environment, with the
	// construct's variables, that lambdaenv.Load would refuse
	// (envvars.Read, envvars.CheckNames), such as SQSONCE_FORMAT=powertools-python
	// with Tenancy "message-group" or SealKey.
	Environment map[string]string

	// MemorySize is the function's memory in MB. Default [DefaultMemorySize].
	MemorySize int

	// Timeout is the function's timeout. Default [DefaultTimeout]; at most
	// 15 minutes.
	Timeout time.Duration

	// Tracing is the function's X-Ray tracing mode. Default
	// awslambda.Tracing_DISABLED (no tracing configuration). Active and
	// PassThrough add xray:PutTraceSegments and xray:PutTelemetryRecords
	// on "*" to the role: X-Ray has no resource-level permissions.
	Tracing awslambda.Tracing

	// Table is an existing idempotency table to use instead of creating
	// one: partition key driver.AttrID (string), or the keys of
	// SortKey, and TTL on driver.AttrExpiration, which the construct
	// cannot check. The
	// construct only grants [RecordActions] on it (and [KeyActions] on its
	// key, when it names a customer-managed one), so TableRemovalPolicy and
	// DisableDeletionProtection may not be set with it. Default: a new table.
	Table awsdynamodb.ITable

	// TableRemovalPolicy is what happens to a new idempotency table when
	// it leaves the stack. Default retain: records outlive a redeploy.
	// Destroy needs DisableDeletionProtection too.
	TableRemovalPolicy awscdk.RemovalPolicy

	// DisableDeletionProtection turns off the deletion protection of a new
	// table. Default false: the table has deletion protection, and
	// DeleteTable fails until it is turned off.
	DisableDeletionProtection bool

	// WarmThroughput pre-warms a new table. Default: none, the throughput
	// of a new on-demand table. Refused with Table.
	WarmThroughput WarmThroughput

	// SortKey gives the idempotency table a sort key: a new table gets its
	// partition key and sort key, and Table must have them (not checkable
	// at synth time). The function gets [EnvPartitionKey], [EnvSortKey] and
	// [EnvStaticPartition]. Default: none, partition key driver.AttrID
	// alone.
	SortKey SortKey

	// Strict runs the function's guard in strict mode: a claim whose lease
	// lapsed with the operation's outcome unknown is quarantined, never run
	// again (see idempotency.Config.Strict), and QuarantinedAlarm fires.
	// The function gets [EnvStrict] "true". Default false.
	Strict bool

	// MinRemaining is the function's batch.Options.MinRemaining: the time
	// that must be left before the records' deadline for a record to
	// start. The function gets [EnvMinRemaining]. Default zero, which
	// follows the invocation (batch.MinRemainingFor). Plan refuses a
	// Timeout at which no record could start (batch.Options.CheckTimeout).
	MinRemaining time.Duration

	// KeySource is where the function takes its key, as
	// envvars.KeySource spells it: "body:order_id", "body:a,b" (the
	// fields that define the work) or "jmespath:EXPR". The function gets
	// [EnvKey] and may use lambdaenv's Function.Key as its selector;
	// sqsonce-ops, run with the function's environment, computes the same
	// record ids from it. Default empty: unset, the function's selector
	// is its own code's.
	KeySource string

	// Tenancy is what scopes a record id to a tenant, as SQSONCE_TENANCY
	// spells it: "invocation" (Lambda's tenant id), "message-group" (also
	// the message's MessageGroupId: a fair queue's tenant) or "off". The
	// function gets [EnvTenancy], and sqsonce-ops, run with the function's
	// environment, computes the ids the function does. Default empty: the
	// guard's default, "invocation".
	Tenancy string

	// FIFO makes the queue and its dead-letter queue FIFO queues. The
	// function still keys on the message body, never on the
	// MessageDeduplicationId. A FIFO event source takes no batching window
	// and at most 10 records a batch. Default false: standard queues.
	FIFO bool

	// ContentBasedDeduplication turns on the FIFO queue's content-based
	// deduplication (a MessageDeduplicationId derived from the body when a
	// sender gives none). Only with FIFO. Default false: every sender
	// gives a MessageDeduplicationId.
	ContentBasedDeduplication bool

	// QueueName, if set, is the queue's name, and the dead-letter queue's
	// redrive-allow policy then lets only this queue use it. ".fifo" is
	// appended to a FIFO queue's name that lacks it. Default: none;
	// CloudFormation generates a unique name, and the dead-letter queue has
	// no redrive-allow policy. Setting, changing or removing it on a
	// deployed stack replaces the queue.
	QueueName string

	// VisibilityTimeout is the queue's visibility timeout. Default
	// [VisibilityFactor] × Timeout; it may not be shorter, and at most 12 hours.
	VisibilityTimeout time.Duration

	// Retention is how long the queue keeps a message. Default
	// [DefaultRetention]; between 1 minute and 14 days.
	Retention time.Duration

	// DeadLetterRetention is how long the dead-letter queue keeps a
	// message. Default [DefaultDeadLetterRetention]; not below Retention
	// for a standard queue (a message keeps its first enqueue time there).
	DeadLetterRetention time.Duration

	// MaxReceiveCount is the receives a message gets before it moves to
	// the dead-letter queue. Default [DefaultMaxReceiveCount].
	MaxReceiveCount int

	// ExpiryMargin is added to the dead-letter window to make the default
	// ExpiresAfter. Default [DefaultExpiryMargin].
	ExpiryMargin time.Duration

	// ExpiresAfter is how long an idempotency record counts (the table's
	// TTL). Default: [Plan.DeadLetterWindow] plus ExpiryMargin. It may not
	// be shorter than the dead-letter window, so that a message redriven
	// from the dead-letter queue still finds its record.
	ExpiresAfter time.Duration

	// BatchSize is the largest batch the event source delivers. Default
	// [DefaultBatchSize]; above 10 needs a batching window (and a
	// standard queue).
	BatchSize int

	// MaxBatchingWindow is how long the event source gathers messages
	// before it invokes the function. Default [DefaultMaxBatchingWindow]
	// for a standard queue, none for a FIFO queue (which takes none); a
	// negative value turns the window off. At most 5 minutes.
	MaxBatchingWindow time.Duration

	// MaxConcurrency caps the concurrent invocations of the event source in
	// standard mode. Default [DefaultMaxConcurrency]; between 2 and 1000;
	// negative for no cap (Lambda scales the event source up to its own
	// maximum). Refused with ProvisionedPollers: AWS takes one or the
	// other, and without it a provisioned event source has no cap but its
	// pollers.
	MaxConcurrency int

	// ProvisionedPollers puts the event source in provisioned mode. Default:
	// none, standard mode.
	ProvisionedPollers ProvisionedPollers

	// LogRetention is how long the function's log group keeps events.
	// Default one month.
	LogRetention awslogs.RetentionDays

	// OldestMessageAlarm is the age of the oldest queued message above
	// which the age alarm fires. Default [DefaultOldestMessageAlarm].
	OldestMessageAlarm time.Duration

	// MetricsNamespace is the CloudWatch namespace of the idempotency
	// outcome metrics the function writes with package middleware/metrics
	// (Failed, InProgressRetried, TakenOver, DoubleRuns, Quarantined), which
	// the outcome alarms watch. Default [DefaultMetricsNamespace].
	MetricsNamespace string

	// MetricsService is the value of those metrics' Service dimension
	// (middleware/metrics.Dimension). Default Namespace, the Service
	// middleware/lambdaenv gives the function's recorder.
	MetricsService string

	// AlarmTopic, if set, is notified by every alarm when it fires.
	AlarmTopic awssns.ITopic

	// EncryptionKey, if set, is a customer-managed KMS key that encrypts
	// the new table, both queues, the log group and the function's
	// environment, and the function gets exactly [KeyActions] on it. Its key
	// policy must let CloudWatch Logs (logs.<region>.amazonaws.com) use it:
	// the construct adds that statement to a key of the same app, and
	// cannot to an imported one. Producers then need kms:GenerateDataKey
	// and kms:Decrypt on it to send to the queue. An alias (awskms.Alias,
	// or Alias_FromAliasAttributes) stands for its target key, which every
	// resource and the grant then name: the log group and the function's
	// environment need a key's ARN, and IAM names keys by their ARN only.
	// An alias whose key the app does not know (Alias_FromAliasName, or an
	// alias ARN given to Key_FromKeyArn) is refused. Default: none, AWS- and
	// SQS-managed keys.
	EncryptionKey awskms.IKey

	// CreateEncryptionKey has the construct create that key (rotation on,
	// retained on delete) and use it as EncryptionKey. Not with
	// EncryptionKey.
	CreateEncryptionKey bool

	// SealKey, if set, is a KMS key that seals the stored results
	// (idempotency.Config.Sealer, package kmsseal): the construct sets
	// [EnvSealKey] to its ARN and grants the function exactly [KeyActions]
	// on it; the function imports middleware/lambdaenv/kmsenv. It may be an
	// alias: [EnvSealKey] is then the alias's ARN, and the grant is on the
	// alias's target key when the app knows it (awskms.Alias,
	// Alias_FromAliasAttributes), since IAM names keys by their ARN only;
	// for an alias imported by name (Alias_FromAliasName), on the keys of
	// its account and Region that carry the alias (the condition
	// kms:ResourceAliases), as the CDK's own grant on such an alias. Not with
	// SealWithEncryptionKey. Default: results unsealed.
	SealKey awskms.IKey

	// SealWithEncryptionKey seals the results with the encryption key
	// (EncryptionKey, or the created one), as SealKey does, with no grant
	// beyond the key's. Needs EncryptionKey or CreateEncryptionKey.
	SealWithEncryptionKey bool
}

// Plan is the figures a [Consumer] is built from: [Props] with its defaults
// applied and the expiry derived from the queues.
type Plan struct {
	Handler             string
	MemorySize          int
	Timeout             time.Duration
	Tracing             awslambda.Tracing
	FIFO                bool
	VisibilityTimeout   time.Duration
	Retention           time.Duration
	DeadLetterRetention time.Duration
	MaxReceiveCount     int

	// QueueWindow is the longest a message can keep being delivered from
	// the queue: batch.QueueWindow(Retention, MaxReceiveCount,
	// VisibilityTimeout).
	QueueWindow time.Duration
	// DeadLetterWindow is the longest a message can keep being delivered
	// when it is redriven once from the dead-letter queue, counted from
	// its first enqueue: the time it can wait in the dead-letter queue,
	// then a QueueWindow of its own (a redriven message is a new message).
	// It waits in a standard dead-letter queue until DeadLetterRetention
	// after its first enqueue; a FIFO dead-letter queue restarts the
	// retention, after at most Retention in the queue. So
	//
	//	standard: DeadLetterRetention + QueueWindow
	//	FIFO:     Retention + DeadLetterRetention + QueueWindow
	DeadLetterWindow time.Duration
	// ExpiresAfter is the record expiry passed to the runtime; at least
	// DeadLetterWindow.
	ExpiresAfter time.Duration

	BatchSize         int
	MaxBatchingWindow time.Duration // zero: no window
	// MaxConcurrency is the event source's cap; zero: none (provisioned
	// mode, or no cap asked for).
	MaxConcurrency int
	// ProvisionedPollers is Props.ProvisionedPollers with its defaults;
	// zero: standard mode.
	ProvisionedPollers ProvisionedPollers
	// WarmThroughput is Props.WarmThroughput; zero: none.
	WarmThroughput WarmThroughput

	LogRetention       awslogs.RetentionDays
	NewTable           bool // false: Props.Table is used
	TableRemovalPolicy awscdk.RemovalPolicy
	DeletionProtection bool
	QueueName          string // empty: generated by CloudFormation
	OldestMessageAlarm time.Duration
	MetricsNamespace   string
	MetricsService     string

	// SortKey is Props.SortKey with its default partition key; Attribute
	// empty: none.
	SortKey SortKey

	// Strict is Props.Strict.
	Strict bool

	// MinRemaining is Props.MinRemaining; zero follows the invocation.
	MinRemaining time.Duration

	// KeySource is Props.KeySource as envvars.KeySource spells it; empty:
	// none.
	KeySource string

	// Tenancy is Props.Tenancy; empty: the guard's default.
	Tenancy string
}

// queueNameChars are the characters SQS allows in a queue name.
var queueNameChars = regexp.MustCompile(`^[A-Za-z0-9_-]+$`)

// Plan applies the defaults to p, derives the expiry from the queues, and
// checks every figure against the services' limits and the rules above. It
// reports every problem at once; once the props pass, it checks the
// function's environment as lambdaenv.Load reads it. Code is checked by
// [New], not here.
func (p Props) Plan() (Plan, error) {
	var errs []error
	bad := func(format string, args ...any) {
		errs = append(errs, fmt.Errorf("idempotentconsumer: "+format, args...))
	}
	pick := func(v, def time.Duration) time.Duration {
		if v == 0 {
			return def
		}
		return v
	}
	pickInt := func(v, def int) int {
		if v == 0 {
			return def
		}
		return v
	}
	seconds := func(name string, d time.Duration) {
		if d%time.Second != 0 {
			bad("%s %v is not a whole number of seconds", name, d)
		}
	}

	if p.Namespace == "" {
		bad("Props.Namespace is required: a fixed string, not the function name")
	}
	if p.EncryptionKey != nil && p.CreateEncryptionKey {
		bad("Props.EncryptionKey and Props.CreateEncryptionKey: give a key or have one created, not both")
	}
	if p.EncryptionKey != nil {
		if k := keyOf(p.EncryptionKey); k.key == nil {
			bad("Props.EncryptionKey is the alias %s, whose key the app does not know (an alias imported by name, or an alias ARN given as a key ARN): "+
				"the log group and the function's environment need the key's ARN, and an IAM grant names a key by its ARN, never by an alias; "+
				"give the key (awskms.Key_FromKeyArn with the key's ARN) or the alias with its key (awskms.Alias_FromAliasAttributes with AliasTargetKey)", k.alias)
		}
	}
	if p.SealWithEncryptionKey && p.SealKey != nil {
		bad("Props.SealKey and Props.SealWithEncryptionKey: seal with one key, not both")
	}
	if p.SealWithEncryptionKey && p.EncryptionKey == nil && !p.CreateEncryptionKey {
		bad("Props.SealWithEncryptionKey needs Props.EncryptionKey or Props.CreateEncryptionKey: the key it seals with")
	}
	if strings.Contains(p.Namespace, "#") {
		bad("Props.Namespace %q holds a \"#\", which ends the namespace in a record id ({Namespace}#{digest}): "+
			"its ids would read as those of the namespace before it, and the function's guard (idempotency.Config.Namespace) refuses it at start-up", p.Namespace)
	}
	// envvars.Set is the list the construct owns: checking against it, not
	// a list of its own, keeps the two from drifting apart.
	for _, k := range envvars.Set() {
		if _, ok := p.Environment[k]; ok {
			bad("Props.Environment sets %s, which the construct derives", k)
		}
	}

	defaultWindow := DefaultMaxBatchingWindow
	if p.FIFO {
		defaultWindow = -1
	}
	pl := Plan{
		Handler:             p.Handler,
		MemorySize:          pickInt(p.MemorySize, DefaultMemorySize),
		Timeout:             pick(p.Timeout, DefaultTimeout),
		Tracing:             p.Tracing,
		FIFO:                p.FIFO,
		Retention:           pick(p.Retention, DefaultRetention),
		DeadLetterRetention: pick(p.DeadLetterRetention, DefaultDeadLetterRetention),
		MaxReceiveCount:     pickInt(p.MaxReceiveCount, DefaultMaxReceiveCount),
		BatchSize:           pickInt(p.BatchSize, DefaultBatchSize),
		MaxBatchingWindow:   pick(p.MaxBatchingWindow, defaultWindow),
		MaxConcurrency:      p.MaxConcurrency,
		WarmThroughput:      p.WarmThroughput,
		LogRetention:        p.LogRetention,
		NewTable:            p.Table == nil,
		SortKey:             p.SortKey,
		Strict:              p.Strict,
		MinRemaining:        p.MinRemaining,
		TableRemovalPolicy:  p.TableRemovalPolicy,
		DeletionProtection:  p.Table == nil && !p.DisableDeletionProtection,
		QueueName:           p.QueueName,
		OldestMessageAlarm:  pick(p.OldestMessageAlarm, DefaultOldestMessageAlarm),
		MetricsNamespace:    p.MetricsNamespace,
		MetricsService:      p.MetricsService,
	}
	if pl.Handler == "" {
		pl.Handler = DefaultHandler
	}
	if pl.Tracing == "" {
		pl.Tracing = awslambda.Tracing_DISABLED
	}
	if pl.LogRetention == "" {
		pl.LogRetention = awslogs.RetentionDays_ONE_MONTH
	}
	if sk := &pl.SortKey; *sk != (SortKey{}) {
		if sk.PartitionKey == "" {
			sk.PartitionKey = driver.AttrID
		}
		switch sk.Attribute {
		case "":
			bad("SortKey.Attribute, the sort key attribute, is required with SortKey's other fields")
		case sk.PartitionKey:
			bad("SortKey.Attribute %q and the partition key attribute %q cannot be the same", sk.Attribute, sk.PartitionKey)
		case driver.AttrStatus, driver.AttrExpiration, driver.AttrLeaseExpiry, driver.AttrData,
			driver.AttrValidation, driver.AttrOwner, driver.AttrDataEncoding, driver.AttrDataOmitted:
			bad("SortKey.Attribute %q is an attribute of the records", sk.Attribute)
		}
		if sk.Partition == "" {
			bad("SortKey.Partition is required with a sort key: a fixed string (Powertools' staticPkValue), since Powertools' default, idempotency#{function name}, changes with the generated function name")
		}
		if len(sk.Partition) > maxPartitionValue {
			bad("SortKey.Partition is %d bytes, above DynamoDB's %d", len(sk.Partition), maxPartitionValue)
		}
	}
	if pl.NewTable && pl.TableRemovalPolicy == "" {
		pl.TableRemovalPolicy = awscdk.RemovalPolicy_RETAIN
	}
	if pl.MaxBatchingWindow < 0 {
		pl.MaxBatchingWindow = 0
	}
	provisioned := p.ProvisionedPollers != (ProvisionedPollers{})
	switch {
	case provisioned:
		pl.ProvisionedPollers = ProvisionedPollers{
			Minimum: pickInt(p.ProvisionedPollers.Minimum, DefaultMinimumPollers),
			Maximum: pickInt(p.ProvisionedPollers.Maximum, DefaultMaximumPollers),
		}
	case pl.MaxConcurrency == 0:
		pl.MaxConcurrency = DefaultMaxConcurrency
	}
	if pl.MetricsNamespace == "" {
		pl.MetricsNamespace = DefaultMetricsNamespace
	}
	// CloudWatch takes no metric into a namespace that is reserved for AWS,
	// begins with ':' or is longer than 255 characters: the function's
	// metric lines would be dropped, and the outcome alarms never fire.
	// The function's reader (envvars.Read) applies the same rule.
	if err := metrics.CheckNamespace(pl.MetricsNamespace); err != nil {
		bad("MetricsNamespace %q is not one CloudWatch takes metrics into (%v): the outcome alarms would watch nothing", pl.MetricsNamespace, err)
	}
	if pl.MetricsService == "" {
		pl.MetricsService = p.Namespace
	}
	pl.VisibilityTimeout = pick(p.VisibilityTimeout, VisibilityFactor*pl.Timeout)

	switch pl.Tracing {
	case awslambda.Tracing_DISABLED, awslambda.Tracing_ACTIVE, awslambda.Tracing_PASS_THROUGH:
	default:
		bad("Tracing %q is not Active, PassThrough or Disabled", pl.Tracing)
	}
	if !pl.NewTable {
		if p.TableRemovalPolicy != "" {
			bad("TableRemovalPolicy is set with Props.Table: it applies only to a table the construct creates")
		}
		if p.DisableDeletionProtection {
			bad("DisableDeletionProtection is set with Props.Table: it applies only to a table the construct creates")
		}
	} else if pl.TableRemovalPolicy == awscdk.RemovalPolicy_DESTROY && pl.DeletionProtection {
		bad("TableRemovalPolicy destroy with deletion protection on: CloudFormation could not delete the table; set DisableDeletionProtection as well")
	}
	if p.ContentBasedDeduplication && !p.FIFO {
		bad("ContentBasedDeduplication is set without FIFO: only a FIFO queue deduplicates")
	}
	if pl.QueueName != "" {
		name := pl.QueueName
		if strings.HasSuffix(name, fifoSuffix) {
			if !pl.FIFO {
				bad("QueueName %q ends in %s but FIFO is not set", name, fifoSuffix)
			}
			name = strings.TrimSuffix(name, fifoSuffix)
		}
		if pl.FIFO {
			pl.QueueName = name + fifoSuffix
		}
		if !queueNameChars.MatchString(name) || len(pl.QueueName) > maxQueueName {
			bad("QueueName %q is not 1–%d letters, digits, hyphens and underscores (with %s for a FIFO queue)", pl.QueueName, maxQueueName, fifoSuffix)
		}
	}

	if pl.MemorySize < minMemorySize || pl.MemorySize > maxMemorySize {
		bad("MemorySize %d MB is outside %d–%d", pl.MemorySize, minMemorySize, maxMemorySize)
	}
	if pl.Timeout < time.Second || pl.Timeout > maxTimeout {
		bad("Timeout %v is outside 1s–%v", pl.Timeout, maxTimeout)
	}
	seconds("Timeout", pl.Timeout)
	switch p.Tenancy {
	case "", envvars.TenancyInvocation, envvars.TenancyMessageGroup, envvars.TenancyOff:
		pl.Tenancy = p.Tenancy
	default:
		bad("Props.Tenancy %q: want %q, %q or %q", p.Tenancy, envvars.TenancyInvocation, envvars.TenancyMessageGroup, envvars.TenancyOff)
	}
	if k, err := planKeySource(p.KeySource); err != nil {
		bad("%v", err)
	} else {
		pl.KeySource = k
	}
	if err := checkRecordsStart(pl.Timeout, pl.MinRemaining); err != nil {
		errs = append(errs, err)
	}
	switch {
	case pl.VisibilityTimeout < pl.Timeout:
		bad("VisibilityTimeout %v is below Timeout %v: Lambda refuses an event source mapping whose queue's visibility timeout "+
			"is below the function's timeout (a message would reappear while its invocation still runs), and the construct wants %d × Timeout (%v)",
			pl.VisibilityTimeout, pl.Timeout, VisibilityFactor, VisibilityFactor*pl.Timeout)
	case pl.VisibilityTimeout < VisibilityFactor*pl.Timeout:
		bad("VisibilityTimeout %v is below %d × Timeout %v (%v): Lambda could not retry a throttled batch before its messages reappear",
			pl.VisibilityTimeout, VisibilityFactor, pl.Timeout, VisibilityFactor*pl.Timeout)
	}
	if pl.VisibilityTimeout > maxVisibilityTimeout {
		bad("VisibilityTimeout %v is above SQS's maximum %v", pl.VisibilityTimeout, maxVisibilityTimeout)
	}
	seconds("VisibilityTimeout", pl.VisibilityTimeout)
	if pl.Retention < minRetention || pl.Retention > maxRetention {
		bad("Retention %v is outside SQS's %v–%v", pl.Retention, minRetention, maxRetention)
	}
	seconds("Retention", pl.Retention)
	if pl.DeadLetterRetention < minRetention || pl.DeadLetterRetention > maxRetention {
		bad("DeadLetterRetention %v is outside SQS's %v–%v", pl.DeadLetterRetention, minRetention, maxRetention)
	}
	if !pl.FIFO && pl.DeadLetterRetention < pl.Retention {
		bad("DeadLetterRetention %v is below Retention %v: a message keeps its first enqueue time in the dead-letter queue and would expire there early",
			pl.DeadLetterRetention, pl.Retention)
	}
	seconds("DeadLetterRetention", pl.DeadLetterRetention)
	if pl.MaxReceiveCount < 1 || pl.MaxReceiveCount > maxReceiveCountLimit {
		bad("MaxReceiveCount %d is outside 1–%d", pl.MaxReceiveCount, maxReceiveCountLimit)
	}
	if pl.BatchSize < 1 || pl.BatchSize > maxBatchSize {
		bad("BatchSize %d is outside 1–%d", pl.BatchSize, maxBatchSize)
	}
	if pl.FIFO {
		if pl.BatchSize > maxUnbatchedSize {
			bad("BatchSize %d is above %d, the most a FIFO queue's event source delivers", pl.BatchSize, maxUnbatchedSize)
		}
		if pl.MaxBatchingWindow > 0 {
			bad("MaxBatchingWindow %v is set with FIFO: a FIFO queue's event source takes no batching window", pl.MaxBatchingWindow)
		}
	} else if pl.BatchSize > maxUnbatchedSize && pl.MaxBatchingWindow < time.Second {
		bad("BatchSize %d is above %d and needs a MaxBatchingWindow of at least 1s", pl.BatchSize, maxUnbatchedSize)
	}
	if pl.MaxBatchingWindow > maxBatchingWindow {
		bad("MaxBatchingWindow %v is above Lambda's maximum %v", pl.MaxBatchingWindow, maxBatchingWindow)
	}
	seconds("MaxBatchingWindow", pl.MaxBatchingWindow)
	switch pp := pl.ProvisionedPollers; {
	case provisioned && p.MaxConcurrency != 0:
		bad("MaxConcurrency %d is set with ProvisionedPollers: AWS takes either a maximum concurrency or provisioned pollers "+
			"on an SQS event source, never both; a provisioned event source scales to ProvisionedPollers.Maximum × 10 concurrent invocations", p.MaxConcurrency)
	case provisioned:
		if pp.Minimum < minPollers || pp.Minimum > maxMinimumPollers {
			bad("ProvisionedPollers.Minimum %d is outside SQS's %d–%d", pp.Minimum, minPollers, maxMinimumPollers)
		}
		if pp.Maximum < minPollers || pp.Maximum > maxMaximumPollers {
			bad("ProvisionedPollers.Maximum %d is outside SQS's %d–%d", pp.Maximum, minPollers, maxMaximumPollers)
		}
		if pp.Minimum > pp.Maximum {
			bad("ProvisionedPollers.Minimum %d is above ProvisionedPollers.Maximum %d", pp.Minimum, pp.Maximum)
		}
	case pl.MaxConcurrency < 0:
		pl.MaxConcurrency = 0 // no cap
	case pl.MaxConcurrency < minMaxConcurrency || pl.MaxConcurrency > maxMaxConcurrency:
		bad("MaxConcurrency %d is outside %d–%d (negative for no cap)", pl.MaxConcurrency, minMaxConcurrency, maxMaxConcurrency)
	}
	if w := pl.WarmThroughput; w != (WarmThroughput{}) {
		if !pl.NewTable {
			bad("WarmThroughput is set with Props.Table: it applies only to a table the construct creates; pre-warm your table where it is defined")
		}
		if w.ReadUnitsPerSecond != 0 && w.ReadUnitsPerSecond < newTableWarmReads {
			bad("WarmThroughput.ReadUnitsPerSecond %d is below the %d read units per second a new on-demand table serves already (0 for those)",
				w.ReadUnitsPerSecond, newTableWarmReads)
		}
		if w.WriteUnitsPerSecond != 0 && w.WriteUnitsPerSecond < newTableWarmWrites {
			bad("WarmThroughput.WriteUnitsPerSecond %d is below the %d write units per second a new on-demand table serves already (0 for those)",
				w.WriteUnitsPerSecond, newTableWarmWrites)
		}
	}
	if pl.OldestMessageAlarm <= 0 {
		bad("OldestMessageAlarm %v is not positive", pl.OldestMessageAlarm)
	}
	seconds("OldestMessageAlarm", pl.OldestMessageAlarm)

	pl.QueueWindow = batch.QueueWindow(pl.Retention, pl.MaxReceiveCount, pl.VisibilityTimeout)
	pl.DeadLetterWindow = pl.DeadLetterRetention + pl.QueueWindow
	deadLetterWait := "DeadLetterRetention " + pl.DeadLetterRetention.String()
	if pl.FIFO {
		pl.DeadLetterWindow += pl.Retention
		deadLetterWait = fmt.Sprintf("Retention %v + DeadLetterRetention %v (a FIFO dead-letter queue restarts a message's retention)",
			pl.Retention, pl.DeadLetterRetention)
	}
	margin := pick(p.ExpiryMargin, DefaultExpiryMargin)
	if margin < 0 {
		bad("ExpiryMargin %v is negative", margin)
	}
	pl.ExpiresAfter = pick(p.ExpiresAfter, pl.DeadLetterWindow+margin)
	switch {
	case pl.ExpiresAfter < pl.QueueWindow:
		bad("ExpiresAfter %v is below the queue's window %v (Retention %v + MaxReceiveCount %d × VisibilityTimeout %v): "+
			"a late redelivery would find no record and run again",
			pl.ExpiresAfter, pl.QueueWindow, pl.Retention, pl.MaxReceiveCount, pl.VisibilityTimeout)
	case pl.ExpiresAfter < pl.DeadLetterWindow:
		bad("ExpiresAfter %v is below the dead-letter window %v (%s + the queue's window %v): "+
			"a message redriven from the dead-letter queue is delivered as a new message and would find no record and run again; "+
			"raise ExpiresAfter or shorten DeadLetterRetention",
			pl.ExpiresAfter, pl.DeadLetterWindow, deadLetterWait, pl.QueueWindow)
	}
	seconds("ExpiresAfter", pl.ExpiresAfter)
	seconds("ExpiryMargin", margin)

	// The props meet Props.Environment in the function's environment:
	// once the props pass, it must pass lambdaenv.Load's reader too, or the
	// deployed function fails every cold start.
	if len(errs) == 0 {
		for _, err := range checkEnvironment(environment(p, pl)) {
			bad("the function's environment, which lambdaenv.Load would refuse at every cold start: %v", err)
		}
	}
	if err := errors.Join(errs...); err != nil {
		return Plan{}, err
	}
	return pl, nil
}

// Placeholders for the values of the function's environment known at
// deploy time only, as [checkEnvironment] reads them.
const (
	plannedTable   = "table"
	plannedSealKey = "arn:aws:kms:us-east-1:111122223333:key/planned"
)

// environment returns the function's environment as the construct sets
// it from p and pl: Props.Environment and the construct's variables, with
// placeholders for the table's name and the seal key's ARN.
func environment(p Props, pl Plan) map[string]string {
	env := make(map[string]string, len(p.Environment)+16)
	for k, v := range p.Environment {
		env[k] = v
	}
	env[EnvTable] = plannedTable
	env[EnvNamespace] = p.Namespace
	env[EnvExpiresAfter] = GoSeconds(pl.ExpiresAfter)
	env[EnvQueueWindow] = GoSeconds(pl.QueueWindow)
	if sk := pl.SortKey; sk.Attribute != "" {
		env[EnvPartitionKey] = sk.PartitionKey
		env[EnvSortKey] = sk.Attribute
		env[EnvStaticPartition] = sk.Partition
	}
	if pl.Strict {
		env[EnvStrict] = "true"
	}
	if pl.MinRemaining > 0 {
		v := pl.MinRemaining.String()
		if pl.MinRemaining%time.Second == 0 {
			v = GoSeconds(pl.MinRemaining)
		}
		env[EnvMinRemaining] = v
	}
	if pl.KeySource != "" {
		env[EnvKey] = pl.KeySource
	}
	if pl.Tenancy != "" {
		env[EnvTenancy] = pl.Tenancy
	}
	if p.SealKey != nil || p.SealWithEncryptionKey {
		env[EnvSealKey] = plannedSealKey
	}
	if pl.MetricsNamespace != DefaultMetricsNamespace {
		env[EnvMetricsNamespace] = pl.MetricsNamespace
	}
	if pl.MetricsService != p.Namespace {
		env[EnvMetricsService] = pl.MetricsService
	}
	return env
}

// checkEnvironment returns what lambdaenv.Load refuses in env before it
// builds anything: envvars.Read's refusals, then envvars.CheckNames's, one
// error each, none quoting a value. A variable Read reads whose value the
// CDK resolves at deploy time (a token) cannot be checked here: then only
// the names are.
func checkEnvironment(env map[string]string) []error {
	environ := make([]string, 0, len(env))
	for k, v := range env {
		environ = append(environ, k+"="+v)
	}
	slices.Sort(environ)
	var out []error
	split := func(err error) {
		if err == nil {
			return
		}
		for _, line := range strings.Split(err.Error(), "\n") {
			out = append(out, errors.New(line))
		}
	}
	tokens := slices.ContainsFunc(slices.Concat(envvars.Set(), envvars.Optional()), func(name string) bool {
		v, ok := env[name]
		return ok && isToken(v)
	})
	if !tokens {
		_, err := envvars.Read(func(name string) string { return env[name] })
		split(err)
	}
	split(envvars.CheckNames(environ))
	return out
}

// isToken reports whether v holds a value the CDK resolves at deploy time
// (a token's string form, such as "${Token[TOKEN.123]}"), which Plan
// cannot check without jsii.
func isToken(v string) bool {
	return strings.Contains(v, "${Token[") || strings.Contains(v, "#{Token[")
}

// planKeySource checks Props.KeySource as the function's reader does:
// envvars.ParseKey, then, for a JMESPath source, jmespath.Compile (what
// lambdaenv.Selector runs at every cold start), so that synth refuses a
// source the deployed function would refuse.
func planKeySource(v string) (string, error) {
	if v == "" {
		return "", nil
	}
	k, err := envvars.ParseKey(v)
	if err != nil {
		return "", fmt.Errorf("Props.KeySource: %w", err)
	}
	if k.Kind == envvars.KeyJMESPath {
		if _, err := jmespath.Compile(k.Expr); err != nil {
			return "", fmt.Errorf("Props.KeySource: the JMESPath expression does not compile, and the function's reader (lambdaenv.Selector) would refuse it at every cold start: %w", err)
		}
	}
	return k.String(), nil
}

// GoSeconds formats d as the Go duration string the runtime parses, in
// whole seconds: 97*time.Hour+30*time.Minute is "351000s".
func GoSeconds(d time.Duration) string {
	return fmt.Sprintf("%ds", int64(d/time.Second))
}

// checkRecordsStart refuses a function timeout at which the function's
// batch handler could start no record, by the rule package batch applies
// at run time ([batch.Options.CheckTimeout]) with the construct's
// MinRemaining and batch's default Reserve.
func checkRecordsStart(timeout, minRemaining time.Duration) error {
	if minRemaining < 0 {
		return fmt.Errorf("idempotentconsumer: MinRemaining %v is negative", minRemaining)
	}
	if err := (batch.Options{MinRemaining: minRemaining}).CheckTimeout(timeout); err != nil {
		return fmt.Errorf("idempotentconsumer: Timeout %v with MinRemaining %v: %w", timeout, minRemaining, err)
	}
	return nil
}
