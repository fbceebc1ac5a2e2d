package idempotentconsumer_test

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/aws/aws-lambda-go/events"
	"github.com/aws/jsii-runtime-go"

	"github.com/sqsonce/sqsonce/infra/idempotentconsumer"
	"github.com/sqsonce/sqsonce/middleware/batch"
	"github.com/sqsonce/sqsonce/middleware/idempotency"
	"github.com/sqsonce/sqsonce/middleware/idempotency/memstore"
	"github.com/sqsonce/sqsonce/middleware/metrics"
)

// clock is a settable clock shared by the guards of one scenario.
type clock struct {
	mu  sync.Mutex
	now time.Time
}

func (c *clock) Now() time.Time { c.mu.Lock(); defer c.mu.Unlock(); return c.now }
func (c *clock) add(d time.Duration) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.now = c.now.Add(d)
}

// scenario is an own function (an order charge keyed on its order_id,
// not the reference app) built with the library and instrumented in one
// line, whose guard's metrics go to the recorder rec; a second guard on the
// same store stands for another worker.
type scenario struct {
	rec     *metrics.Recorder
	clock   *clock
	handler func(context.Context, events.SQSEvent) (events.SQSEventResponse, error)
	// other is another worker's invocation with m, in a context of its
	// own (a call from inside the operation would be refused as one that
	// waits for itself): its EMF line follows.
	other func(m events.SQSMessage) events.SQSEventResponse
}

func newScenario(t *testing.T, out *bytes.Buffer, service string, strict bool, op func(ctx context.Context, s *scenario, m events.SQSMessage) (string, error)) *scenario {
	t.Helper()
	s := &scenario{clock: &clock{now: time.Unix(1_800_000_000, 0)}}
	rec, err := metrics.New(metrics.Config{Writer: out, Service: service})
	if err != nil {
		t.Fatal(err)
	}
	s.rec = rec
	store := memstore.New()
	guard := func() *idempotency.Guard {
		cfg := idempotency.Config{Store: store, Namespace: service, Strict: strict, Lease: time.Minute, Now: s.clock.Now,
			Logger: slog.New(slog.DiscardHandler)}
		opts := batch.Options{}
		rec.Instrument(&cfg, &opts)
		g, err := idempotency.New(cfg)
		if err != nil {
			t.Fatal(err)
		}
		return g
	}
	key := idempotency.BodyField("order_id")
	opts := batch.Options{Logger: slog.New(slog.DiscardHandler), NoFullBatchError: true}
	rec.Instrument(nil, &opts)
	s.handler = rec.Batch(batch.SQS(idempotency.Wrap(guard(), key, func(ctx context.Context, m events.SQSMessage) (string, error) {
		return op(ctx, s, m)
	}), opts))
	other := rec.Batch(batch.SQS(idempotency.Wrap(guard(), key, func(context.Context, events.SQSMessage) (string, error) { return "charged elsewhere", nil }), opts))
	s.other = func(m events.SQSMessage) events.SQSEventResponse {
		resp, err := other(context.Background(), events.SQSEvent{Records: []events.SQSMessage{m}})
		if err != nil {
			t.Errorf("the other worker: %v", err)
		}
		return resp
	}
	return s
}

