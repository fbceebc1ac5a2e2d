// Command worker is one poller process of the chaos test: it receives
// batches from an SQS queue, runs the idempotent batch handler on them and
// deletes the records that did not fail, recording every step in its
// fsync'd history file (package history), in the directory its
// configuration names. The chaos harness (package chaos) starts it, kills it
// and reads its history; it is not meant to be run by hand.
//
//	worker -config w0.0.json
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
	flag.Parse()
	if *cfgPath == "" {
		fmt.Fprintln(os.Stderr, "worker: -config is required")
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
	if err := chaos.RunWorker(ctx, cfg); err != nil {
		fmt.Fprintln(os.Stderr, "worker:", err)
		os.Exit(1)
	}
}
