// Package storebench compares the idempotency stores on real servers in one
// run: dynamostore on moto_server, redisstore on redis-server, pgstore on
// PostgreSQL, each started by the benchmark on loopback. It holds only
// benchmarks:
//
//	go test -run '^$' -bench . -benchtime 2000x -count 1 ./test/storebench/
//
// BenchmarkClaimComplete is one claim (Acquire of a new key) and its
// completion, one after the other, as the guard does for a first delivery;
// BenchmarkReplay is one Acquire of a completed key. Figures are latency
// bound (one goroutine), so they mostly measure each server's round trip
// on this machine: compare them as ratios within one run.
package storebench