// TestAlarmsSeeTheLibrarysMetrics synthesizes the construct around an own
// function and, for each of its outcome alarms, runs the alarm's scenario
// through the library (guard, batch handler, middleware/metrics turned on
// in one line, with the Service the construct gives the function as
// SQSONCE_NAMESPACE) and finds the alarm's metric, namespace and dimension
// in the EMF lines written.
func TestAlarmsSeeTheLibrarysMetrics(t *testing.T) {
	_, tpl := build(t, "OwnFunction", idempotentconsumer.Props{Namespace: "charges", Timeout: 3 * time.Second}, nil)
	_, fn := resourceOf(t, tpl, "AWS::Lambda::Function", "ConsumerFunction")
	vars := props(t, fn)["Environment"].(map[string]any)["Variables"].(map[string]any)
	service, _ := vars[idempotentconsumer.EnvNamespace].(string)

	msg := events.SQSMessage{MessageId: "m-1", Body: `{"order_id":"o-17","amount":1200}`, EventSource: "aws:sqs"}
	scenarios := map[string]struct {
		strict bool
		op     func(ctx context.Context, s *scenario, m events.SQSMessage) (string, error)
	}{
		// The charge fails: its claim is released.
		"FailedAlarm": {false, func(context.Context, *scenario, events.SQSMessage) (string, error) {
			return "", errors.New("card declined")
		}},
		// Another worker gets the delivery while this one charges.
		"InProgressAlarm": {false, func(_ context.Context, s *scenario, m events.SQSMessage) (string, error) {
			if resp := s.other(m); len(resp.BatchItemFailures) != 1 {
				return "", fmt.Errorf("the other worker: %+v, want its record handed back as in progress", resp)
			}
			return "charged", nil
		}},
		// This worker outlives its lease; another takes the key over and
		// charges too: TakenOver there, DoubleRuns here.
		"TakenOverAlarm": {false, outlive},
		"DoubleRunAlarm": {false, outlive},
		// In strict mode the other worker quarantines the lapsed claim.
		"QuarantinedAlarm": {true, func(_ context.Context, s *scenario, m events.SQSMessage) (string, error) {
			s.clock.add(time.Hour)
			if resp := s.other(m); len(resp.BatchItemFailures) != 1 {
				return "", fmt.Errorf("the other worker: %+v, want its record failed as quarantined", resp)
			}
			return "charged", nil
		}},
	}

	alarms := *tpl.FindResources(jsii.String("AWS::CloudWatch::Alarm"), nil)
	seen := 0
	for id, r := range alarms {
		p := (*r)["Properties"].(map[string]any)
		name := ""
		for n := range scenarios {
			if strings.HasPrefix(id, "Consumer"+n) {
				name = n
			}
		}
		if name == "" {
			if p["Namespace"] == idempotentconsumer.DefaultMetricsNamespace {
				t.Errorf("alarm %s watches %v/%v and has no scenario", id, p["Namespace"], p["MetricName"])
			}
			continue
		}
		seen++
		t.Run(name, func(t *testing.T) {
			sc := scenarios[name]
			var out bytes.Buffer
			s := newScenario(t, &out, service, sc.strict, sc.op)
			if _, err := s.handler(t.Context(), events.SQSEvent{Records: []events.SQSMessage{msg}}); err != nil {
				t.Fatal(err)
			}
			metric := p["MetricName"].(string)
			var dims [][2]string
			for _, d := range p["Dimensions"].([]any) {
				dm := d.(map[string]any)
				dims = append(dims, [2]string{dm["Name"].(string), fmt.Sprint(dm["Value"])})
			}
			if !found(t, out.Bytes(), p["Namespace"].(string), metric, dims) {
				t.Errorf("%s watches %v %s %v: not in the function's EMF output\n%s", name, p["Namespace"], metric, dims, out.Bytes())
			}
		})
	}
	if seen != len(scenarios) {
		t.Errorf("%d outcome alarms synthesized, want %d", seen, len(scenarios))
	}
}

// outlive is a charge that outlives its lease while another worker takes
// the key over and charges.
func outlive(_ context.Context, s *scenario, m events.SQSMessage) (string, error) {
	s.clock.add(time.Hour)
	if resp := s.other(m); len(resp.BatchItemFailures) != 0 {
		return "", fmt.Errorf("the other worker: %+v, want its take-over to succeed", resp)
	}
	return "charged", nil
}

// found reports whether an EMF line of out declares metric in namespace
// with exactly the dimensions dims, holds those dimensions' values, and
// counts the metric above zero.
func found(t *testing.T, out []byte, namespace, metric string, dims [][2]string) bool {
	for _, l := range bytes.Split(bytes.TrimSpace(out), []byte("\n")) {
		var root map[string]any
		if err := json.Unmarshal(l, &root); err != nil {
			t.Fatalf("not an EMF line: %q: %v", l, err)
		}
		aws, _ := root["_aws"].(map[string]any)
		for _, d := range aws["CloudWatchMetrics"].([]any) {
			dir := d.(map[string]any)
			if dir["Namespace"] != namespace {
				continue
			}
			declared := false
			for _, m := range dir["Metrics"].([]any) {
				declared = declared || m.(map[string]any)["Name"] == metric
			}
			for _, set := range dir["Dimensions"].([]any) {
				names := set.([]any)
				ok := declared && len(names) == len(dims)
				for i, dim := range dims {
					ok = ok && i < len(names) && names[i] == dim[0] && root[dim[0]] == dim[1]
				}
				if n, _ := root[metric].(float64); ok && n > 0 {
					return true
				}
			}
		}
	}
	return false
}
