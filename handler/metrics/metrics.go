package metrics

import (
	"context"
	"io"
	"time"

	"github.com/sqsonce/sqsonce/handler"
	libmetrics "github.com/sqsonce/sqsonce/middleware/metrics"
)

// ProviderCalls is the summarise app's own metric: one for each request
// sent to the model provider, answered or failed.
const ProviderCalls = "ProviderCalls"

// DefaultService is the Service dimension of [Config.Service]'s zero
// value.
const DefaultService = "summarise"

// Config configures a [Recorder].
type Config struct {
	// Writer receives the EMF lines. Required.
	Writer io.Writer
	// Namespace is the CloudWatch namespace. Default
	// middleware/metrics.DefaultNamespace.
	Namespace string
	// Service is the value of the Service dimension. Default
	// [DefaultService].
	Service string
	// Now is the clock of the lines' timestamps. Nil means time.Now.
	Now func() time.Time
}

// Recorder is the library's recorder (package middleware/metrics: the
// guard's outcomes and the batch handler's records, which the construct's
// alarms watch) with the app's [ProviderCalls] in the same lines. Build one
// at start-up; it is safe for concurrent use.
type Recorder struct {
	*libmetrics.Recorder
}

// New checks cfg and returns a Recorder.
func New(cfg Config) (*Recorder, error) {
	if cfg.Service == "" {
		cfg.Service = DefaultService
	}
	r, err := libmetrics.New(libmetrics.Config{Writer: cfg.Writer, Namespace: cfg.Namespace, Service: cfg.Service,
		Counters: []string{ProviderCalls}, Now: cfg.Now})
	if err != nil {
		return nil, err
	}
	return &Recorder{r}, nil
}

// Provider returns p with every request counted as [ProviderCalls] before
// it is sent, whether it then succeeds or fails, in the invocation running
// in the request's context.
func (r *Recorder) Provider(p handler.Provider) handler.Provider {
	return countedProvider{r, p}
}

type countedProvider struct {
	r *Recorder
	p handler.Provider
}

func (c countedProvider) Name() string { return c.p.Name() }

func (c countedProvider) Complete(ctx context.Context, call handler.Call) (handler.Completion, error) {
	c.r.Add(ctx, ProviderCalls, 1)
	return c.p.Complete(ctx, call)
}
