package batch

import "time"

// QueueWindow is the longest an SQS message can keep being delivered: its
// retention, plus a visibility timeout for each receive before it moves to
// the dead-letter queue; QueueWindow(4*24*time.Hour, 5, 18*time.Minute) is
// 4 days and 90 minutes. Set idempotency.Config.MinExpiry to it.
func QueueWindow(retention time.Duration, maxReceiveCount int, visibilityTimeout time.Duration) time.Duration {
	if maxReceiveCount < 0 {
		maxReceiveCount = 0
	}
	return retention + time.Duration(maxReceiveCount)*visibilityTimeout
}
