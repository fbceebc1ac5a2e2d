// Package lambdaenv is the contract between infra's construct
// (infra/idempotentconsumer) and the function it deploys: the construct
// sets the variables named by package envvars's constants, and [Load] reads
// them in the function's main and returns the DynamoDB store, the guard's
// idempotency.Config, the batch.Options and the metrics recorder, as plain
// values the function may change before use.
//
//	env, err := lambdaenv.Load(ctx) // once, in main
//	if err != nil {
//		log.Fatal(err)
//	}
//	g, err := idempotency.New(env.Config)
//	h := batch.SQS(idempotency.Wrap(g, env.Key, charge), env.Options) // env.Key: SQSONCE_KEY's selector
//	lambda.StartHandlerFunc(env.Handler(h))
//
// Explicit configuration stays first-class: Load is a convenience over
// dynamostore.New, idempotency.Config, batch.Options and
// middleware/metrics, and envvars.Read parses the variables without building
// anything. A missing or bad variable is an error naming it, never quoting
// its value when the value may be a secret (none of these is).
//
// The variables and what each sets are listed in package
// middleware/lambdaenv/envvars, whose constants the construct uses.
package lambdaenv

import (
	"context"
	"fmt"
	"os"

	"github.com/aws/aws-lambda-go/events"
	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/config"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"

	"github.com/sqsonce/sqsonce/middleware/batch"
	"github.com/sqsonce/sqsonce/middleware/idempotency"
	"github.com/sqsonce/sqsonce/middleware/idempotency/dynamostore"
	"github.com/sqsonce/sqsonce/middleware/idempotency/jmespath"
	"github.com/sqsonce/sqsonce/middleware/lambdaenv/envvars"
	"github.com/sqsonce/sqsonce/middleware/metrics"
)

// Function is what [Load] builds: plain values, which main may change
// before it builds the guard and the handler.
type Function struct {
	Settings envvars.Settings
	// Store is the DynamoDB store on the table, also Config.Store.
	Store *dynamostore.Store
	// Config is the guard's configuration: Store, Namespace, ExpiresAfter,
	// MinExpiry (the queue's window), Strict, and OnOutcome counting the
	// metrics when they are on.
	Config idempotency.Config
	// Options is the batch handler's: MinRemaining, and OnRecord counting
	// the metrics when they are on.
	Options batch.Options
	// Metrics is the recorder writing the EMF lines to standard output;
	// nil when SQSONCE_METRICS is off.
	Metrics *metrics.Recorder
	// Key is the selector SQSONCE_KEY names (see envvars.KeySource), the
	// one sqsonce-ops computes record ids with; the zero Selector, which
	// selects nothing, when the variable is unset.
	Key idempotency.Selector
}

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

// Load reads the variables from the process's environment and builds the
// DynamoDB client (once: call Load in main, with main's context), the
// store, the guard's configuration, the batch options and, unless
// SQSONCE_METRICS is off, the metrics recorder wired into both.
func Load(ctx context.Context) (*Function, error) {
	s, err := envvars.Read(os.Getenv)
	if err != nil {
		return nil, err
	}
	cfg, err := config.LoadDefaultConfig(ctx)
	if err != nil {
		return nil, fmt.Errorf("lambdaenv: AWS configuration: %w", err)
	}
	return New(s, dynamodb.NewFromConfig(cfg, func(o *dynamodb.Options) {
		if s.DynamoDBEndpoint != "" {
			o.BaseEndpoint = aws.String(s.DynamoDBEndpoint)
		}
	}))
}

// New builds what [Load] builds from settings already read and a DynamoDB
// client of the caller's.
func New(s envvars.Settings, db dynamostore.API) (*Function, error) {
	var opts []dynamostore.Option
	if k := s.SortKey; k != nil {
		opts = append(opts, dynamostore.WithAttributes(dynamostore.Attributes{ID: k.PartitionKey}),
			dynamostore.WithSortKey(dynamostore.SortKey{Attr: k.Attr, Partition: k.Partition}))
	}
	store, err := dynamostore.New(db, s.Table, opts...)
	if err != nil {
		return nil, fmt.Errorf("lambdaenv: %s: %w", envvars.EnvTable, err)
	}
	f := &Function{
		Settings: s,
		Store:    store,
		Config: idempotency.Config{Store: store, Namespace: s.Namespace, ExpiresAfter: s.ExpiresAfter,
			MinExpiry: s.QueueWindow, Strict: s.Strict},
		Options: batch.Options{MinRemaining: s.MinRemaining},
	}
	if s.Key != nil {
		if f.Key, err = Selector(*s.Key); err != nil {
			return nil, err
		}
	}
	if s.Metrics {
		rec, err := metrics.New(metrics.Config{Writer: os.Stdout, Namespace: s.MetricsNamespace, Service: s.MetricsService})
		if err != nil {
			return nil, fmt.Errorf("lambdaenv: %w", err)
		}
		rec.Instrument(&f.Config, &f.Options)
		f.Metrics = rec
	}
	return f, nil
}

// Handler returns h with one metrics line written per invocation, or h
// itself when the metrics are off.
func (f *Function) Handler(h func(context.Context, events.SQSEvent) (events.SQSEventResponse, error)) func(context.Context, events.SQSEvent) (events.SQSEventResponse, error) {
	if f.Metrics == nil {
		return h
	}
	return f.Metrics.Batch(h)
}
