// Package motoserver gives tests a real DynamoDB-compatible server on
// loopback: one moto_server per test binary, started on first use on a free
// 127.0.0.1 port and stopped when the tests end.
//
//	var moto = motoserver.New()
//	func TestMain(m *testing.M) { os.Exit(moto.Run(m)) }
//	func TestX(t *testing.T) { db := moto.DynamoDB(t); table := motoserver.NewTable(t, db) }
//
// # Starting and stopping
//
// [Server.Endpoint] (and everything built on it) starts moto_server the first
// time a test asks for it, in its own process group, and waits until it
// answers HTTP. [Server.Run] runs the tests and then [Server.Close]s the
// server, killing its whole process group; on Linux the server is also killed
// if the test binary dies without running Close (a panic, a -timeout).
//
// # Atomic conditional writes
//
// moto's threaded server checks a DynamoDB condition and then writes without
// a lock, so two racing conditional PutItems can both succeed, which real
// DynamoDB never allows. When the python3 on PATH has moto, the server runs
// moto's own application with DynamoDB requests served one at a time (other
// services, such as SQS long polls, stay concurrent); otherwise moto_server
// runs as it is.
//
// # Missing server
//
// When moto_server is not installed or does not start, a test that asks for
// it fails with t.Fatal if the environment variable CI is "true", and is
// skipped otherwise, with a message naming the command and how to install it
// (pip install 'moto[server]').
//
// # Another endpoint
//
// With SQSONCE_DYNAMODB_ENDPOINT set (for example to http://127.0.0.1:8000
// for DynamoDB Local), no process is started and the tests use that
// endpoint. [Server.Reset] needs moto; tests that use [NewTable] instead get
// a fresh table each and run against any DynamoDB-compatible endpoint.
//
// # Clients
//
// [Server.Config] is an aws.Config for the endpoint with static "test"
// credentials in us-east-1, built without reading the environment or shared
// config files; [Server.DynamoDB] builds a *dynamodb.Client from it.
// [Counter] counts the HTTP requests a client sends, per operation, to assert
// round trips.
package motoserver
