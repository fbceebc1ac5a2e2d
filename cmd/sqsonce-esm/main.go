package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"net/url"
	"os"
	"os/signal"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/aws/aws-lambda-go/events"
	"github.com/aws/aws-sdk-go-v2/aws"
	awsconfig "github.com/aws/aws-sdk-go-v2/config"
	"github.com/aws/aws-sdk-go-v2/service/lambda"
	lambdatypes "github.com/aws/aws-sdk-go-v2/service/lambda/types"
	"github.com/aws/aws-sdk-go-v2/service/sqs"
	sqstypes "github.com/aws/aws-sdk-go-v2/service/sqs/types"

	"github.com/sqsonce/sqsonce/internal/testenv/esm"
	"github.com/sqsonce/sqsonce/internal/testenv/rie"
)

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	code := run(ctx, os.Args[1:], os.Stderr)
	stop()
	os.Exit(code)
}

// Exit codes.
const (
	exitOK    = 0
	exitQueue = 1
	exitUsage = 2
)

// invokeURLs is the repeatable --invoke flag.
type invokeURLs []string

func (u *invokeURLs) String() string { return fmt.Sprint([]string(*u)) }

func (u *invokeURLs) Set(s string) error {
	p, err := url.Parse(s)
	if err != nil || (p.Scheme != "http" && p.Scheme != "https") || p.Host == "" {
		return errors.New("not an http(s) URL")
	}
	*u = append(*u, s)
	return nil
}

// options are the command line's.
type options struct {
	queueURL  string
	function  string
	set       map[string]bool // the flags given
	invoke    invokeURLs
	batchSize int
	window    time.Duration
	idle      time.Duration
	endpoint  string
	region    string
}

// check checks the batch size and the window, as Lambda checks a
// mapping's.
func (o options) check() error {
	switch {
	case o.batchSize < 1 || o.batchSize > 10000:
		return fmt.Errorf("sqsonce-esm: --batch-size %d: between 1 and 10000, as Lambda takes for a standard queue", o.batchSize)
	case o.window < 0 || o.window > 5*time.Minute:
		return fmt.Errorf("sqsonce-esm: --window %v: between 0 and 5m, as Lambda takes", o.window)
	case o.batchSize > 10 && o.window == 0:
		return fmt.Errorf("sqsonce-esm: --batch-size %d needs a --window: Lambda requires a batching window for batches over 10", o.batchSize)
	}
	return nil
}

// fromMapping sets o's queue, and its batch size and window unless given,
// from the function's SQS event source mapping. An enabled mapping is
// logged: it competes for the queue's messages (moto's spends a receive of
// every message on each send), and the command does not change it.
func fromMapping(ctx context.Context, o *options, fns *lambda.Client, queues *sqs.Client, log *slog.Logger) error {
	out, err := fns.ListEventSourceMappings(ctx, &lambda.ListEventSourceMappingsInput{FunctionName: aws.String(o.function)})
	if err != nil {
		return fmt.Errorf("sqsonce-esm: the event source mappings of function %s: %w", o.function, err)
	}
	var found []lambdatypes.EventSourceMappingConfiguration
	for _, m := range out.EventSourceMappings {
		if strings.HasPrefix(aws.ToString(m.EventSourceArn), "arn:aws:sqs:") {
			found = append(found, m)
		}
	}
	switch {
	case len(found) == 0:
		return fmt.Errorf("sqsonce-esm: function %s has no SQS event source mapping: give --queue-url", o.function)
	case len(found) > 1:
		return fmt.Errorf("sqsonce-esm: function %s has %d SQS event source mappings: give --queue-url", o.function, len(found))
	}
	m := found[0]
	arn := strings.Split(aws.ToString(m.EventSourceArn), ":")
	if len(arn) != 6 {
		return fmt.Errorf("sqsonce-esm: function %s's event source %q is not a queue's ARN", o.function, aws.ToString(m.EventSourceArn))
	}
	q, err := queues.GetQueueUrl(ctx, &sqs.GetQueueUrlInput{QueueName: aws.String(arn[5]), QueueOwnerAWSAccountId: aws.String(arn[4])})
	if err != nil {
		return fmt.Errorf("sqsonce-esm: the URL of queue %s: %w", arn[5], err)
	}
	o.queueURL = aws.ToString(q.QueueUrl)
	if !o.set["batch-size"] && m.BatchSize != nil {
		o.batchSize = int(*m.BatchSize)
	}
	if !o.set["window"] && m.MaximumBatchingWindowInSeconds != nil {
		o.window = time.Duration(*m.MaximumBatchingWindowInSeconds) * time.Second
	}
	if state := aws.ToString(m.State); state != "Disabled" && state != "Disabling" {
		log.Warn("the deployed event source mapping is not disabled: it competes for the queue's messages (moto's spends a receive of every message on each send); disable it with aws lambda update-event-source-mapping --no-enabled --uuid "+aws.ToString(m.UUID),
			"function", o.function, "state", state, "uuid", aws.ToString(m.UUID))
	}
	return nil
}

