package history

import (
	"fmt"
	"testing"
)

// BenchmarkCheck checks a history of keys keys, each run once, completed,
// acknowledged and replayed twice by other processes: about what one chaos
// run of that many keys records.
func BenchmarkCheck(b *testing.B) {
	for _, keys := range []int{30, 300} {
		s := newScript("bench")
		s.proc("w1", ReaderSqsonce).proc("w2", ReaderSqsonce).proc("w3", ReaderSqsonce)
		for k := range keys {
			key, r := fmt.Sprint("k", k), fmt.Sprint("r", k)
			s.at(int64(k)*10).firstRun("w1", "a"+key, key, "o"+key, r)
			for i, w := range []string{"w2", "w3"} {
				d := fmt.Sprint(w, key)
				s.at(int64(k)*10+600+int64(i)).deliver(w, d, key).replayed(w, d, ReaderSqsonce, r).
					outcome(w, d, OutcomeReplayed, false, "").ack(w, d, r)
			}
			s.final(key, StatusCompleted, r, "o"+key)
		}
		h := s.history()
		b.Run(fmt.Sprintf("keys=%d/events=%d", keys, len(h.Events)), func(b *testing.B) {
			for b.Loop() {
				if v := Check(h); v.Failed() {
					b.Fatal(v.Violations())
				}
			}
		})
	}
}
