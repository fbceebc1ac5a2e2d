// Command sqsonce-esm does on a developer's machine what Lambda's SQS event
// source mapping does in AWS: it receives batches from a queue, invokes a
// function with each as the SQS event Lambda delivers, and deletes the
// records the function's partial batch response acknowledges. It feeds a
// queue deployed to moto_server (or to AWS) to the function running under
// the Lambda Runtime Interface Emulator, or to another endpoint of the
// same Invoke API, such as `sam local start-lambda`'s (which needs Docker:
// the tests use the emulator only).
//
//	go install ./cmd/sqsonce-esm   # from a checkout of the repository
//
// Usage:
//
//	sqsonce-esm (--queue-url URL | --function NAME) [--invoke URL]... [--batch-size N] [--window D] [--idle D] [--endpoint URL] [--region R]
//
// With --function, the queue, the batch size and the batching window are
// the deployed function's SQS event source mapping's (--batch-size and
// --window override them); while that mapping is enabled it competes for
// the queue's messages, which the command logs as a warning with the
// mapping's UUID: it never changes the mapping itself.
//
// The queue is reached with the AWS SDK's usual configuration: the
// credentials, region and endpoint of the environment (AWS_ACCESS_KEY_ID,
// AWS_REGION, AWS_ENDPOINT_URL, AWS_ENDPOINT_URL_SQS, AWS_PROFILE, ...),
// overridden by --endpoint (for SQS and Lambda) and --region. Each --invoke is one execution
// environment, which gets one invocation at a time; the number of them is
// the mapping's maximum concurrency. The default is the address
// aws-lambda-rie listens on when started without flags,
// http://127.0.0.1:8080/2015-03-31/functions/function/invocations.
//
// As Lambda does with ReportBatchItemFailures on: a record the response
// names in batchItemFailures stays on the queue, the others are deleted; a
// response that names an empty or unknown itemIdentifier, a function error
// or a timeout deletes nothing. What is not deleted comes back after the
// queue's visibility timeout and moves to its dead-letter queue after its
// maxReceiveCount receives, as SQS does that itself. The poller is the
// project's own, package internal/testenv/esm, the one make deploy-local
// runs; see it for what it does and does not do as Lambda does.
//
// It logs to standard error, one line per record settled (its message id,
// receive count and fate) and a summary when it stops; it never logs a
// message's body or attributes, nor a function error's message (which may
// quote them): only the error's type.
//
// It runs until interrupted (SIGINT, SIGTERM), or with --idle D until no
// invocation has run for D (make D longer than the queue's visibility
// timeout to see a failed record come back; the queue's approximate
// counts are not used, as moto_server's are wrong for records in flight).
// Invocations in flight finish and are settled before it exits; records
// received for a batch not yet handed to the function come back after the
// visibility timeout, as when Lambda's poller stops.
//
// Exit codes: 0 stopped; 1 the queue could not be read; 2 bad flags.
package main
