package main

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"time"

	"github.com/aws/aws-lambda-go/events"
	"github.com/aws/aws-lambda-go/lambdacontext"
	"github.com/aws/aws-sdk-go-v2/aws"
	awsconfig "github.com/aws/aws-sdk-go-v2/config"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/kms"
	"github.com/aws/aws-sdk-go-v2/service/s3"
	"github.com/aws/aws-sdk-go-v2/service/sqs"
	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/redis/go-redis/v9"

	"github.com/sqsonce/sqsonce/handler"
	"github.com/sqsonce/sqsonce/handler/bedrock"
	"github.com/sqsonce/sqsonce/handler/dynamosink"
	"github.com/sqsonce/sqsonce/handler/metrics"
	"github.com/sqsonce/sqsonce/handler/openai"
	"github.com/sqsonce/sqsonce/handler/s3docs"
	"github.com/sqsonce/sqsonce/internal/redact"
	"github.com/sqsonce/sqsonce/middleware/batch"
	"github.com/sqsonce/sqsonce/middleware/batch/sqsdlq"
	"github.com/sqsonce/sqsonce/middleware/batch/sqsvisibility"
	"github.com/sqsonce/sqsonce/middleware/idempotency"
	"github.com/sqsonce/sqsonce/middleware/idempotency/driver"
	"github.com/sqsonce/sqsonce/middleware/idempotency/dynamostore"
	"github.com/sqsonce/sqsonce/middleware/idempotency/memstore"
	"github.com/sqsonce/sqsonce/middleware/idempotency/pgstore"
	"github.com/sqsonce/sqsonce/middleware/idempotency/redisstore"
	"github.com/sqsonce/sqsonce/middleware/lambdaenv/kmsenv"
)

// app is the wired summarise function: everything built once, at start-up.
type app struct {
	// handle is the Lambda handler: the idempotent batch handler with
	// metrics.
	handle func(context.Context, events.SQSEvent) (events.SQSEventResponse, error)
	// calls counts the provider calls made by this process.
	calls *handler.Calls
	// close releases what was opened (the request log file).
	close func() error
}

// onClose adds f to what a.close releases.
func (a *app) onClose(f func() error) {
	prev := a.close
	a.close = func() error { return errors.Join(prev(), f()) }
}

// outputs are where the app writes besides its handler's results.
type outputs struct {
	Logger  *slog.Logger // the guard's, the batch's and (inside Lambda) the request log's lines
	Metrics io.Writer    // EMF lines, one per batch
}

