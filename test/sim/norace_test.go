//go:build !race

package sim

// raceSeeds is TestSim's default under the race detector (see race_test.go);
// without it, -sim.seeds's own default.
const raceSeeds = 0
