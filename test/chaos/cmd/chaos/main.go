// Command chaos runs the chaos test's long profiles and prints their table:
// an event-source-mapping emulator on moto_server's SQS and DynamoDB, with
// worker processes killed at random, a fault-injecting proxy in front of
// DynamoDB and exact per-key accounting (see package chaos). It exits 1 if
// any run broke a promise. `make chaos` runs it.
//
//	go run ./test/chaos/cmd/chaos -profiles process,store,all,lambda:off,lambda:on -keys 300
package main

import (
	"context"
	"flag"
	"fmt"
	"os"
	"os/signal"
	"path/filepath"
	"strings"
	"syscall"

	"github.com/sqsonce/sqsonce/internal/testenv/motoserver"
	"github.com/sqsonce/sqsonce/test/chaos"
)

func main() {
	os.Exit(run())
}

func run() int {
	profiles := flag.String("profiles", "process,store,all", "comma-separated fault profiles: process, store, all, lambda, overrun, strict, concurrent, short, short-strict; name:on or name:off sets one's pacing")
	keys := flag.Int("keys", 300, "idempotency keys per run")
	workers := flag.Int("workers", 4, "poller processes")
	seed := flag.Uint64("seed", 1, "seed of the producer, the faults and the workers")
	pacing := flag.String("pacing", "on", "pace redelivery with visibility changes, for profiles without :on or :off: off, on, or both (each profile twice, same seed)")
	sortKey := flag.Bool("sort-key", false, "run on a table with a sort key (partition key pk, sort key sk), as shared with Powertools' sortKeyAttr")
	dir := flag.String("dir", "", "keep the call logs here (default: a temporary directory, removed after a passing run)")
	flag.Parse()

	var modes []bool
	switch *pacing {
	case "off":
		modes = []bool{false}
	case "on":
		modes = []bool{true}
	case "both":
		modes = []bool{false, true}
	default:
		fmt.Fprintf(os.Stderr, "chaos: -pacing %q: want off, on or both\n", *pacing)
		return 2
	}
	var runs []chaos.Profile
	for _, name := range strings.Split(*profiles, ",") {
		name = strings.TrimSpace(name)
		p, err := chaos.ProfileByName(name, *keys, *workers, *seed)
		if err != nil {
			fmt.Fprintln(os.Stderr, err)
			return 2
		}
		p.SortKey = *sortKey
		if strings.Contains(name, ":") { // its own pacing
			runs = append(runs, p)
			continue
		}
		for _, m := range modes {
			p.Pacing = m
			runs = append(runs, p)
		}
	}

	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()

	root := *dir
	keep := root != ""
	if root == "" {
		var err error
		if root, err = os.MkdirTemp("", "sqsonce-chaos-"); err != nil {
			fmt.Fprintln(os.Stderr, "chaos:", err)
			return 1
		}
	} else if err := os.MkdirAll(root, 0o755); err != nil {
		fmt.Fprintln(os.Stderr, "chaos:", err)
		return 1
	}
	bin, err := chaos.BuildWorker(ctx, root)
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	moto := motoserver.New()
	defer moto.Close()
	endpoint, err := moto.Start()
	if err != nil {
		fmt.Fprintln(os.Stderr, "chaos:", err)
		return 1
	}

	var reports []*chaos.Report
	failed := false
	for i, p := range runs {
		runDir := filepath.Join(root, fmt.Sprintf("%d-%s-pacing-%v", i, p.Name, p.Pacing))
		if err := os.MkdirAll(runDir, 0o755); err != nil {
			fmt.Fprintln(os.Stderr, "chaos:", err)
			return 1
		}
		r, err := chaos.Run(ctx, chaos.Env{Endpoint: endpoint, Worker: bin, Dir: runDir, Progress: os.Stderr}, p)
		if err != nil {
			fmt.Fprintln(os.Stderr, err)
			fmt.Fprintln(os.Stderr, "chaos: logs kept in", root)
			return 1
		}
		reports = append(reports, r)
		for _, v := range r.Violations {
			fmt.Fprintf(os.Stderr, "VIOLATION %s: %s\n", p.Name, v)
		}
		failed = failed || r.Failed()
	}
	fmt.Println()
	if err := chaos.WriteTable(os.Stdout, reports...); err != nil {
		fmt.Fprintln(os.Stderr, "chaos:", err)
		return 1
	}
	if failed {
		fmt.Fprintln(os.Stderr, "chaos: FAIL: promises broken; logs kept in", root)
		return 1
	}
	if !keep {
		_ = os.RemoveAll(root)
	}
	fmt.Println("\nchaos: PASS: no unexplained second run, no acknowledged delivery with another result, no acknowledgement of a key not COMPLETED, no key lost")
	return 0
}