func parse(args []string, stderr io.Writer) (options, error) {
	var o options
	fs := flag.NewFlagSet("sqsonce-esm", flag.ContinueOnError)
	fs.SetOutput(stderr)
	fs.StringVar(&o.queueURL, "queue-url", "", "the queue to poll (or --function)")
	fs.StringVar(&o.function, "function", "", "a deployed function whose SQS event source mapping gives the queue, the batch size and the window (the flags override the last two)")
	fs.Var(&o.invoke, "invoke", "an Invoke endpoint, one per execution environment (repeat for concurrency; default "+rie.DefaultEndpoint+")")
	fs.IntVar(&o.batchSize, "batch-size", 10, "the most records an invocation gets, 1 to 10000 (the mapping's BatchSize)")
	fs.DurationVar(&o.window, "window", 0, "how long a batch is gathered after its first record, at most 5m (the mapping's MaximumBatchingWindowInSeconds); 0: what one receive returns")
	fs.DurationVar(&o.idle, "idle", 0, "exit once no invocation has run for this long (longer than the queue's visibility timeout, to see failed records come back); 0: run until interrupted")
	fs.StringVar(&o.endpoint, "endpoint", "", "the SQS and Lambda endpoint, e.g. moto_server's (default: the SDK's, from AWS_ENDPOINT_URL_SQS, AWS_ENDPOINT_URL_LAMBDA or AWS_ENDPOINT_URL)")
	fs.StringVar(&o.region, "region", "", "the queue's region (default: the SDK's, from AWS_REGION)")
	fs.Usage = func() {
		fmt.Fprintln(stderr, "usage: sqsonce-esm (--queue-url URL | --function NAME) [--invoke URL]... [--batch-size N] [--window D] [--idle D] [--endpoint URL] [--region R]")
		fs.PrintDefaults()
	}
	if err := fs.Parse(args); err != nil {
		return o, err
	}
	o.set = map[string]bool{}
	fs.Visit(func(f *flag.Flag) { o.set[f.Name] = true })
	switch {
	case fs.NArg() > 0:
		return o, fmt.Errorf("sqsonce-esm: unexpected argument %q: every setting is a flag", fs.Arg(0))
	case o.queueURL != "" && o.function != "":
		return o, errors.New("sqsonce-esm: --queue-url and --function: give one (--function reads the queue from the function's event source mapping)")
	case o.queueURL == "" && o.function == "":
		return o, errors.New("sqsonce-esm: --queue-url or --function is required (the queue's URL, e.g. from the stack's outputs, or the deployed function's name)")
	case o.idle < 0:
		return o, fmt.Errorf("sqsonce-esm: --idle %v: not negative", o.idle)
	}
	if err := o.check(); err != nil {
		return o, err
	}
	if u, err := url.Parse(o.queueURL); o.function == "" && (err != nil || u.Scheme == "" || u.Host == "") {
		return o, fmt.Errorf("sqsonce-esm: --queue-url %q is not a URL (a queue URL looks like https://sqs.REGION.amazonaws.com/ACCOUNT/NAME)", o.queueURL)
	}
	if len(o.invoke) == 0 {
		o.invoke = invokeURLs{rie.DefaultEndpoint}
	}
	return o, nil
}

