// Package deploy is the test of make deploy-local: the app's real stack,
// cdk-deployed to a moto_server on loopback, read back through the AWS APIs
// against its synthesised template, fed from its own queue, updated,
// deployed again without changes, and destroyed. Its test files build only
// with the tag deploylocal:
//
//	make deploy-local     # go test -race -tags deploylocal -v ./test/deploy
//
// # The stack
//
// infra's Makefile (make -C infra synth, bootstrap, deploy and destroy with
// ENDPOINT set to moto) does the CDK work with the pinned CLI, with the
// three workarounds moto needs, written there with their reasons. The stack
// is the app's own, with provider stub and figures that fit the test's
// time: a 20 s timeout (so a 25 s lease) and 2 receives before the
// dead-letter queue. The function's zip is this machine's build of
// cmd/summarise, the one the emulator runs.
//
// # Read back
//
// Every property moto applies is compared with the template, references
// resolved to what the stack created; every property moto drops is checked
// to be still dropped, so a moto that starts applying one fails the test
// until it moves to the compared ones. The test logs both tables.
//
// # Fed from its own queue
//
// Package internal/testenv/esm polls the deployed queue with the deployed
// event source mapping's batch size, batching window and maximum
// concurrency, and invokes the bootstrap under the Lambda Runtime Interface
// Emulator (package internal/testenv/rie), one emulator per concurrent
// invocation, each with the deployed function's environment as moto holds
// it, plus AWS_ENDPOINT_URL (moto), test credentials, a request log file
// and a stub delay. The scenarios: a duplicate delivery (a lost
// acknowledgement), a producer's re-send, a duplicate that arrives while its
// key is in progress (paced, then replayed), and a poison message (its
// document is missing) that reaches the deployed dead-letter queue. Their
// counts are logged.
//
// # Missing tools
//
// Without moto_server, Node.js, npm (to install the CDK CLI) or the Lambda
// RIE the test fails under CI=true and is skipped otherwise.
package deploy
