package sim

import (
	"encoding/json"
	"fmt"
	"math/rand/v2"
	"os"
)

// Tape is the sequence of choices that drives one run: every draw of the
// run (the scenario, which pending step goes next, every fault and
// duration) reads the next value. A tape made from a seed draws fresh
// values and keeps them; a tape replayed from Values reads them back (a
// value is taken modulo the draw's range) and reads 0 past its end, so
// that a shrunk tape is still a complete run.
type Tape struct {
	vals []uint64
	pos  int
	rng  *rand.Rand // nil: replay only
}

// NewTape returns the tape of seed: one seed, one run.
func NewTape(seed uint64) *Tape {
	return &Tape{rng: rand.New(rand.NewPCG(seed, 0x5eed5eed))}
}

// Replay returns a tape that reads vals.
func Replay(vals []uint64) *Tape { return &Tape{vals: append([]uint64(nil), vals...)} }

// Draw returns a value in [0, n); n must be positive.
func (t *Tape) Draw(n int) int {
	var v uint64
	switch {
	case t.pos < len(t.vals):
		v = t.vals[t.pos] % uint64(n)
	case t.rng != nil:
		v = t.rng.Uint64N(uint64(n))
		t.vals = append(t.vals, v)
	}
	t.pos++
	return int(v)
}

// Range returns a value in [lo, hi].
func (t *Tape) Range(lo, hi int) int { return lo + t.Draw(hi-lo+1) }

// Chance reports true pct times in a hundred; a zero value (a shrunk
// tape's) is false: no fault, the common path.
func (t *Tape) Chance(pct int) bool { return t.Draw(100) >= 100-pct }

// Values returns the values the run read, in order (for a replayed tape,
// the ones it read; none past the run's last draw).
func (t *Tape) Values() []uint64 {
	n := min(t.pos, len(t.vals))
	out := make([]uint64, t.pos)
	copy(out, t.vals[:n])
	return out
}

// Regression is a tape saved under testdata/regress: a run that once broke
// a property, shrunk, and replayed by go test.
type Regression struct {
	// Planted names the planted defect the tape exposed ("" for none):
	// replayed with it on (tag sqsonceplanted), the run must break
	// Property; without it, the run must break nothing.
	Planted  string `json:"planted,omitempty"`
	Property string `json:"property"`
	Seed     uint64 `json:"seed"`
	// Config is the run's configuration; a tape saved without one
	// replays Legacy.
	Config *Config  `json:"config,omitempty"`
	Steps  int      `json:"steps"`
	Tape   []uint64 `json:"tape"`
	// Schedule is the run's steps, for a person; not read back.
	Schedule []string `json:"schedule"`
}

func (r Regression) config() Config {
	if r.Config == nil {
		return Legacy()
	}
	return *r.Config
}

// ReadRegression reads a tape saved by [Regression.Save].
func ReadRegression(path string) (Regression, error) {
	var r Regression
	b, err := os.ReadFile(path)
	if err != nil {
		return r, fmt.Errorf("sim: %w", err)
	}
	if err := json.Unmarshal(b, &r); err != nil {
		return r, fmt.Errorf("sim: %s: %w", path, err)
	}
	return r, nil
}

// Save writes r to path as indented JSON.
func (r Regression) Save(path string) error {
	b, err := json.MarshalIndent(r, "", "  ")
	if err != nil {
		return fmt.Errorf("sim: %w", err)
	}
	return os.WriteFile(path, append(b, '\n'), 0o644)
}
