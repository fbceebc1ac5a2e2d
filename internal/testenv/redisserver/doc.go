// Package redisserver gives tests a real Redis server on loopback: one
// redis-server per test binary, started on first use on a free 127.0.0.1
// port, without persistence, and stopped when the tests end.
//
//	var redis = redisserver.New()
//	func TestMain(m *testing.M) { os.Exit(redis.Run(m)) }
//	func TestX(t *testing.T) { addr := redis.Addr(t) }
//
// [NewCluster] starts a one-node Redis Cluster instead (cluster mode, every
// slot on the node), for tests through a redis.ClusterClient.
//
// When redis-server is not installed or does not start, a test that asks
// for it fails if the environment variable CI is "true" and is skipped
// otherwise, with a message saying how to install it (apt-get install
// redis-server). With SQSONCE_TEST_REDIS_ADDR set (host:port), no process is
// started and the tests use that server.
package redisserver
