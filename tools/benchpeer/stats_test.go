package main

import (
	"math"
	"slices"
	"testing"
	"time"
)

func TestMedian(t *testing.T) {
	for _, tc := range []struct {
		name string
		xs   []float64
		want float64
	}{
		{"none", nil, 0},
		{"one", []float64{7}, 7},
		{"odd, unsorted", []float64{300, 100, 200}, 200},
		{"even: mean of the middle two", []float64{4, 1, 3, 2}, 2.5},
		{"an outlier does not move it", []float64{275, 276, 274, 819, 275}, 275},
		{"ties", []float64{5, 5, 1, 5}, 5},
	} {
		t.Run(tc.name, func(t *testing.T) {
			in := slices.Clone(tc.xs)
			if got := median(tc.xs); got != tc.want {
				t.Errorf("median(%v) = %v, want %v", tc.xs, got, tc.want)
			}
			if !slices.Equal(in, tc.xs) {
				t.Errorf("median reordered its input: %v, was %v", tc.xs, in)
			}
		})
	}
}

func TestSummarize(t *testing.T) {
	for _, tc := range []struct {
		name string
		xs   []float64
		want stat
	}{
		{"none", nil, stat{}},
		{"three rounds", []float64{291, 275, 280}, stat{Median: 280, Min: 275, Max: 291, N: 3}},
		{"five rounds", []float64{9, 1, 5, 3, 7}, stat{Median: 5, Min: 1, Max: 9, N: 5}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := summarize(tc.xs); got != tc.want {
				t.Errorf("summarize(%v) = %+v, want %+v", tc.xs, got, tc.want)
			}
		})
	}
}

func TestSpreadAndWarning(t *testing.T) {
	for _, tc := range []struct {
		name   string
		s      stat
		spread float64
		wide   bool
	}{
		{"no rounds", stat{}, 0, false},
		{"identical", stat{Median: 275, Min: 275, Max: 275, N: 3}, 0, false},
		{"10 %", stat{Median: 200, Min: 190, Max: 210, N: 3}, 0.10, false},
		{"exactly 20 % is not over", stat{Median: 100, Min: 90, Max: 110, N: 3}, 0.20, false},
		{"just over 20 %", stat{Median: 100, Min: 90, Max: 110.5, N: 3}, 0.205, true},
		{"asymmetric: one slow round", stat{Median: 275, Min: 270, Max: 819, N: 5}, 549.0 / 275, true},
		{"differing around a zero median", stat{Median: 0, Min: 0, Max: 2, N: 3}, math.Inf(1), true},
		{"all zero", stat{Median: 0, Min: 0, Max: 0, N: 3}, 0, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := tc.s.spread(); math.Abs(got-tc.spread) > 1e-12 && !(math.IsInf(got, 1) && math.IsInf(tc.spread, 1)) {
				t.Errorf("spread of %+v = %v, want %v", tc.s, got, tc.spread)
			}
			if got := tc.s.wide(); got != tc.wide {
				t.Errorf("wide of %+v = %v, want %v", tc.s, got, tc.wide)
			}
		})
	}
}

func TestLatencyFloor(t *testing.T) {
	for _, tc := range []struct {
		model, latency, want time.Duration
	}{
		{200 * time.Millisecond, 5 * time.Millisecond, 210 * time.Millisecond},
		{200 * time.Millisecond, 0, 200 * time.Millisecond},
		{0, 20 * time.Millisecond, 40 * time.Millisecond},
		{time.Second, 12500 * time.Microsecond, 1025 * time.Millisecond},
	} {
		if got := latencyFloor(tc.model, tc.latency); got != tc.want {
			t.Errorf("latencyFloor(%v, %v) = %v, want %v", tc.model, tc.latency, got, tc.want)
		}
	}
}

func TestCell(t *testing.T) {
	for _, tc := range []struct {
		s      stat
		format string
		want   string
	}{
		{stat{Median: 275, Min: 270, Max: 281, N: 3}, "%.0f", "275 (270–281)"},
		{stat{Median: 86, Min: 85.84, Max: 86.2, N: 3}, "%.1f", "86.0 (85.8–86.2)"},
		{stat{Median: 434, Min: 275, Max: 819, N: 3}, "%.0f", "434 (275–819) ⚠"},
	} {
		if got := cell(tc.s, tc.format); got != tc.want {
			t.Errorf("cell(%+v, %q) = %q, want %q", tc.s, tc.format, got, tc.want)
		}
	}
}

func TestRatioCell(t *testing.T) {
	pt := func(med, lo, hi float64) stat { return stat{Median: med, Min: lo, Max: hi, N: 3} }
	for _, tc := range []struct {
		name string
		a, b stat
		want string
	}{
		{"disjoint: the ratio of the medians", pt(4834, 4700, 4950), pt(705, 690, 720), "0.15"},
		{"overlapping: parity", pt(275, 270, 281), pt(276, 272, 279), "parity (ranges overlap)"},
		{"touching ends overlap", pt(300, 280, 310), pt(270, 250, 280), "parity (ranges overlap)"},
		{"a noisy side's range covers the other's median", pt(819, 275, 900), pt(434, 270, 450), "parity (ranges overlap)"},
		{"both zero", pt(0, 0, 0), pt(0, 0, 0), "parity (ranges overlap)"},
		{"zero against a value", pt(0, 0, 0), pt(3, 2, 4), "∞"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := ratioCell(tc.a, tc.b); got != tc.want {
				t.Errorf("ratioCell(%+v, %+v) = %q, want %q", tc.a, tc.b, got, tc.want)
			}
		})
	}
}

func TestRatio(t *testing.T) {
	for _, tc := range []struct {
		a, b float64
		want string
	}{
		{2, 2, "1.00"},
		{86.0, 19.0, "0.22"},
		{0, 0, "="},
		{0, 300, "∞"},
		{300, 0, "0.00"},
	} {
		if got := ratio(tc.a, tc.b); got != tc.want {
			t.Errorf("ratio(%v, %v) = %q, want %q", tc.a, tc.b, got, tc.want)
		}
	}
}

func TestPairedRatios(t *testing.T) {
	// Round 2 ran on a slower machine for both sides: the paired ratios
	// stay together where the medians' ratio would not.
	bare := []float64{100, 110, 200, 0}
	sq := []float64{105, 110, 210, 50}
	got := pairedRatios(bare, sq)
	want := []float64{1.05, 1, 1.05} // the round where by hand measured 0 gives no ratio
	if len(got) != len(want) {
		t.Fatalf("pairedRatios = %v, want %v", got, want)
	}
	for i := range want {
		if math.Abs(got[i]-want[i]) > 1e-9 {
			t.Errorf("pairedRatios[%d] = %v, want %v", i, got[i], want[i])
		}
	}
	if c := pairedCell(got); c != "1.05 (1.00–1.05)" {
		t.Errorf("pairedCell = %q, want %q", c, "1.05 (1.00–1.05)")
	}
	if c := pairedCell(pairedRatios([]float64{1, 2}, []float64{3})); c != "3.00 (3.00–3.00)" {
		t.Errorf("unequal round counts: pairedCell = %q, want the rounds both sides have", c)
	}
	if c := pairedCell(nil); c != "—" {
		t.Errorf("no rounds: pairedCell = %q, want —", c)
	}
}