// build wires the function from c: clients, store, guard, provider, request
// log, documents, sink, handler, batch, metrics.
func build(ctx context.Context, c config, out outputs) (*app, error) {
	a := &app{calls: &handler.Calls{}, close: func() error { return nil }}

	var awsCfg *aws.Config
	loadAWS := func() (aws.Config, error) {
		if awsCfg == nil {
			cfg, err := awsconfig.LoadDefaultConfig(ctx)
			if err != nil {
				return aws.Config{}, fmt.Errorf("summarise: AWS configuration: %w", err)
			}
			awsCfg = &cfg
		}
		return *awsCfg, nil
	}

	// The request log: every provider call leaves a line before it is made.
	logs := handler.Tee{a.calls}
	if c.RequestLog != "" {
		f, err := handler.OpenFileLog(c.RequestLog)
		if err != nil {
			return nil, fmt.Errorf("summarise: %s: %w", envRequestLog, err)
		}
		a.close = f.Close
		logs = append(logs, f)
	} else {
		logs = append(logs, handler.SlogLog{Logger: out.Logger})
	}

	var provider handler.Provider
	switch c.Provider {
	case providerStub:
		provider = handler.Stub{Delay: c.StubDelay}
	case providerBedrock:
		cfg, err := loadAWS()
		if err != nil {
			return nil, err
		}
		provider = bedrock.New(bedrock.NewClient(cfg))
	case providerOpenAI:
		p, err := openai.New(openai.Config{BaseURL: c.OpenAIBaseURL, APIKey: c.OpenAIAPIKey})
		if err != nil {
			return nil, fmt.Errorf("summarise: %w", err)
		}
		provider = p
	}

	if c.testProvider != nil {
		provider = c.testProvider
	}

	var docs handler.Documents = handler.Dir(c.DocumentsDir)
	if c.DocumentsBucket != "" {
		cfg, err := loadAWS()
		if err != nil {
			return nil, err
		}
		docs = s3docs.New(s3.NewFromConfig(cfg), c.DocumentsBucket, c.DocumentsPrefix)
	}

	var store driver.Store
	var sink handler.Sink
	switch c.Store {
	case storeMemory:
		store, sink = memstore.New(), &handler.MemorySink{}
	case storeDynamoDB:
		cfg, err := loadAWS()
		if err != nil {
			return nil, err
		}
		db := dynamodb.NewFromConfig(cfg, func(o *dynamodb.Options) {
			if c.DynamoDBEndpoint != "" {
				o.BaseEndpoint = aws.String(c.DynamoDBEndpoint)
			}
		})
		opts := []dynamostore.Option{dynamostore.WithLogger(out.Logger)}
		if k := c.SortKey; k != nil {
			opts = append(opts, dynamostore.WithAttributes(dynamostore.Attributes{ID: k.PartitionKey}),
				dynamostore.WithSortKey(dynamostore.SortKey{Attr: k.Attr, Partition: k.Partition}))
		}
		s, err := dynamostore.New(db, c.Table, opts...)
		if err != nil {
			return nil, fmt.Errorf("summarise: %w", err)
		}
		store = s
		if c.SummariesTable != "" {
			if sink, err = dynamosink.New(c.SummariesTable); err != nil {
				return nil, fmt.Errorf("summarise: %w", err)
			}
		}
	case storeRedis:
		opts, err := redis.ParseURL(c.RedisURL)
		if err != nil {
			return nil, fmt.Errorf("summarise: %s: %w", envRedisURL, redact.ConnError(c.RedisURL, err))
		}
		opts.ContextTimeoutEnabled = true // a step ends at the invocation's deadline
		rdb := redis.NewClient(opts)
		a.onClose(rdb.Close)
		if store, err = redisstore.New(ctx, rdb, redisstore.WithLogger(out.Logger)); err != nil {
			_ = a.close()
			return nil, fmt.Errorf("summarise: %s: %w", envRedisURL, redact.ConnError(c.RedisURL, err))
		}
	case storePostgres:
		pool, err := pgxpool.New(ctx, c.PostgresURL)
		if err != nil {
			return nil, fmt.Errorf("summarise: %s: %w", envPostgresURL, redact.ConnError(c.PostgresURL, err))
		}
		a.onClose(func() error { pool.Close(); return nil })
		pg, err := pgstore.New(pool)
		if err != nil {
			_ = a.close()
			return nil, fmt.Errorf("summarise: %w", err)
		}
		if err := pg.CreateSchema(ctx); err != nil {
			_ = a.close()
			return nil, fmt.Errorf("summarise: %s: %w", envPostgresURL, redact.ConnError(c.PostgresURL, err))
		}
		store = pg
	}

	if c.testStore != nil {
		store = c.testStore
	}

	rec, err := metrics.New(metrics.Config{Writer: out.Metrics, Namespace: c.MetricsNamespace, Service: cmp.Or(c.MetricsService, c.Namespace)})
	if err != nil {
		return nil, fmt.Errorf("summarise: %w", err)
	}
	var sealer driver.Sealer
	if c.SealKey != "" {
		cfg, err := loadAWS()
		if err != nil {
			_ = a.close()
			return nil, err
		}
		// kmsenv's sealer asks for one data key now: a key the function
		// may not use fails the start, not the first result's completion.
		s, err := kmsenv.New(ctx, kms.NewFromConfig(cfg), c.SealKey)
		if err != nil {
			_ = a.close()
			return nil, fmt.Errorf("summarise: %w", err)
		}
		sealer = s
	}
	g, err := idempotency.New(idempotency.Config{
		Sealer:       sealer,
		Store:        store,
		Namespace:    c.Namespace,
		ExpiresAfter: c.ExpiresAfter,
		MinExpiry:    c.QueueWindow,
		Strict:       c.Strict,
		Tenancy:      c.Tenancy,
		Logger:       out.Logger,
		OnOutcome:    rec.Observe,
	})
	if err != nil {
		return nil, errors.Join(fmt.Errorf("summarise: idempotency (%s, %s)", envExpiresAfter, envQueueWindow), err)
	}
	h, err := handler.New(handler.Config{
		Documents: docs,
		// The request log's line first, then the metric's count, then the
		// request: a call the log refused is neither made nor counted.
		Provider: handler.LogRequests(rec.Provider(provider), logs, nil),
		Sink:     sink,
		Model:    c.Model,
	})
	if err != nil {
		return nil, fmt.Errorf("summarise: %w", err)
	}
	opts := batch.Options{Concurrency: c.Concurrency, MinRemaining: c.MinRemaining, Logger: out.Logger}
	if opts.MinRemaining == 0 {
		// batch reads zero as its default; SQSONCE_MIN_REMAINING=0 means
		// no margin at all.
		opts.MinRemaining = time.Nanosecond
	}
	var client *sqs.Client
	if c.Pacing || c.DeadLetter {
		cfg, err := loadAWS()
		if err != nil {
			return nil, err
		}
		client = sqs.NewFromConfig(cfg, func(o *sqs.Options) {
			if c.SQSEndpoint != "" {
				o.BaseEndpoint = aws.String(c.SQSEndpoint)
			}
		})
	}
	if c.Pacing {
		// Failed records come back when they can succeed: just after the
		// lease of a key in progress elsewhere, or after a backoff; not
		// after the queue's visibility timeout (6 × the function's).
		changer, err := sqsvisibility.New(client)
		if err != nil {
			return nil, fmt.Errorf("summarise: %w", err)
		}
		opts.Pacing = batch.Pacing{Changer: changer}
	}
	if c.DeadLetter {
		// A body that does not decode or a request without a key fails on
		// every delivery: to the dead-letter queue after the first.
		mover, err := sqsdlq.New(client)
		if err != nil {
			return nil, fmt.Errorf("summarise: %w", err)
		}
		opts.DeadLetter = batch.DeadLetter{Mover: mover}
	}
	if c.testMover != nil {
		opts.DeadLetter = batch.DeadLetter{Mover: c.testMover}
	}
	rec.Instrument(nil, &opts) // records failed and not started; the guard's OnOutcome is rec.Observe
	if err := opts.Validate(); err != nil {
		return nil, fmt.Errorf("summarise: %w", err)
	}
	fn := idempotency.WrapJSON(g, handler.RequestKey(), h.HandleRequest, handler.RequestOptions()...)
	a.handle = warnShortDeadline(opts.MinRemaining, batch.DefaultReserve, out.Logger, rec.Batch(batch.SQS(fn, opts)))
	return a, nil
}

