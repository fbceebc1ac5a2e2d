//go:build race

package dynamostore

// raceDetector is true when the tests run with -race, which changes what
// allocates: allocation ceilings are measured without it.
const raceDetector = true
