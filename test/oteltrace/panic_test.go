package oteltrace_test

import (
	"context"
	"testing"

	"go.opentelemetry.io/otel/codes"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/sdk/trace/tracetest"

	"github.com/sqsonce/sqsonce/middleware/oteltrace"
)

// TestWrapInvocationPanic: a function made by Wrap that panics as a
// Lambda handler (Lambda then fails the invocation) ends its invocation's
// span once, with an error status and the panic's class, never its value,
// and the panic goes on to the runtime.
func TestWrapInvocationPanic(t *testing.T) {
	exp := tracetest.NewInMemoryExporter()
	tp := sdktrace.NewTracerProvider(sdktrace.WithSyncer(exp))
	t.Cleanup(func() { _ = tp.Shutdown(context.Background()) })
	h := oteltrace.Wrap("orders", func(_ context.Context, in string) (string, error) {
		panic("cannot process " + in)
	}, oteltrace.WithTracerProvider(tp))
	ctx, cancel := lambdaContext()
	defer cancel()
	var got any
	func() {
		defer func() { got = recover() }()
		_, _ = h(ctx, sentinel)
	}()
	if got == nil {
		t.Fatal("the panic did not reach the caller")
	}
	spans := exp.GetSpans()
	if len(spans) != 1 || spans[0].Name != "orders" {
		t.Fatalf("spans %v, want the invocation's, once", names(spans))
	}
	s := spans[0]
	if s.Status.Code != codes.Error || attrString(s, "error.type") != "*batch.PanicError" {
		t.Errorf("a panicking invocation's span: status %+v, error.type %q; want an error, *batch.PanicError", s.Status, attrString(s, "error.type"))
	}
	for _, where := range leaks(s) {
		t.Errorf("span %q quotes the panic in %s", s.Name, where)
	}
}