// run runs the command line args and returns the exit code. It logs to
// stderr.
func run(ctx context.Context, args []string, stderr io.Writer) int {
	o, err := parse(args, stderr)
	if errors.Is(err, flag.ErrHelp) {
		return exitOK
	}
	if err != nil {
		fmt.Fprintln(stderr, err)
		return exitUsage
	}
	log := slog.New(slog.NewTextHandler(stderr, nil))

	var loadOpts []func(*awsconfig.LoadOptions) error
	if o.region != "" {
		loadOpts = append(loadOpts, awsconfig.WithRegion(o.region))
	}
	cfg, err := awsconfig.LoadDefaultConfig(ctx, loadOpts...)
	if err != nil {
		fmt.Fprintf(stderr, "sqsonce-esm: AWS configuration: %v\n", err)
		return exitQueue
	}
	client := sqs.NewFromConfig(cfg, func(opt *sqs.Options) {
		if o.endpoint != "" {
			opt.BaseEndpoint = aws.String(o.endpoint)
		}
	})
	if o.function != "" {
		fns := lambda.NewFromConfig(cfg, func(opt *lambda.Options) {
			if o.endpoint != "" {
				opt.BaseEndpoint = aws.String(o.endpoint)
			}
		})
		if err := fromMapping(ctx, &o, fns, client, log); err != nil {
			fmt.Fprintln(stderr, err)
			return exitQueue
		}
		if err := o.check(); err != nil {
			fmt.Fprintln(stderr, err)
			return exitUsage
		}
	}
	attrs, err := client.GetQueueAttributes(ctx, &sqs.GetQueueAttributesInput{
		QueueUrl:       aws.String(o.queueURL),
		AttributeNames: []sqstypes.QueueAttributeName{sqstypes.QueueAttributeNameQueueArn, sqstypes.QueueAttributeNameVisibilityTimeout},
	})
	if err != nil {
		fmt.Fprintf(stderr, "sqsonce-esm: read the queue %s: %v\n", o.queueURL, err)
		return exitQueue
	}
	arn := attrs.Attributes[string(sqstypes.QueueAttributeNameQueueArn)]
	secs, err := strconv.Atoi(attrs.Attributes[string(sqstypes.QueueAttributeNameVisibilityTimeout)])
	if err != nil {
		fmt.Fprintf(stderr, "sqsonce-esm: the queue %s reports no visibility timeout: %v\n", o.queueURL, err)
		return exitQueue
	}
	if vis := time.Duration(secs) * time.Second; o.window > 0 && o.window >= vis {
		fmt.Fprintf(stderr, "sqsonce-esm: --window %v is not below the queue's visibility timeout of %v: a record would come back while its batch is gathered, and be in it twice\n", o.window, vis)
		return exitUsage
	}

	invokers := make([]esm.Invoker, len(o.invoke))
	for i, u := range o.invoke {
		invokers[i] = rie.Endpoint(u)
	}
	var st stats
	p := &esm.Poller{
		Mapping: esm.Mapping{
			QueueURL:          o.queueURL,
			QueueARN:          arn,
			BatchSize:         o.batchSize,
			MaxBatchingWindow: o.window,
		},
		SQS:        client,
		Invokers:   invokers,
		OnDelivery: func(d esm.Delivery) { st.settled(log, d) },
	}
	pctx, stopPolling := context.WithCancel(ctx)
	defer stopPolling()
	if o.idle > 0 {
		act := &activity{last: time.Now()}
		for i, inv := range p.Invokers {
			p.Invokers[i] = act.wrap(inv)
		}
		p.SQS = heldAPI{API: client, a: act}
		go func() {
			act.waitIdle(pctx, o.idle)
			if pctx.Err() == nil {
				log.Info("idle: no invocation for the --idle time", "idle", o.idle)
			}
			stopPolling()
		}()
	}
	log.Info("polling", "queue", o.queueURL, "batch_size", o.batchSize, "window", o.window, "environments", len(invokers))
	if err := p.Run(pctx); err != nil {
		fmt.Fprintln(stderr, err)
		return exitUsage
	}
	st.report(log)
	return exitOK
}