// warnShortDeadline returns next, logging a warning for every invocation
// that starts with less than minRemaining plus the batch handler's reserve
// before its deadline: none of its records will start (each fails with
// batch.ErrDeadline and comes back until the dead-letter queue), because
// the function's timeout is not above SQSONCE_MIN_REMAINING. Lambda does
// not tell a function its timeout at init, so this is the first moment the
// mistake can be seen.
func warnShortDeadline(minRemaining, reserve time.Duration, logger *slog.Logger,
	next func(context.Context, events.SQSEvent) (events.SQSEventResponse, error),
) func(context.Context, events.SQSEvent) (events.SQSEventResponse, error) {
	return func(ctx context.Context, ev events.SQSEvent) (events.SQSEventResponse, error) {
		if deadline, ok := ctx.Deadline(); ok && len(ev.Records) > 0 {
			if left := time.Until(deadline); left < minRemaining+reserve {
				var requestID string // invocations running at once share the output: name this one
				if lc, ok := lambdacontext.FromContext(ctx); ok {
					requestID = lc.AwsRequestID
				}
				logger.WarnContext(ctx, "summarise: the invocation starts with less time than "+envMinRemaining+
					": no record will start; raise the function timeout above it or lower it",
					"left", left.Round(time.Millisecond).String(), "min_remaining", minRemaining.String(), "reserve", reserve.String(), "records", len(ev.Records),
					"request_id", requestID)
			}
		}
		return next(ctx, ev)
	}
}
