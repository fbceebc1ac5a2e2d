// Package lambdaenv is the contract between infra's construct
// (infra/idempotentconsumer) and the function it deploys: the construct
// sets the variables named by package envvars's constants, and [Load] reads
// them in the function's main and returns the store (DynamoDB; Redis or
// PostgreSQL with SQSONCE_STORE and one import, below), the guard's idempotency.Config, the
// batch.Options and the metrics recorder, as plain values the function may
// change before use.
//
// What the construct grants, the options turn on: a permanent failure
// goes to the queue's dead-letter queue at once (batch.DeadLetter, through
// sqsdlq), a record failed because its key is in progress elsewhere comes
// back just after the holder's lease ends, others after a backoff
// (batch.Pacing, through sqsvisibility), and the messages of the records
// that run stay invisible while they run (batch.KeepVisible). Each is one
// variable away from off: SQSONCE_DEAD_LETTER=off, SQSONCE_PACING=off (which
// turns keeping invisible off too), SQSONCE_KEEP_VISIBLE=off; with the
// construct, set them in Props.Environment.
//
//	env, err := lambdaenv.Load(ctx) // once, in main
//	if err != nil {
//		log.Fatal(err)
//	}
//	key, err := env.KeySelector() // SQSONCE_KEY's selector; unset, an error naming it
//	if err != nil {
//		log.Fatal(err)
//	}
//	g, err := idempotency.New(env.Config)
//	h := batch.SQS(idempotency.Wrap(g, key, charge), env.Options)
//	lambda.StartHandlerFunc(env.Handler(h))
//
// A function that passes a selector of its own to idempotency.Wrap leaves
// SQSONCE_KEY unset and does not call KeySelector.
//
// Explicit configuration stays first-class: Load is a convenience over
// dynamostore.New, idempotency.Config, batch.Options and
// middleware/metrics, and envvars.Read parses the variables without building
// anything. A missing or bad variable is an error naming it, never quoting
// its value when the value may be a secret (none of these is); so is a
// misspelt SQSONCE_ name (envvars.CheckNames), and a store's server or KMS
// that does not answer within [OpenTimeout] at start-up.
//
// The Redis and PostgreSQL stores live in modules of their own, so that a
// function on DynamoDB does not require their clients: with
// SQSONCE_STORE=redis or postgres, main imports the store's opener for
// its side effect, as database/sql's drivers are imported:
//
//	import _ "github.com/sqsonce/sqsonce/middleware/lambdaenv/redisenv"
//	import _ "github.com/sqsonce/sqsonce/middleware/lambdaenv/pgenv"
//
// Without it, Load's error names the import. So with SQSONCE_SEAL_KEY
// (the construct's Props.SealKey): Config.Sealer seals results under that
// KMS key once main imports
//
//	import _ "github.com/sqsonce/sqsonce/middleware/lambdaenv/kmsenv"
//
// and Load fails without it, never leaving results unsealed.
//
// The variables and what each sets are listed in package
// middleware/lambdaenv/envvars, whose constants the construct uses.
package lambdaenv

import (
	"context"
	"errors"
	"fmt"
	"os"
	"sync"
	"time"

	"github.com/aws/aws-lambda-go/events"
	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/config"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/sqs"

	"github.com/sqsonce/sqsonce/middleware/batch"
	"github.com/sqsonce/sqsonce/middleware/batch/sqsdlq"
	"github.com/sqsonce/sqsonce/middleware/batch/sqsvisibility"
	"github.com/sqsonce/sqsonce/middleware/idempotency"
	"github.com/sqsonce/sqsonce/middleware/idempotency/driver"
	"github.com/sqsonce/sqsonce/middleware/idempotency/dynamostore"
	"github.com/sqsonce/sqsonce/middleware/idempotency/jmespath"
	"github.com/sqsonce/sqsonce/middleware/lambdaenv/envvars"
	"github.com/sqsonce/sqsonce/middleware/metrics"
)

