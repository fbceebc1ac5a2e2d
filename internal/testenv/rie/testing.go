package rie

import "testing"

// StartTest starts the emulator as [Start] does, for test t: it fails t
// when the emulator cannot start, closes it when t ends (failing t if
// Close fails), and logs the emulator's output if t failed.
func StartTest(t testing.TB, c Config) *Function {
	t.Helper()
	fn, err := Start(c)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if t.Failed() {
			t.Logf("emulator output:\n%s", fn.Output())
		}
		if err := fn.Close(); err != nil {
			t.Error(err)
		}
	})
	return fn
}
