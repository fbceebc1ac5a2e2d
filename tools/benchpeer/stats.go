package main

import (
	"fmt"
	"math"
	"slices"
	"time"
)

// maxSpread is the largest spread (max − min over the median) a row may
// have before the report warns that its median is not to be trusted.
const maxSpread = 0.20

// stat summarises one row's measurements on one side, one per round.
type stat struct {
	Median, Min, Max float64
	N                int
}

// summarize returns the median, minimum and maximum of xs; N is 0 for none.
func summarize(xs []float64) stat {
	if len(xs) == 0 {
		return stat{}
	}
	return stat{Median: median(xs), Min: slices.Min(xs), Max: slices.Max(xs), N: len(xs)}
}

// median returns the middle value of xs, or the mean of the two middle
// values for an even count; 0 for none. xs is not modified.
func median(xs []float64) float64 {
	if len(xs) == 0 {
		return 0
	}
	s := slices.Clone(xs)
	slices.Sort(s)
	m := len(s) / 2
	if len(s)%2 == 1 {
		return s[m]
	}
	return (s[m-1] + s[m]) / 2
}

// spread is max − min as a fraction of the median: 0 for a single value or
// identical values, +Inf when values differ around a median of 0.
func (s stat) spread() float64 {
	if s.Max == s.Min {
		return 0
	}
	if s.Median == 0 {
		return math.Inf(1)
	}
	return (s.Max - s.Min) / math.Abs(s.Median)
}

// wide reports whether the spread exceeds maxSpread.
func (s stat) wide() bool { return s.spread() > maxSpread }

// overlap reports whether the ranges [Min, Max] of a and b share a value,
// so the run cannot tell the two sides apart on this row.
func overlap(a, b stat) bool { return a.Min <= b.Max && b.Min <= a.Max }

// pairedRatios returns b over a, round by round (round i of each side
// ran in the same stretch of the run, so the machine's drift between
// rounds cancels): one ratio per round in which a is not 0.
func pairedRatios(a, b []float64) []float64 {
	var rs []float64
	for i := range min(len(a), len(b)) {
		if a[i] != 0 {
			rs = append(rs, b[i]/a[i])
		}
	}
	return rs
}

// pairedCell formats the ratios of pairedRatios as "median (min–max)", or
// "—" when there are none.
func pairedCell(rs []float64) string {
	if len(rs) == 0 {
		return "—"
	}
	s := summarize(rs)
	return fmt.Sprintf("%.2f (%.2f–%.2f)", s.Median, s.Min, s.Max)
}

// latencyFloor is the least time a batch of new keys can take when its
// records run concurrently: the model call plus two store round trips
// (the claim before it, the result after it).
func latencyFloor(model, latency time.Duration) time.Duration { return model + 2*latency }

// cell formats s as "median (min–max)", with "⚠" when its spread is wide.
func cell(s stat, format string) string {
	c := fmt.Sprintf(format+" ("+format+"–"+format+")", s.Median, s.Min, s.Max)
	if s.wide() {
		c += " ⚠"
	}
	return c
}

// ratioCell is b's median over a's, or "parity (ranges overlap)" when the
// run cannot tell them apart.
func ratioCell(a, b stat) string {
	if overlap(a, b) {
		return "parity (ranges overlap)"
	}
	return ratio(a.Median, b.Median)
}

// ratio is b / a to two decimals, "=" for 0 / 0 and "∞" for b / 0.
func ratio(a, b float64) string {
	if a == 0 {
		if b == 0 {
			return "="
		}
		return "∞"
	}
	return fmt.Sprintf("%.2f", b/a)
}