// Function is what [Load] builds: plain values, which main may change
// before it builds the guard and the handler.
type Function struct {
	Settings envvars.Settings
	// Store is the DynamoDB store on the table, also Config.Store; nil
	// with another store (Config.Store holds it).
	Store *dynamostore.Store
	// Config is the guard's configuration: Store, Namespace, ExpiresAfter,
	// MinExpiry (the queue's window), Tenancy, Format, Strict, Sealer (with
	// SQSONCE_SEAL_KEY), and OnOutcome counting the metrics when they are
	// on.
	Config idempotency.Config
	// Options is the batch handler's: MinRemaining, DeadLetter, Pacing and
	// KeepVisible as the variables say, and OnRecord counting the metrics
	// when they are on.
	Options batch.Options
	// Metrics is the recorder writing the EMF lines to standard output;
	// nil when SQSONCE_METRICS is off.
	Metrics *metrics.Recorder
	// Key is the selector SQSONCE_KEY names (see envvars.KeySource), the
	// one sqsonce-ops computes record ids with; the zero Selector, which
	// selects nothing, when the variable is unset: [Function.KeySelector]
	// says so.
	Key idempotency.Selector

	closers []func() error
}

// Close closes the Redis client or the PostgreSQL pool New opened; it does
// nothing for DynamoDB. A function need not call it: Lambda ends the
// process.
func (f *Function) Close() error {
	var errs []error
	for _, c := range f.closers {
		errs = append(errs, c())
	}
	f.closers = nil
	return errors.Join(errs...)
}

// KeySelector returns Key, the selector SQSONCE_KEY names, or, when the
// variable is unset (Settings.Key is nil), an error naming it, so that
// main fails at start-up saying what is missing rather than
// idempotency.Wrap panicking on the zero Selector. A function with a
// selector of its own leaves SQSONCE_KEY unset and does not call it.
func (f *Function) KeySelector() (idempotency.Selector, error) {
	if f.Settings.Key == nil {
		return idempotency.Selector{}, fmt.Errorf("lambdaenv: %s is unset: set it (the construct's Props.KeySource), or pass a selector of your own to idempotency.Wrap", envvars.EnvKey)
	}
	return f.Key, nil
}

// OpenTimeout bounds each opener's start-up: the Redis and PostgreSQL
// stores' first round trips (packages redisenv and pgenv) and the sealer's
// check (kmsenv). A server that accepts a connection and never answers
// fails Load within it, naming the variable, rather than Lambda's init
// phase (10 s).
const OpenTimeout = 5 * time.Second

// Selector returns the selector k names: BodyField, BodySubset, or a
// compiled JMESPath expression's. A bad expression is an error naming
// SQSONCE_KEY, not quoting it.
func Selector(k envvars.KeySource) (idempotency.Selector, error) {
	switch k.Kind {
	case envvars.KeyBody:
		if len(k.Path) > 0 {
			return idempotency.BodyField(k.Path[0], k.Path[1:]...), nil
		}
	case envvars.KeySubset:
		if len(k.Names) > 0 {
			return idempotency.BodySubset(k.Names...), nil
		}
	case envvars.KeyJMESPath:
		e, err := jmespath.Compile(k.Expr)
		if err != nil {
			return idempotency.Selector{}, fmt.Errorf("lambdaenv: %s: the JMESPath expression does not compile", envvars.EnvKey)
		}
		return e.Selector(), nil
	}
	return idempotency.Selector{}, fmt.Errorf("lambdaenv: %s: an empty key source", envvars.EnvKey)
}

// Tenancy returns the idempotency.Tenancy SQSONCE_TENANCY names
// (envvars.TenancyInvocation, TenancyMessageGroup or TenancyOff; empty is
// the default, TenancyInvocation).
func Tenancy(v string) (idempotency.Tenancy, error) {
	switch v {
	case "", envvars.TenancyInvocation:
		return idempotency.TenancyInvocation, nil
	case envvars.TenancyMessageGroup:
		return idempotency.TenancyMessageGroup, nil
	case envvars.TenancyOff:
		return idempotency.TenancyOff, nil
	}
	return 0, fmt.Errorf("lambdaenv: %s is not %q, %q or %q", envvars.EnvTenancy, envvars.TenancyInvocation, envvars.TenancyMessageGroup, envvars.TenancyOff)
}

