//go:build sqsonceplanted

package sim

import (
	"flag"
	"fmt"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/sqsonce/sqsonce/internal/planted"
	"github.com/sqsonce/sqsonce/test/history"
)

var (
	flagStreams = flag.Int("sim.streams", 5, "TestPlanted: independent seed streams per planted defect")
	flagBudget  = flag.Int("sim.budget", 400, "TestPlanted: the seeds within which each stream must catch each defect")
	flagOnly    = flag.String("sim.only", "", "TestPlanted: only these planted defects (comma-separated)")
)

// streamSeed is seed i (from 1) of independent stream s: streams are a
// million seeds apart.
func streamSeed(s, i int) uint64 { return uint64(s)*1_000_000 + uint64(i) }

// TestPlanted switches each planted defect on in turn and runs seed streams
// until the checks catch it: every stream must catch it within -sim.budget
// seeds. It prints one row per defect (seeds to the first failure, median
// and max over the streams; the shortest shrunk schedule; the property
// that fired) and, last, "planted defects: N caught of M".
func TestPlanted(t *testing.T) {
	caught := 0
	var rows []string
	names := planted.Names
	if *flagOnly != "" {
		names = strings.Split(*flagOnly, ",")
	}
	for _, name := range names {
		restore := planted.Enable(name)
		var firsts []int
		var first *Run
		props := map[history.Property]int{}
		ok := true
		for s := range *flagStreams {
			n := 0
			for i := 1; i <= *flagBudget; i++ {
				r := run(t, streamSeed(s, i), NewTape(streamSeed(s, i)), ConfigOf(streamSeed(s, i)))
				if p := r.Failed(); p != "" {
					n = i
					props[p]++
					if first == nil {
						first = r
					}
					break
				}
			}
			if n == 0 {
				ok = false
				t.Errorf("planted defect %s not caught within %d seeds of stream %d", name, *flagBudget, s)
				n = *flagBudget + 1
			}
			firsts = append(firsts, n)
		}
		steps, prop := "-", "-"
		if first != nil {
			p := first.Failed()
			s := shrink(t, first, p)
			steps, prop = fmt.Sprint(s.Steps), string(p)
			if len(props) > 1 {
				prop += fmt.Sprintf(" (streams: %s)", describeProps(props))
			}
			if *flagSave != "" {
				if err := regression(s, name, p).Save(filepath.Join(*flagSave, name+".json")); err != nil {
					t.Error(err)
				}
			}
		}
		restore()
		if ok {
			caught++
		}
		slices.Sort(firsts)
		seeds := func(n int) string {
			if n > *flagBudget {
				return fmt.Sprintf("> %d", *flagBudget)
			}
			return fmt.Sprint(n)
		}
		rows = append(rows, fmt.Sprintf("| %s | %s | %s | %s | %s |", name, seeds(firsts[len(firsts)/2]), seeds(firsts[len(firsts)-1]), steps, prop))
	}
	fmt.Printf("| planted defect | seeds to first failure, median | max (over %d streams) | shortest schedule (steps) | property |\n|---|---|---|---|---|\n%s\n",
		*flagStreams, strings.Join(rows, "\n"))
	fmt.Printf("planted defects: %d caught of %d (each within %d seeds, %d streams)\n", caught, len(names), *flagBudget, *flagStreams)
}

func describeProps(props map[history.Property]int) string {
	var out []string
	for _, p := range history.Properties {
		if n := props[p.Property]; n > 0 {
			out = append(out, fmt.Sprintf("%s %d", p.Property, n))
		}
	}
	if n := props[Linearizability]; n > 0 {
		out = append(out, fmt.Sprintf("%s %d", Linearizability, n))
	}
	return strings.Join(out, ", ")
}

// TestPlantedRegress replays each planted defect's saved tape with the
// defect on: it must break the property it broke when it was saved.
func TestPlantedRegress(t *testing.T) {
	files, _ := filepath.Glob("testdata/regress/*.json")
	for _, f := range files {
		rg, err := ReadRegression(f)
		if err != nil {
			t.Fatal(err)
		}
		if rg.Planted == "" {
			continue
		}
		t.Run(rg.Planted, func(t *testing.T) {
			defer planted.Enable(rg.Planted)()
			r := run(t, rg.Seed, Replay(rg.Tape), rg.config())
			if got := r.Failed(); string(got) != rg.Property {
				report(t, r)
				t.Errorf("the tape of %s broke %q, want %q", rg.Planted, got, rg.Property)
			}
		})
	}
}
