// Command producer decides that a document version needs a summary and puts
// the request on the queue. It is where the work is decided, so it is where
// the idempotency key is generated: once per decision, sent in the message
// body, and sent again unchanged if the send has to be retried.
//
//	go run ./samples/producer -queue-url https://sqs.us-east-1.amazonaws.com/123456789012/summarise -document 4471 -version 9
//
// A send whose response was lost (a timeout, a dropped connection) may still
// have put the message on the queue; the retry then puts a second message,
// with a new messageId, on the queue. That is the producer's re-send, and the
// key in the body is what makes it harmless: the function summarises once.
// For a FIFO queue, pass -group; the key is then also the
// MessageDeduplicationId, which lets SQS drop the re-send within its
// five-minute window.
package main