// Format returns the idempotency.Format SQSONCE_FORMAT names
// (envvars.FormatNative, FormatPowertoolsPython or FormatPowertoolsTypeScript;
// empty is the default, FormatNative), or an error naming the variable.
// sqsonce-ops's --format takes the same names.
func Format(v string) (idempotency.Format, error) {
	switch v {
	case "", envvars.FormatNative:
		return idempotency.FormatNative, nil
	case envvars.FormatPowertoolsPython:
		return idempotency.FormatPowertoolsPython, nil
	case envvars.FormatPowertoolsTypeScript:
		return idempotency.FormatPowertoolsTypeScript, nil
	}
	return 0, fmt.Errorf("lambdaenv: %s is not %q, %q or %q", envvars.EnvFormat, envvars.FormatNative, envvars.FormatPowertoolsPython, envvars.FormatPowertoolsTypeScript)
}

// DataFormat returns the dynamostore.DataFormat SQSONCE_DATA_FORMAT names
// (envvars.DataJSON, DataPowertoolsPython or DataPowertoolsTypeScript; empty
// is the default, DataJSON), or an error naming the variable.
// sqsonce-ops's --data-format takes the same names.
func DataFormat(v string) (dynamostore.DataFormat, error) {
	switch v {
	case "", envvars.DataJSON:
		return dynamostore.DataJSON, nil
	case envvars.DataPowertoolsPython:
		return dynamostore.DataPowertoolsPython, nil
	case envvars.DataPowertoolsTypeScript:
		return dynamostore.DataPowertoolsTypeScript, nil
	}
	return 0, fmt.Errorf("lambdaenv: %s is not %q, %q or %q", envvars.EnvDataFormat, envvars.DataJSON, envvars.DataPowertoolsPython, envvars.DataPowertoolsTypeScript)
}

// SQSAPI is the part of *sqs.Client that pacing (sqsvisibility) and the
// dead-letter mover (sqsdlq) call.
type SQSAPI interface {
	sqsvisibility.API
	sqsdlq.API
}

// Clients are the AWS clients [New] builds on. [Load] makes them from the
// function's AWS configuration.
type Clients struct {
	// DynamoDB is the DynamoDB store's client; unused with another store.
	DynamoDB dynamostore.API
	// SQS is pacing's and the dead-letter mover's client; unused when
	// both are off (SQSONCE_PACING=off, SQSONCE_DEAD_LETTER=off).
	SQS SQSAPI
}

// Load reads the variables from the process's environment and builds the
// AWS clients (once: call Load in main, with main's context), the store,
// the guard's configuration, the batch options and, unless
// SQSONCE_METRICS is off, the metrics recorder wired into both. It refuses
// what envvars.Read refuses, and a misspelt SQSONCE_ name in the
// environment (envvars.CheckNames), all at once.
func Load(ctx context.Context) (*Function, error) {
	s, err := envvars.Read(os.Getenv)
	if err = errors.Join(err, envvars.CheckNames(os.Environ())); err != nil {
		return nil, err
	}
	var c Clients
	needSQS := s.DeadLetter || s.Pacing
	if s.Store == envvars.StoreDynamoDB || needSQS {
		cfg, err := config.LoadDefaultConfig(ctx)
		if err != nil {
			return nil, fmt.Errorf("lambdaenv: AWS configuration: %w", err)
		}
		if s.Store == envvars.StoreDynamoDB {
			c.DynamoDB = dynamodb.NewFromConfig(cfg, func(o *dynamodb.Options) {
				if s.DynamoDBEndpoint != "" {
					o.BaseEndpoint = aws.String(s.DynamoDBEndpoint)
				}
			})
		}
		if needSQS {
			c.SQS = sqs.NewFromConfig(cfg, func(o *sqs.Options) {
				if s.SQSEndpoint != "" {
					o.BaseEndpoint = aws.String(s.SQSEndpoint)
				}
			})
		}
	}
	return New(ctx, s, c)
}

