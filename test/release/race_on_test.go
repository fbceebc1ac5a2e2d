//go:build race

package release_test

// raceEnabled: this build has the race detector.
const raceEnabled = true
