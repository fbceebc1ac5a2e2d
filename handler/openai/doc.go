// Package openai is a [handler.Provider] for any OpenAI-compatible
// chat-completions endpoint, over net/http, with no retries.
//
//	p, err := openai.New(openai.Config{BaseURL: os.Getenv("OPENAI_BASE_URL"), APIKey: os.Getenv("OPENAI_API_KEY")})
//	if err != nil { return err }
//	provider := handler.LogRequests(p, requestLog, nil)
//
// # One request per call
//
// [Provider.Complete] sends exactly one POST to {BaseURL}/chat/completions
// and returns its answer or its error. A retry could be a second billed
// generation whose first answer was lost; the queue redelivers a failed
// message instead, and the idempotency record makes that redelivery safe.
// No Idempotency-Key header is sent: net/http's transport treats a POST that
// carries one as replayable after a broken keep-alive connection.
//
// # Request
//
// The call's instructions go in a "system" message and the document in a
// "user" message; temperature, max_tokens, top_p and stop are sent only when
// the request sets them. A status other than 2xx is an [*APIError].
package openai