// New builds what [Load] builds from settings already read and clients of
// the caller's. With another store than DynamoDB it calls the opener
// registered for SQSONCE_STORE (package redisenv or pgenv), which opens a
// client or a pool: [Function.Close] closes it. Its errors name the
// variable at fault and never quote a connection string.
func New(ctx context.Context, s envvars.Settings, c Clients) (*Function, error) {
	tenancy, err := Tenancy(s.Tenancy)
	if err != nil {
		return nil, err
	}
	format, err := Format(s.Format)
	if err != nil {
		return nil, err
	}
	f := &Function{Settings: s, Options: batch.Options{MinRemaining: s.MinRemaining}}
	var store driver.Store
	switch s.Store {
	case "", envvars.StoreDynamoDB:
		if c.DynamoDB == nil {
			return nil, errors.New("lambdaenv: the DynamoDB store needs Clients.DynamoDB")
		}
		dataFormat, err := DataFormat(s.DataFormat)
		if err != nil {
			return nil, err
		}
		opts := []dynamostore.Option{dynamostore.WithDataFormat(dataFormat)}
		if k := s.SortKey; k != nil {
			opts = append(opts, dynamostore.WithAttributes(dynamostore.Attributes{ID: k.PartitionKey}),
				dynamostore.WithSortKey(dynamostore.SortKey{Attr: k.Attr, Partition: k.Partition}))
		}
		ds, err := dynamostore.New(c.DynamoDB, s.Table, opts...)
		if err != nil {
			at := envvars.EnvTable
			if s.SortKey != nil {
				at += ", " + envvars.EnvSortKey + ", " + envvars.EnvPartitionKey + " or " + envvars.EnvStaticPartition
			}
			return nil, fmt.Errorf("lambdaenv: %s: %w", at, err)
		}
		f.Store, store = ds, ds
	default:
		open, ok := opener(s.Store)
		if !ok {
			if imp, known := storeImports[s.Store]; known {
				return nil, fmt.Errorf("lambdaenv: %s=%s needs the store's opener in main: import _ %q", envvars.EnvStore, s.Store, imp)
			}
			return nil, fmt.Errorf("lambdaenv: %s is not %q, %q or %q", envvars.EnvStore, envvars.StoreDynamoDB, envvars.StoreRedis, envvars.StorePostgres)
		}
		st, closer, err := open(ctx, s)
		if err != nil {
			return nil, err
		}
		if closer != nil {
			f.closers = append(f.closers, closer)
		}
		store = st
	}
	f.Config = idempotency.Config{Store: store, Namespace: s.Namespace, ExpiresAfter: s.ExpiresAfter,
		MinExpiry: s.QueueWindow, Tenancy: tenancy, Strict: s.Strict, Format: format}
	if s.SealKey != "" {
		sealersMu.RLock()
		open := sealerOpener
		sealersMu.RUnlock()
		if open == nil {
			_ = f.Close()
			return nil, fmt.Errorf("lambdaenv: %s is set: results are sealed, and main must import the sealer: import _ %q", envvars.EnvSealKey, kmsenvImport)
		}
		if f.Config.Sealer, err = open(ctx, s); err != nil {
			_ = f.Close()
			return nil, err
		}
	}
	if s.Key != nil {
		if f.Key, err = Selector(*s.Key); err != nil {
			_ = f.Close()
			return nil, err
		}
	}
	if err := f.sqsOptions(s, c.SQS); err != nil {
		_ = f.Close()
		return nil, err
	}
	if s.Metrics {
		rec, err := metrics.New(metrics.Config{Writer: os.Stdout, Namespace: s.MetricsNamespace, Service: s.MetricsService})
		if err != nil {
			_ = f.Close()
			return nil, fmt.Errorf("lambdaenv: %w", err)
		}
		rec.Instrument(&f.Config, &f.Options)
		f.Metrics = rec
	}
	return f, nil
}

