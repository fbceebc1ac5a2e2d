// Package runtimeapi is a Lambda Runtime API of the tests' own: it runs a
// function's bootstrap, built for this machine, with AWS_LAMBDA_RUNTIME_API
// pointing at it and, for Lambda Managed Instances, AWS_LAMBDA_MAX_CONCURRENCY
// set, so that aws-lambda-go's runtime loop serves that many invocations
// at once in one process, as it does in Lambda.
//
//	fn, err := runtimeapi.Start(runtimeapi.Config{Bootstrap: bin, MaxConcurrency: 4, Env: env})
//	defer fn.Close()                                                       // 410 Gone on /next once all are answered
//	call, err := fn.Enqueue(runtimeapi.Invocation{Payload: ev, TenantID: "a"}) // as many as you like, at once
//	res, err := call.Wait(ctx)                                             // the /response or /error, with its times
//	fn.MaxInFlight()                                                       // the most invocations in flight at once
//
// # The protocol
//
// The server speaks the part of the Runtime API that aws-lambda-go calls:
//
//   - GET /2018-06-01/runtime/invocation/next is held until an invocation
//     is queued, however many are held at once, and answered 200 with the
//     event as its body and the invocation's headers: request id,
//     deadline (Unix ms), invoked function ARN, trace id, and the tenant id
//     when the invocation has one.
//   - POST …/invocation/{id}/response and …/{id}/error are answered 202
//     and recorded for that request id, once; an answer for an unknown id,
//     for one not handed out, or a second answer, is refused with 400 and
//     kept as a protocol error ([Server.Err]).
//   - POST /2018-06-01/runtime/init/error is answered 202 and kept
//     ([Server.InitError]).
//
// After [Server.Shutdown] (which [Function.Close] calls), /next is answered
// 410 Gone once nothing is queued or in flight, as aws-lambda-go's own
// tests end its loop; the process then exits with status 1. The server
// does not end an invocation at its deadline, as Lambda Managed Instances
// do not: an answer after the deadline is recorded and [Result.Late]
// says so. It serves no Extensions API, so a function started with
// lambda.WithEnableSIGTERM logs a warning and goes on.
//
// # What is recorded
//
// For each invocation: when a /next request received it, its deadline,
// when its answer arrived, and the answer ([Result]). [Server.MaxInFlight]
// is the most invocations handed out and not yet answered at one moment;
// [Server.WaitPolling] waits until the runtime has that many /next
// requests waiting, that is until its init is done.
//
// # The process
//
// [Start] runs the bootstrap in its own process group (killed with the
// test binary on Linux) with only PATH, a HOME of its own, TZ, the
// variables Lambda sets (AWS_LAMBDA_FUNCTION_NAME, _MEMORY_SIZE,
// _VERSION, AWS_LAMBDA_LOG_GROUP_NAME, _LOG_STREAM_NAME,
// AWS_LAMBDA_INITIALIZATION_TYPE, LAMBDA_TASK_ROOT, _HANDLER, AWS_REGION,
// AWS_DEFAULT_REGION, AWS_LAMBDA_MAX_CONCURRENCY when set) and
// [Config.Env], and keeps all of its standard output and standard error,
// apart ([Function.Stdout], [Function.Stderr]); [JSONLines] decodes the
// log and EMF lines.
package runtimeapi
