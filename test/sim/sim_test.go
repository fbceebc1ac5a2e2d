package sim

import (
	"bufio"
	"encoding/json"
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"testing"
	"testing/synctest"

	"github.com/sqsonce/sqsonce/test/history"
)

var (
	flagSeeds   = flag.Int("sim.seeds", 300, "how many seeds TestSim runs (make verify: 5000)")
	flagFirst   = flag.Uint64("sim.first", 1, "the first seed TestSim runs")
	flagSeed    = flag.Uint64("sim.seed", 0, "run this one seed only, print its verdict and schedule")
	flagHistory = flag.String("sim.history", "", "with -sim.seed: write the seed's history into this directory, one file per process (for test/history/cmd/check)")
	flagSave    = flag.String("sim.save", "", "save the shrunk tape of a failing seed to this file (TestSim), or the planted defects' tapes to this directory (TestPlanted)")
	flagShrink  = flag.Int("sim.shrink", 400, "the most runs a shrink takes")
	flagSurvey  = flag.Bool("sim.survey", false, "TestSim: list every failing seed with its configuration and property, without shrinking, and fail at the end")
)

func flagSet(name string) bool {
	set := false
	flag.Visit(func(f *flag.Flag) { set = set || f.Name == name })
	return set
}

// run simulates one tape in a synctest bubble.
func run(t *testing.T, seed uint64, tape *Tape, cfg Config) *Run {
	t.Helper()
	var r *Run
	synctest.Test(t, func(*testing.T) { r = Simulate(seed, tape, cfg) })
	return r
}

// Totals sums the figures of many runs.
type Totals struct {
	Seeds, Keys, Events, Deliveries, Runs, Acks, Faults, Quarantines, Steps, LinOps int
	Checked                                                                         map[history.Property]int
	Configs                                                                         map[string]bool // the distinct configurations run
}

func (s *Totals) add(r *Run) {
	if s.Checked == nil {
		s.Checked, s.Configs = map[history.Property]int{}, map[string]bool{}
	}
	s.Configs[r.Config.String()] = true
	v := r.Verdict
	s.Seeds++
	s.Keys += v.Keys
	s.Events += v.Events
	s.Deliveries += v.Deliveries
	s.Runs += v.Runs
	s.Acks += v.Acks
	s.Faults += v.Faults
	s.Quarantines += v.Quarantines
	s.Steps += r.Steps
	s.LinOps += r.LinOps
	for _, res := range v.Results {
		s.Checked[res.Property] += res.Checked
	}
}

func (s *Totals) String() string {
	out := fmt.Sprintf("%d seeds (%d configurations), %d steps, %d events, %d deliveries, %d runs, %d acks, %d faults, %d quarantines, %d store ops linearizable; cases checked:",
		s.Seeds, len(s.Configs), s.Steps, s.Events, s.Deliveries, s.Runs, s.Acks, s.Faults, s.Quarantines, s.LinOps)
	for _, p := range history.Properties {
		out += fmt.Sprintf(" %s %d", p.Property, s.Checked[p.Property])
	}
	return out
}

// TestSim runs seeds through the simulation and checks every history; every
// 50th seed runs twice and must give the same history. A failing seed is
// shrunk and its schedule printed.
func TestSim(t *testing.T) {
	if *flagSeed != 0 {
		cfg := ConfigOf(*flagSeed)
		r := run(t, *flagSeed, NewTape(*flagSeed), cfg)
		again := run(t, *flagSeed, NewTape(*flagSeed), cfg)
		report(t, r)
		for _, line := range r.Schedule {
			t.Log("  " + line)
		}
		if *flagHistory != "" {
			if err := writeHistory(*flagHistory, r); err != nil {
				t.Fatal(err)
			}
		}
		if r.Digest != again.Digest {
			t.Errorf("seed %d is not deterministic: digest %s, then %s", r.Seed, r.Digest, again.Digest)
		}
		if p := r.Failed(); p != "" {
			t.Errorf("seed %d broke %s", r.Seed, p)
		}
		return
	}
	var tot Totals
	reruns := 0
	n := *flagSeeds
	if raceSeeds > 0 && !flagSet("sim.seeds") {
		n = raceSeeds
	}
	for seed := *flagFirst; seed < *flagFirst+uint64(n); seed++ {
		r := run(t, seed, NewTape(seed), ConfigOf(seed))
		tot.add(r)
		if seed%50 == 0 {
			reruns++
			if again := run(t, seed, NewTape(seed), ConfigOf(seed)); again.Digest != r.Digest {
				t.Fatalf("seed %d is not deterministic: %s", seed, firstDiff(r.Events, again.Events))
			}
		}
		if p := r.Failed(); p != "" && *flagSurvey {
			t.Errorf("seed %d broke %s: %s", seed, p, r.Config)
			continue
		}
		if p := r.Failed(); p != "" {
			report(t, r)
			s := shrink(t, r, p)
			t.Logf("shrunk to %d steps (%d tape values); replay: go test ./test/sim -run TestSim -sim.seed %d", s.Steps, len(s.Tape), seed)
			for _, line := range s.Schedule {
				t.Log("  " + line)
			}
			if *flagSave != "" {
				if err := regression(s, "", p).Save(*flagSave); err != nil {
					t.Error(err)
				}
			}
			t.Fatalf("seed %d broke %s", seed, p)
		}
	}
	for _, p := range history.Properties {
		if tot.Checked[p.Property] == 0 && tot.Seeds >= 40 {
			t.Errorf("%s checked no case in %d seeds: the simulation does not exercise it", p.Property, tot.Seeds)
		}
	}
	t.Logf("sim: %s", &tot)
	fmt.Printf("sim: %d seeds (%d configurations), %d histories checked (%d keys, %d events, %d deliveries, %d runs, %d faults), 0 violations; %d store ops linearizable; %d seeds rerun, same digest\n",
		tot.Seeds, len(tot.Configs), tot.Seeds, tot.Keys, tot.Events, tot.Deliveries, tot.Runs, tot.Faults, tot.LinOps, reruns)
}