// sqsOptions sets the dead-letter mover, pacing and keeping invisible as
// the settings say.
func (f *Function) sqsOptions(s envvars.Settings, api SQSAPI) error {
	if (s.DeadLetter || s.Pacing) && api == nil {
		return fmt.Errorf("lambdaenv: moving permanent failures to the dead-letter queue and pacing need Clients.SQS (or %s=off and %s=off)", envvars.EnvDeadLetter, envvars.EnvPacing)
	}
	if s.DeadLetter {
		// A permanent failure (a body that does not decode, no key) fails
		// on every delivery: to the dead-letter queue after the first,
		// not after maxReceiveCount deliveries.
		mover, err := sqsdlq.New(api)
		if err != nil {
			return fmt.Errorf("lambdaenv: %w", err)
		}
		f.Options.DeadLetter = batch.DeadLetter{Mover: mover}
	}
	if s.Pacing {
		// A record in progress elsewhere comes back just after the
		// holder's lease ends; other failures after a backoff: not at the
		// queue's visibility timeout.
		changer, err := sqsvisibility.New(api)
		if err != nil {
			return fmt.Errorf("lambdaenv: %w", err)
		}
		f.Options.Pacing = batch.Pacing{Changer: changer}
		if !s.KeepVisible {
			f.Options.KeepVisible.Every = -1
		}
	}
	return nil
}

// StoreOpener opens the store SQSONCE_STORE names from the settings
// (their RedisURL or PostgresURL, and the store's other settings),
// returning it and what closes its client or pool (nil if nothing), within
// [OpenTimeout] of its start. Its errors name the variable at fault and
// never quote a connection string or its password.
type StoreOpener func(ctx context.Context, s envvars.Settings) (store driver.Store, closer func() error, err error)

var (
	openersMu sync.RWMutex
	openers   = map[string]StoreOpener{}
	// storeImports names the package that registers each store this
	// repository ships an opener for.
	storeImports = map[string]string{
		envvars.StoreRedis:    "github.com/sqsonce/sqsonce/middleware/lambdaenv/redisenv",
		envvars.StorePostgres: "github.com/sqsonce/sqsonce/middleware/lambdaenv/pgenv",
	}
)

// SealerOpener returns the sealer of the KMS key s.SealKey names
// (SQSONCE_SEAL_KEY). Its errors name the variable at fault.
type SealerOpener func(ctx context.Context, s envvars.Settings) (driver.Sealer, error)

const kmsenvImport = "github.com/sqsonce/sqsonce/middleware/lambdaenv/kmsenv"

var (
	sealersMu    sync.RWMutex
	sealerOpener SealerOpener
)

// RegisterSealer makes SQSONCE_SEAL_KEY seal results with the sealer open
// returns; package kmsenv calls it from its init. It panics when open is
// nil or a sealer is registered already.
func RegisterSealer(open SealerOpener) {
	sealersMu.Lock()
	defer sealersMu.Unlock()
	if open == nil || sealerOpener != nil {
		panic("lambdaenv: RegisterSealer called twice or with nil")
	}
	sealerOpener = open
}

// RegisterStore makes SQSONCE_STORE=name open its store with open; the
// packages redisenv and pgenv call it from their init. It panics, as
// database/sql's Register does, when open is nil, when name is empty or
// envvars.StoreDynamoDB (built in), or when name is registered twice.
func RegisterStore(name string, open StoreOpener) {
	openersMu.Lock()
	defer openersMu.Unlock()
	if open == nil || name == "" || name == envvars.StoreDynamoDB {
		panic("lambdaenv: RegisterStore of " + name + ": a nil opener or a reserved name")
	}
	if _, dup := openers[name]; dup {
		panic("lambdaenv: RegisterStore called twice for " + name)
	}
	openers[name] = open
}

func opener(name string) (StoreOpener, bool) {
	openersMu.RLock()
	defer openersMu.RUnlock()
	o, ok := openers[name]
	return o, ok
}

// Handler returns h with one metrics line written per invocation, or h
// itself when the metrics are off.
func (f *Function) Handler(h func(context.Context, events.SQSEvent) (events.SQSEventResponse, error)) func(context.Context, events.SQSEvent) (events.SQSEventResponse, error) {
	if f.Metrics == nil {
		return h
	}
	return f.Metrics.Batch(h)
}
