package main

import (
	"math"
	"strings"
	"testing"
	"time"
)

func TestParseLoadavg(t *testing.T) {
	for _, tc := range []struct {
		in      string
		want    loadAvg
		wantErr bool
	}{
		{"0.79 1.10 1.33 2/512 12345\n", loadAvg{0.79, 1.10, 1.33}, false},
		{"3.07 1.68 1.52 1/99 7", loadAvg{3.07, 1.68, 1.52}, false},
		{"0.00 0.01", loadAvg{}, true},
		{"x 1 2 3/4 5", loadAvg{}, true},
		{"", loadAvg{}, true},
	} {
		got, err := parseLoadavg(tc.in)
		if (err != nil) != tc.wantErr || got != tc.want {
			t.Errorf("parseLoadavg(%q) = %v, %v; want %v, error %v", tc.in, got, err, tc.want, tc.wantErr)
		}
	}
}

func TestParseCPUStat(t *testing.T) {
	const stat = "cpu  100 20 30 400 50 6 7 8 9 10\ncpu0 50 10 15 200 25 3 3 4 0 0\nintr 1 2 3\n"
	for _, tc := range []struct {
		name    string
		in      string
		want    cpuTicks
		wantErr bool
	}{
		// busy = user 100 + nice 20 + system 30 + irq 6 + softirq 7 + steal 8;
		// total adds idle 400 and iowait 50; guest time is inside user already.
		{"aggregate line", stat, cpuTicks{busy: 171, total: 621}, false},
		{"the aggregate line need not come first", "intr 1\n" + stat, cpuTicks{busy: 171, total: 621}, false},
		{"no aggregate line", "cpu0 1 2 3 4 5 6 7 8\n", cpuTicks{}, true},
		{"too few fields", "cpu 1 2 3 4\n", cpuTicks{}, true},
		{"not a number", "cpu 1 2 3 x 5 6 7 8\n", cpuTicks{}, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got, err := parseCPUStat(tc.in)
			if (err != nil) != tc.wantErr || got != tc.want {
				t.Errorf("parseCPUStat = %+v, %v; want %+v, error %v", got, err, tc.want, tc.wantErr)
			}
		})
	}
}

func TestOthersShare(t *testing.T) {
	before := cpuTicks{busy: 1000, total: 10000}
	for _, tc := range []struct {
		name    string
		after   cpuTicks
		own     time.Duration
		elapsed time.Duration
		cpus    int
		want    float64
	}{
		// 2 CPUs for 10 s: 2,000 ticks at 100 Hz; half busy.
		{"half busy, none of it ours", cpuTicks{busy: 2000, total: 12000}, 0, 10 * time.Second, 2, 0.5},
		{"half busy, 4 s of CPU ours (20 %)", cpuTicks{busy: 2000, total: 12000}, 4 * time.Second, 10 * time.Second, 2, 0.3},
		{"all of it ours", cpuTicks{busy: 2000, total: 12000}, 10 * time.Second, 10 * time.Second, 2, 0},
		{"ours measured above the machine's: not negative", cpuTicks{busy: 1100, total: 12000}, 10 * time.Second, 10 * time.Second, 2, 0},
		{"no time passed", before, 0, 0, 2, 0},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := othersShare(before, tc.after, tc.own, tc.elapsed, tc.cpus); math.Abs(got-tc.want) > 1e-9 {
				t.Errorf("othersShare = %v, want %v", got, tc.want)
			}
		})
	}
}

func TestBusyReason(t *testing.T) {
	for _, tc := range []struct {
		name   string
		start  loadAvg
		others float64
		cpus   int
		want   []string // substrings; none means quiet
	}{
		{"quiet", loadAvg{0.05, 0.1, 0.2}, 0.02, 2, nil},
		{"at the thresholds is quiet", loadAvg{0.5, 0, 0}, 0.10, 2, nil},
		{"loaded before the start", loadAvg{1.13, 1.37, 1.47}, 0.02, 2, []string{"load average 1.13 at the start"}},
		{"the same load on more CPUs is quiet", loadAvg{1.13, 1.37, 1.47}, 0.02, 8, nil},
		{"others busy during the run", loadAvg{0.1, 0, 0}, 0.46, 2, []string{"other processes used 46 %"}},
		{"both", loadAvg{3.07, 0, 0}, 0.60, 2, []string{"load average 3.07", "other processes used 60 %"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got := busyReason(tc.start, tc.others, tc.cpus)
			if (got == "") != (tc.want == nil) {
				t.Fatalf("busyReason = %q, want busy %v", got, tc.want != nil)
			}
			for _, w := range tc.want {
				if !strings.Contains(got, w) {
					t.Errorf("busyReason = %q, want it to say %q", got, w)
				}
			}
		})
	}
}
