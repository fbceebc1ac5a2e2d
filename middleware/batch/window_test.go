package batch_test

import (
	"testing"
	"time"

	"github.com/sqsonce/sqsonce/middleware/batch"
)

func TestQueueWindow(t *testing.T) {
	if got, want := batch.QueueWindow(4*24*time.Hour, 5, 18*time.Minute), 4*24*time.Hour+90*time.Minute; got != want {
		t.Errorf("QueueWindow = %v, want %v", got, want)
	}
	if got, want := batch.QueueWindow(time.Hour, -1, time.Minute), time.Hour; got != want {
		t.Errorf("QueueWindow with a negative count = %v, want %v", got, want)
	}
}
