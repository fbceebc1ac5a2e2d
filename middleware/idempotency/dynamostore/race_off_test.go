//go:build !race

package dynamostore

// raceDetector is true when the tests run with -race (see race_on_test.go).
const raceDetector = false
