package main

import (
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"os"

	"github.com/aws/aws-lambda-go/events"
)

const usage = `usage: summarise -event FILE [-repeat N] [-store memory|dynamodb] [-provider stub|bedrock|openai] [-v] [-metrics]

Outside Lambda, summarise invokes its Lambda handler with the SQS event in
FILE, N times in one process (the same handler, store and guard), prints
each batch response as JSON, and ends with the line
"deliveries: X, provider calls: Y". Inside Lambda (AWS_LAMBDA_RUNTIME_API
set) it serves invocations instead; flags are not read.

Configuration comes from the environment (SQSONCE_TABLE, SQSONCE_PROVIDER,
...: see the package documentation); -store and -provider override it.
The defaults need no AWS: the in-memory store, the stub provider and the
documents in samples/documents.

Flags:
`

// runLocal is the local runner. It returns the exit status: 0 when every
// batch ran, 1 when a batch returned an error, 2 for bad flags or
// configuration.
func runLocal(ctx context.Context, args []string, getenv func(string) string, stdout, stderr io.Writer) int {
	fs := flag.NewFlagSet("summarise", flag.ContinueOnError)
	fs.SetOutput(stderr)
	fs.Usage = func() {
		fmt.Fprint(stderr, usage)
		fs.PrintDefaults()
	}
	eventFile := fs.String("event", "", "SQS event `file` (Lambda's SQS event JSON, as in events/)")
	repeat := fs.Int("repeat", 1, "deliver the event `N` times")
	store := fs.String("store", "", "idempotency store: memory or dynamodb (default memory; dynamodb needs SQSONCE_TABLE)")
	provider := fs.String("provider", "", "model provider: stub, bedrock or openai (default $SQSONCE_PROVIDER, else stub)")
	verbose := fs.Bool("v", false, "log every outcome and provider call to standard error")
	emf := fs.Bool("metrics", false, "write the EMF metric line of each batch to standard error")
	if err := fs.Parse(args); err != nil {
		if errors.Is(err, flag.ErrHelp) {
			return 0
		}
		return 2
	}
	if fs.NArg() > 0 {
		fmt.Fprintf(stderr, "summarise: unexpected arguments %q\n", fs.Args())
		fs.Usage()
		return 2
	}
	if *eventFile == "" {
		fmt.Fprintln(stderr, "summarise: -event is required")
		fs.Usage()
		return 2
	}
	if *repeat < 1 {
		fmt.Fprintf(stderr, "summarise: -repeat %d: want at least 1\n", *repeat)
		return 2
	}
	ev, err := readEvent(*eventFile)
	if err != nil {
		fmt.Fprintln(stderr, err)
		return 2
	}
	c, err := loadConfig(getenv, *store, *provider)
	if err != nil {
		fmt.Fprintln(stderr, err)
		return 2
	}

	level := slog.LevelWarn
	if *verbose {
		level = slog.LevelDebug
	}
	out := outputs{Logger: slog.New(slog.NewTextHandler(stderr, &slog.HandlerOptions{Level: level})), Metrics: io.Discard}
	if *emf {
		out.Metrics = stderr
	}
	a, err := build(ctx, c, out)
	if err != nil {
		fmt.Fprintln(stderr, err)
		return 2
	}
	defer a.close()

	status := 0
	for range *repeat {
		resp, err := a.handle(ctx, ev)
		if err != nil {
			fmt.Fprintf(stderr, "summarise: batch error: %v\n", err)
			status = 1
			continue
		}
		b, err := json.Marshal(resp)
		if err != nil {
			fmt.Fprintf(stderr, "summarise: encode response: %v\n", err)
			status = 1
			continue
		}
		fmt.Fprintf(stdout, "%s\n", b)
	}
	fmt.Fprintf(stdout, "deliveries: %d, provider calls: %d\n", *repeat*len(ev.Records), a.calls.Len())
	return status
}

// readEvent reads an SQS event file.
func readEvent(name string) (events.SQSEvent, error) {
	b, err := os.ReadFile(name)
	if err != nil {
		return events.SQSEvent{}, fmt.Errorf("summarise: -event: %w", err)
	}
	var ev events.SQSEvent
	if err := json.Unmarshal(b, &ev); err != nil {
		return events.SQSEvent{}, fmt.Errorf("summarise: -event %s is not an SQS event: %w", name, err)
	}
	if len(ev.Records) == 0 {
		return events.SQSEvent{}, fmt.Errorf("summarise: -event %s has no Records", name)
	}
	return ev, nil
}
