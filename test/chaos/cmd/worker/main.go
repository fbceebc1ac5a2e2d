// Command worker is one poller process of the chaos test: it receives
// batches from an SQS queue, runs the idempotent batch handler on them and
// deletes the records that did not fail, logging every step to an fsync'd
// call log. The chaos harness (package chaos) starts it, kills it and reads
// its log; it is not meant to be run by hand.
//
//	worker -config w0.0.json -log w0.0.log
package main

import (
	"context"
	"flag"
	"fmt"
	"os"
	"os/signal"
	"syscall"

	"github.com/sqsonce/sqsonce/test/chaos"
)

func main() {
	cfgPath := flag.String("config", "", "the worker's configuration (JSON), written by the harness")
	logPath := flag.String("log", "", "the call log to append to")
	flag.Parse()
	if *cfgPath == "" || *logPath == "" {
		fmt.Fprintln(os.Stderr, "worker: -config and -log are required")
		os.Exit(2)
	}
	cfg, err := chaos.ReadWorkerConfig(*cfgPath)
	if err != nil {
		fmt.Fprintln(os.Stderr, "worker:", err)
		os.Exit(1)
	}
	// SIGTERM: finish the batch in hand, then exit.
	ctx, stop := signal.NotifyContext(context.Background(), syscall.SIGTERM, os.Interrupt)
	defer stop()
	if err := chaos.RunWorker(ctx, cfg, *logPath); err != nil {
		fmt.Fprintln(os.Stderr, "worker:", err)
		os.Exit(1)
	}
}