// activity wraps the invokers and the queue to know when the function was
// last busy. Records received and not yet handed to an invocation (a batch
// being gathered for its window) count as busy: the command never stops
// with a batch in hand.
type activity struct {
	mu       sync.Mutex
	inFlight int
	held     int // records received, not yet in an invocation
	last     time.Time
}

// heldAPI counts the records each receive hands the poller in a.held.
type heldAPI struct {
	esm.API
	a *activity
}

func (h heldAPI) ReceiveMessage(ctx context.Context, in *sqs.ReceiveMessageInput, optFns ...func(*sqs.Options)) (*sqs.ReceiveMessageOutput, error) {
	out, err := h.API.ReceiveMessage(ctx, in, optFns...)
	if err == nil && len(out.Messages) > 0 {
		h.a.mu.Lock()
		h.a.held += len(out.Messages)
		h.a.mu.Unlock()
	}
	return out, err
}

// wrap returns inv, recording its invocations in a.
func (a *activity) wrap(inv esm.Invoker) esm.Invoker {
	return esm.InvokerFunc(func(ctx context.Context, ev events.SQSEvent) (events.SQSEventResponse, error) {
		a.mu.Lock()
		a.inFlight++
		a.held = max(a.held-len(ev.Records), 0)
		a.mu.Unlock()
		defer func() {
			a.mu.Lock()
			a.inFlight--
			a.last = time.Now()
			a.mu.Unlock()
		}()
		return inv.Invoke(ctx, ev)
	})
}

// waitIdle returns once no invocation has run for idle, or ctx ends.
func (a *activity) waitIdle(ctx context.Context, idle time.Duration) {
	t := time.NewTicker(min(idle/4, 250*time.Millisecond))
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
		a.mu.Lock()
		done := a.inFlight == 0 && a.held == 0 && time.Since(a.last) >= idle
		a.mu.Unlock()
		if done {
			return
		}
	}
}

// stats counts what became of the records.
type stats struct {
	mu          sync.Mutex
	invocations map[int64]bool
	records     int
	acked       int
	left        int
}

func (s *stats) settled(log *slog.Logger, d esm.Delivery) {
	s.mu.Lock()
	if s.invocations == nil {
		s.invocations = map[int64]bool{}
	}
	s.invocations[d.Invocation] = true
	s.records++
	if d.Acked && d.Err == nil {
		s.acked++
	} else {
		s.left++
	}
	s.mu.Unlock()

	args := []any{"invocation", d.Invocation, "message_id", d.MessageID, "receive_count", d.ReceiveCount}
	switch {
	case d.Acked && d.Err == nil:
		log.Info("acknowledged and deleted", args...)
	case d.Acked:
		log.Warn("acknowledged, but the delete failed: it will come back", append(args, "err", describe(d.Err))...)
	case d.Err != nil:
		log.Warn("left on the queue: the invocation failed", append(args, "err", describe(d.Err))...)
	default:
		log.Info("left on the queue: a batch item failure", args...)
	}
}

func (s *stats) report(log *slog.Logger) {
	s.mu.Lock()
	defer s.mu.Unlock()
	log.Info("stopped", "invocations", len(s.invocations), "records", s.records, "deleted", s.acked, "left_on_queue", s.left)
}

// describe is an error as the log shows it: a function error by its type
// only, since its message may quote the record.
func describe(err error) string {
	var fe *rie.FunctionError
	if errors.As(err, &fe) {
		return "function error " + fe.Type + " (its message is not shown: it may quote the record)"
	}
	return err.Error()
}
