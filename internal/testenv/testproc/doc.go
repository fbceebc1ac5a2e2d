// Package testproc starts and stops the server processes that tests run
// against (moto_server, redis-server, PostgreSQL): each in its own process group on a
// free loopback port, with the tail of its output kept for error messages.
// Packages internal/testenv/motoserver, internal/testenv/redisserver and
// internal/testenv/pgserver build on it.
package testproc