// TestRegress replays every saved tape: each must break nothing in this
// build (a planted defect's tape breaks its property only with the defect on:
// TestPlanted).
func TestRegress(t *testing.T) {
	files, _ := filepath.Glob("testdata/regress/*.json")
	if len(files) == 0 {
		t.Fatal("no tapes in testdata/regress")
	}
	for _, f := range files {
		rg, err := ReadRegression(f)
		if err != nil {
			t.Fatal(err)
		}
		t.Run(filepath.Base(f), func(t *testing.T) {
			r := run(t, rg.Seed, Replay(rg.Tape), rg.config())
			if p := r.Failed(); p != "" {
				report(t, r)
				t.Errorf("the tape breaks %s", p)
			}
		})
	}
}

func regression(r *Run, planted string, p history.Property) Regression {
	cfg := r.Config
	return Regression{Planted: planted, Property: string(p), Seed: r.Seed, Config: &cfg, Steps: r.Steps, Tape: r.Tape, Schedule: r.Schedule}
}

// shrink looks for a shorter tape that still breaks p: it deletes chunks of
// the tape, then lowers values to zero or halves them, keeping every change
// that still breaks p, within -sim.shrink runs.
func shrink(t *testing.T, r *Run, p history.Property) *Run {
	best, budget := r, *flagShrink
	try := func(vals []uint64) bool {
		if budget <= 0 {
			return false
		}
		budget--
		c := run(t, r.Seed, Replay(vals), r.Config)
		if c.Failed() == p && (c.Steps < best.Steps || c.Steps == best.Steps && len(c.Tape) < len(best.Tape)) {
			best = c
			return true
		}
		return false
	}
	for changed := true; changed && budget > 0; {
		changed = false
		for k := max(len(best.Tape)/4, 1); k >= 1 && budget > 0; k /= 2 {
			for i := 0; i+k <= len(best.Tape) && budget > 0; {
				if try(slices.Delete(slices.Clone(best.Tape), i, i+k)) {
					changed = true
				} else {
					i += k
				}
			}
		}
		for i := 0; i < len(best.Tape) && budget > 0; i++ {
			if v := best.Tape[i]; v != 0 {
				c := slices.Clone(best.Tape)
				c[i] = 0
				if try(c) {
					changed = true
					continue
				}
				c[i] = v / 2
				if v > 1 && try(c) {
					changed = true
				}
			}
		}
	}
	return best
}

func report(t *testing.T, r *Run) {
	t.Helper()
	var b []byte
	buf := &sliceWriter{&b}
	r.Verdict.Write(buf, 3)
	t.Logf("seed %d: %s\n%d steps, %d store ops (linearizable: %v), digest %s\n%s", r.Seed, r.Config, r.Steps, r.LinOps, r.LinOK, r.Digest[:16], b)
}

type sliceWriter struct{ b *[]byte }

func (w *sliceWriter) Write(p []byte) (int, error) { *w.b = append(*w.b, p...); return len(p), nil }

// writeHistory writes r's history into dir, one file per process (as
// history.ReadFiles and cmd/check read them).
func writeHistory(dir string, r *Run) error {
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return err
	}
	byProc := map[string][]history.Event{}
	var procs []string
	for _, e := range r.Events {
		if _, ok := byProc[e.Proc]; !ok {
			procs = append(procs, e.Proc)
		}
		byProc[e.Proc] = append(byProc[e.Proc], e)
	}
	for _, p := range procs {
		f, err := os.Create(filepath.Join(dir, p+".jsonl"))
		if err != nil {
			return err
		}
		bw := bufio.NewWriter(f)
		enc := json.NewEncoder(bw)
		h := r.Header
		h.Proc = p
		enc.Encode(h)
		for i, e := range byProc[p] {
			e.Seq = uint64(i + 1)
			enc.Encode(e)
		}
		if err := bw.Flush(); err != nil {
			f.Close()
			return err
		}
		if err := f.Close(); err != nil {
			return err
		}
	}
	return nil
}

func firstDiff(a, b []history.Event) string {
	for i := range min(len(a), len(b)) {
		x, _ := json.Marshal(a[i])
		y, _ := json.Marshal(b[i])
		if string(x) != string(y) {
			return fmt.Sprintf("event %d: %s, then %s", i+1, x, y)
		}
	}
	return fmt.Sprintf("%d events, then %d", len(a), len(b))
}
