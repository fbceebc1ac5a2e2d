//go:build race

package sim

// raceSeeds is TestSim's default under the race detector, which makes a
// seed some ten times dearer: make test runs the full default without it.
const raceSeeds = 40
