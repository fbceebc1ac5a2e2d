package main

import (
	"context"
	"fmt"
	"log/slog"
	"os"

	"github.com/aws/aws-lambda-go/lambda"
)

func main() {
	if os.Getenv(envRuntimeAPI) != "" {
		os.Exit(runLambda())
	}
	os.Exit(runLocal(context.Background(), os.Args[1:], os.Getenv, os.Stdout, os.Stderr))
}

// runLambda builds the function once, at init, and serves invocations. A
// bad configuration fails the init with a clear message.
func runLambda() int {
	logger := slog.New(slog.NewJSONHandler(os.Stdout, nil))
	c, err := loadConfig(os.Getenv, "", "")
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 2
	}
	a, err := build(context.Background(), c, outputs{Logger: logger, Metrics: os.Stdout})
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 2
	}
	defer a.close()
	if c.Store == storeMemory {
		logger.Warn("summarise: in-memory idempotency store (" + envStore + "=memory): duplicates are caught within this execution environment only")
	}
	logger.Info("summarise: ready", "store", c.Store, "table", c.Table, "summaries_table", c.SummariesTable,
		"namespace", c.Namespace, "provider", c.Provider, "model", c.Model, "pacing", c.Pacing, "dead_letter", c.DeadLetter)
	lambda.StartHandlerFunc(a.handle)
	return 0
}
