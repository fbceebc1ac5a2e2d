// Package rie runs a Lambda function's bootstrap, built for this machine,
// under the AWS Lambda Runtime Interface Emulator (aws-lambda-rie), without
// Docker: one emulator is one execution environment. [Start] runs it in
// its classic mode, which serves one invocation at a time (and hands an
// invoke's tenant to the runtime: [Function.CallTenant]);
// [StartManaged] runs it in Lambda Managed Instances mode, which serves
// AWS_LAMBDA_MAX_CONCURRENCY invocations at once in one process (root
// only: see [CanStartManaged]).
//
//	fn, err := rie.Start(rie.Config{RIE: path, Bootstrap: "build/host/bootstrap", Env: env, Timeout: 3 * time.Minute})
//	defer fn.Close()
//	resp, err := fn.Invoke(ctx, sqsEvent) // an esm.Invoker
//
// # Environment
//
// The emulator and the bootstrap see only [Config.Env], PATH, a HOME of
// their own (so no shared AWS configuration is read) and the variables the
// emulator takes: AWS_LAMBDA_FUNCTION_TIMEOUT from [Config.Timeout],
// AWS_LAMBDA_FUNCTION_NAME and AWS_LAMBDA_FUNCTION_MEMORY_SIZE. Put the
// function's variables and the AWS credentials and region it should use in
// Env. [ReadEnvVars] reads the file `sam local invoke --env-vars` takes.
//
// # Finding the emulator
//
// [Find] looks in $SQSONCE_RIE, then PATH, then $(go env GOPATH)/bin;
// `make tools` installs the pinned emulator into .tools/.
package rie
