package main

import (
	"errors"
	"fmt"
	"os"
	"runtime"
	"strconv"
	"strings"
	"syscall"
	"time"
)

// The machine counts as busy when, before the run, its 1-minute load
// average per CPU was above busyLoad, or when, during the run, processes
// other than the benchmark's own used more than busyShare of its CPUs.
const (
	busyLoad  = 0.25
	busyShare = 0.10
)

// loadAvg is /proc/loadavg's 1, 5 and 15 minute load averages.
type loadAvg [3]float64

func (l loadAvg) String() string { return fmt.Sprintf("%.2f %.2f %.2f", l[0], l[1], l[2]) }

// parseLoadavg reads the first three fields of /proc/loadavg.
func parseLoadavg(s string) (loadAvg, error) {
	f := strings.Fields(s)
	if len(f) < 3 {
		return loadAvg{}, fmt.Errorf("loadavg: %d fields, want at least 3", len(f))
	}
	var l loadAvg
	for i := range l {
		v, err := strconv.ParseFloat(f[i], 64)
		if err != nil {
			return loadAvg{}, fmt.Errorf("loadavg: field %d: %w", i+1, err)
		}
		l[i] = v
	}
	return l, nil
}

// cpuTicks is the machine's CPU time since boot, in clock ticks, from the
// aggregate "cpu" line of /proc/stat: busy (user, nice, system, irq,
// softirq, steal) and total (busy plus idle and iowait).
type cpuTicks struct{ busy, total uint64 }

// parseCPUStat reads the "cpu " line of /proc/stat's content s.
func parseCPUStat(s string) (cpuTicks, error) {
	for line := range strings.Lines(s) {
		f := strings.Fields(line)
		if len(f) == 0 || f[0] != "cpu" {
			continue
		}
		if len(f) < 9 {
			return cpuTicks{}, fmt.Errorf("/proc/stat: cpu line has %d fields, want at least 9", len(f))
		}
		var v [8]uint64 // user nice system idle iowait irq softirq steal
		for i := range v {
			n, err := strconv.ParseUint(f[i+1], 10, 64)
			if err != nil {
				return cpuTicks{}, fmt.Errorf("/proc/stat: cpu field %d: %w", i+1, err)
			}
			v[i] = n
		}
		busy := v[0] + v[1] + v[2] + v[5] + v[6] + v[7]
		return cpuTicks{busy: busy, total: busy + v[3] + v[4]}, nil
	}
	return cpuTicks{}, errors.New("/proc/stat: no cpu line")
}

// othersShare is the fraction of the machine's CPU capacity that processes
// other than ours used between before and after: the machine's busy
// fraction less ours (ownCPU over elapsed × cpus), never below 0.
func othersShare(before, after cpuTicks, ownCPU, elapsed time.Duration, cpus int) float64 {
	if after.total <= before.total || elapsed <= 0 || cpus < 1 {
		return 0
	}
	machine := float64(after.busy-before.busy) / float64(after.total-before.total)
	own := ownCPU.Seconds() / (elapsed.Seconds() * float64(cpus))
	return max(0, machine-own)
}

// busyReason says why the machine counts as busy, or "" when it was quiet.
func busyReason(start loadAvg, others float64, cpus int) string {
	var why []string
	if perCPU := start[0] / float64(cpus); perCPU > busyLoad {
		why = append(why, fmt.Sprintf("load average %.2f at the start on %d CPUs (over %.2f per CPU)", start[0], cpus, busyLoad))
	}
	if others > busyShare {
		why = append(why, fmt.Sprintf("other processes used %.0f %% of the CPUs during the run (over %.0f %%)", others*100, busyShare*100))
	}
	return strings.Join(why, "; ")
}

// machine is a snapshot of the machine's load and of this process's CPU
// time, its own and its waited-for children's (node, the sqsonce workers,
// moto_server once stopped).
type machine struct {
	at    time.Time
	load  loadAvg
	ticks cpuTicks
	own   time.Duration
	err   error // /proc unreadable: no load figures
}

func snapshot() machine {
	m := machine{at: time.Now(), own: ownCPU()}
	text, err := os.ReadFile("/proc/loadavg")
	if err == nil {
		m.load, err = parseLoadavg(string(text))
	}
	if err == nil {
		text, err = os.ReadFile("/proc/stat")
	}
	if err == nil {
		m.ticks, err = parseCPUStat(string(text))
	}
	m.err = err
	return m
}

func ownCPU() time.Duration {
	var d time.Duration
	for _, who := range []int{syscall.RUSAGE_SELF, syscall.RUSAGE_CHILDREN} {
		var ru syscall.Rusage
		if syscall.Getrusage(who, &ru) == nil {
			d += time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
		}
	}
	return d
}

// loadLines describes the machine during the run, from start to end: the
// load averages, the other processes' share, and a "machine was busy" line
// when it was.
func loadLines(start, end machine) []string {
	if start.err != nil || end.err != nil {
		return []string{fmt.Sprintf("load: unknown (%v)", errors.Join(start.err, end.err))}
	}
	cpus := runtime.NumCPU()
	elapsed := end.at.Sub(start.at)
	own := end.own - start.own
	others := othersShare(start.ticks, end.ticks, own, elapsed, cpus)
	lines := []string{
		fmt.Sprintf("load average (1, 5, 15 min) at start %v, at end %v (the end includes this benchmark's own %.2f CPUs on average); %d CPUs",
			start.load, end.load, own.Seconds()/elapsed.Seconds(), cpus),
		fmt.Sprintf("other processes used %.0f %% of the CPUs during the run (%v)", others*100, elapsed.Round(time.Second)),
	}
	if why := busyReason(start.load, others, cpus); why != "" {
		lines = append(lines, "machine was busy: "+why+"; the timing and CPU rows are not a quiet machine's")
	}
	return lines
}
