// Command chaos runs the chaos test's long profiles and prints their table:
// an event-source-mapping emulator on moto_server's SQS and DynamoDB, with
// worker processes killed at random, a fault-injecting proxy in front of
// DynamoDB, exact per-key accounting and a recorded history that
// test/history's checker judges (see package chaos). It prints the table,
// then each run's verdict; it exits 1 if any run broke a promise. `make
// chaos` runs it; a history's header has the command that repeats its run.
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
	var names []string
	for _, n := range chaos.ProfileNames() {
		names = append(names, n[0])
	}
	profiles := flag.String("profiles", "process,store,all", "comma-separated fault profiles: "+strings.Join(names, ", ")+"; name:on or name:off sets one's pacing")
	keys := flag.Int("keys", 300, "idempotency keys per run")
	workers := flag.Int("workers", 4, "poller processes")
	seed := flag.Uint64("seed", 1, "seed of the producer, the faults and the workers")
	pacing := flag.String("pacing", "on", "pace redelivery with visibility changes, for profiles without :on or :off: off, on, or both (each profile twice, same seed)")
	sortKey := flag.Bool("sort-key", false, "run on a table with a sort key (partition key pk, sort key sk), as shared with Powertools' sortKeyAttr")
	dir := flag.String("dir", "", "keep the histories here, one directory per run (default: a temporary directory, removed after a passing run)")
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
	ptDir, err := chaos.PowertoolsDir(ctx)
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
		r, err := chaos.Run(ctx, chaos.Env{Endpoint: endpoint, Worker: bin, Dir: runDir, Progress: os.Stderr, Powertools: ptDir}, p)
		if err != nil {
			fmt.Fprintln(os.Stderr, err)
			fmt.Fprintln(os.Stderr, "chaos: histories kept in", root)
			return 1
		}
		reports = append(reports, r)
		for _, v := range r.Violations {
			fmt.Fprintf(os.Stderr, "VIOLATION %s: %s\n", p.Name, v)
		}
		for _, f := range r.Findings {
			fmt.Fprintf(os.Stderr, "FINDING about Powertools, %s: %s\n", p.Name, f)
		}
		failed = failed || r.Failed()
	}
	fmt.Println()
	if err := chaos.WriteTable(os.Stdout, reports...); err != nil {
		fmt.Fprintln(os.Stderr, "chaos:", err)
		return 1
	}
	if failed {
		fmt.Fprintln(os.Stderr, "chaos: FAIL: promises broken; histories kept in", root, "(go run ./test/history/cmd/check DIR/history)")
		return 1
	}
	if !keep {
		_ = os.RemoveAll(root)
	}
	events, checked := 0, 0
	for _, r := range reports {
		events += r.Verdict.Events
		checked += r.Verdict.Deliveries
	}
	fmt.Printf("\nchaos: PASS: %d runs, %d histories checked (%d events, %d deliveries): no property of the promise broken, no unexplained second run, no key lost\n", len(reports), len(reports), events, checked)
	return 0
}
