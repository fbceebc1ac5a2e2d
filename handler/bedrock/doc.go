// Package bedrock is a [handler.Provider] on the Amazon Bedrock Converse API
// (aws-sdk-go-v2/service/bedrockruntime), with the SDK's retries turned off.
//
//	cfg, err := config.LoadDefaultConfig(ctx)
//	if err != nil { return err }
//	provider := handler.LogRequests(bedrock.New(bedrock.NewClient(cfg)), requestLog, nil)
//
// # Retries off
//
// By default the SDK makes up to three attempts per request
// (retry.DefaultMaxAttempts = 3): a throttled or failed request is retried
// up to twice, each retry possibly a second billed generation whose first
// answer was lost. [NewClient] builds the client with [NoRetries]: one
// attempt per call, whatever AWS_MAX_ATTEMPTS says. The queue redelivers a
// failed message instead, and the idempotency record makes that
// redelivery safe.
//
// # Request
//
// The call's instructions become the system prompt, the document the one
// user message; temperature, top_p, max_tokens and stop sequences go in the
// inference configuration when the request sets them. IAM: the function
// needs bedrock:InvokeModel on the model.
package bedrock
