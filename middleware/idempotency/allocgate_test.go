package idempotency_test

import (
	"bufio"
	"context"
	"flag"
	"fmt"
	"log/slog"
	"os"
	"runtime"
	"sort"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/aws/aws-lambda-go/events"

	"github.com/sqsonce/sqsonce/middleware/idempotency"
	"github.com/sqsonce/sqsonce/middleware/idempotency/memstore"
)

// The allocation gate: the guard's path for one record, with zero-value
// options at Lambda's default 3 s deadline, on memstore, allocates no more
// per record than testdata/allocgate.txt records. To change the figures on
// purpose (a saving, or a cost the promise needs), run
//
//	go test -count=1 -run '^TestAllocationGate$' ./middleware/idempotency/ -allocgate.update
//
// and commit the file with the change that moved them.
var updateAllocGate = flag.Bool("allocgate.update", false, "rewrite testdata/allocgate.txt with the measured allocations per record")

const allocGateFile = "testdata/allocgate.txt"

// allocSlack is how far above the recorded count a measure may be: the
// runtime's own background work (map growth amortised over the runs, a
// timer's first use) moves the mean by a fraction of an allocation; one more
// allocation per record moves it by 1.
const allocSlack = 0.5

// gatePaths are the measured paths: a new key (claim, run, complete) and a
// replay of a completed key, each through Wrap on an SQS message, as a user's
// function runs them. extra runs once per record, beside the call (nil: none).
func gatePaths(t testing.TB, extra func()) map[string]func() {
	t.Helper()
	g, err := idempotency.New(idempotency.Config{Store: memstore.New(), Namespace: "gate", Logger: slog.New(slog.DiscardHandler)})
	if err != nil {
		t.Fatal(err)
	}
	h := idempotency.Wrap(g, idempotency.BodyField("idempotency_key"), func(context.Context, events.SQSMessage) (string, error) {
		return "summary", nil
	})
	run := func(body string) {
		if extra != nil {
			extra()
		}
		ctx, cancel := context.WithTimeout(context.Background(), 3*time.Second)
		defer cancel()
		if _, err := h(ctx, events.SQSMessage{MessageId: "m-1", Body: body}); err != nil {
			t.Fatal(err)
		}
	}
	n := 0
	replayed := `{"idempotency_key":"k-replayed"}`
	run(replayed)
	return map[string]func(){
		"new": func() {
			n++
			run(`{"idempotency_key":"k-` + strconv.Itoa(n) + `"}`)
		},
		"replay": func() { run(replayed) },
	}
}

// allocsPerRecord is the mean count of heap allocations of one call of fn.
func allocsPerRecord(fn func()) float64 {
	const runs = 2000
	for range 50 {
		fn() // warm: pools, the store's map, the runtime's timers
	}
	runtime.GC()
	var before, after runtime.MemStats
	runtime.ReadMemStats(&before)
	for range runs {
		fn()
	}
	runtime.ReadMemStats(&after)
	return float64(after.Mallocs-before.Mallocs) / runs
}

func measureGate(t testing.TB, extra func()) map[string]float64 {
	got := map[string]float64{}
	for name, fn := range gatePaths(t, extra) {
		got[name] = allocsPerRecord(fn)
	}
	return got
}

func readAllocGate(t testing.TB) map[string]int {
	t.Helper()
	f, err := os.Open(allocGateFile)
	if err != nil {
		t.Fatalf("the allocation gate's figures: %v (write them with -allocgate.update)", err)
	}
	defer f.Close()
	rec := map[string]int{}
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		line := strings.TrimSpace(sc.Text())
		if line == "" || strings.HasPrefix(line, "#") {
			continue
		}
		name, n, ok := strings.Cut(line, " ")
		v, err := strconv.Atoi(strings.TrimSpace(n))
		if !ok || err != nil {
			t.Fatalf("%s: bad line %q: want \"path allocations\"", allocGateFile, line)
		}
		rec[name] = v
	}
	if err := sc.Err(); err != nil {
		t.Fatal(err)
	}
	return rec
}

// checkAllocGate returns one line for each path that allocates more per
// record than recorded (beyond allocSlack), or that has no figure.
func checkAllocGate(recorded map[string]int, measured map[string]float64) []string {
	var over []string
	for name, got := range measured {
		want, ok := recorded[name]
		switch {
		case !ok:
			over = append(over, fmt.Sprintf("%s: %.2f allocations per record and no recorded figure", name, got))
		case got > float64(want)+allocSlack:
			over = append(over, fmt.Sprintf("%s: %.2f allocations per record, over the recorded %d", name, got, want))
		}
	}
	sort.Strings(over)
	return over
}

func TestAllocationGate(t *testing.T) {
	if raceDetector {
		t.Skip("allocation is measured without -race: make test runs this test again without it")
	}
	measured := measureGate(t, nil)
	if *updateAllocGate {
		names := make([]string, 0, len(measured))
		for name := range measured {
			names = append(names, name)
		}
		sort.Strings(names)
		var b strings.Builder
		b.WriteString("# Heap allocations per record of the guard's path on memstore (TestAllocationGate);\n# rewrite with -allocgate.update, on purpose, in the commit that moves them.\n")
		for _, name := range names {
			fmt.Fprintf(&b, "%s %d\n", name, int(measured[name]+0.5))
		}
		if err := os.WriteFile(allocGateFile, []byte(b.String()), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	recorded := readAllocGate(t)
	for name, got := range measured {
		t.Logf("%s: %.2f allocations per record (recorded: %d)", name, got, recorded[name])
		if want, ok := recorded[name]; ok && got < float64(want)-1 {
			t.Logf("%s allocates less than recorded: lower the figure with -allocgate.update", name)
		}
	}
	for _, line := range checkAllocGate(recorded, measured) {
		t.Error(line)
	}
}

// sink keeps the planted allocation on the heap.
var sink *[16]byte

// TestAllocationGateCatchesOneMore plants one more allocation per record on
// each path and holds the gate against it: it must fail.
func TestAllocationGateCatchesOneMore(t *testing.T) {
	if raceDetector {
		t.Skip("allocation is measured without -race: make test runs this test again without it")
	}
	recorded := readAllocGate(t)
	planted := measureGate(t, func() { sink = new([16]byte) })
	over := checkAllocGate(recorded, planted)
	if len(over) != len(planted) {
		t.Fatalf("one more allocation per record passed the gate on %d of %d paths: measured %v, recorded %v (failures: %q)",
			len(planted)-len(over), len(planted), planted, recorded, over)
	}
}

// BenchmarkRecordPath is the gate's paths as a benchmark: ns and allocations
// per record (for pprof: -cpuprofile, -memprofile).
func BenchmarkRecordPath(b *testing.B) {
	for _, name := range []string{"new", "replay"} {
		b.Run(name, func(b *testing.B) {
			fn := gatePaths(b, nil)[name]
			b.ReportAllocs()
			for b.Loop() {
				fn()
			}
		})
	}
}
