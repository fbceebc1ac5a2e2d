package main

import (
	"context"
	"crypto/rand"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"os"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/config"
	"github.com/aws/aws-sdk-go-v2/service/sqs"

	"github.com/sqsonce/sqsonce/handler"
)

func main() {
	if err := run(); err != nil {
		fmt.Fprintln(os.Stderr, "producer:", err)
		os.Exit(1)
	}
}

func run() error {
	queueURL := flag.String("queue-url", "", "URL of the summarise queue (required)")
	docID := flag.String("document", "4471", "document id")
	version := flag.String("version", "9", "document version")
	s3VersionID := flag.String("s3-version-id", "", "S3 object version of the document, to pin its bytes")
	model := flag.String("model", "", "model id (empty: the function's default)")
	promptVersion := flag.String("prompt-version", "v1", "prompt version")
	temperature := flag.Float64("temperature", -1, "temperature (negative: the model's default)")
	maxTokens := flag.Int("max-tokens", 0, "max tokens (0: the model's default)")
	key := flag.String("key", "", "idempotency key decided by the caller (empty: generate one for this decision)")
	group := flag.String("group", "", "MessageGroupId, for a FIFO queue")
	attempts := flag.Int("attempts", 3, "send attempts; every attempt carries the same key")
	flag.Parse()
	if *queueURL == "" {
		flag.Usage()
		return errors.New("-queue-url is required")
	}

	// The work is decided here: this is the one place the key is made.
	if *key == "" {
		*key = fmt.Sprintf("sum-%s-%s-%s", *docID, *version, rand.Text()[:16])
	}
	req := handler.Request{ // the message schema, documented in package handler
		IdempotencyKey: *key,
		Document:       handler.Document{ID: handler.Ident(*docID), Version: handler.Ident(*version), VersionID: *s3VersionID},
		Model:          *model,
		PromptVersion:  *promptVersion,
	}
	if *temperature >= 0 {
		req.Parameters.Temperature = temperature
	}
	if *maxTokens > 0 {
		req.Parameters.MaxTokens = maxTokens
	}

	ctx := context.Background()
	cfg, err := config.LoadDefaultConfig(ctx)
	if err != nil {
		return err
	}
	client := sqs.NewFromConfig(cfg)

	var sendErr error
	for attempt := 1; attempt <= *attempts; attempt++ {
		// Request id and send time change on every attempt; they are not
		// part of the key.
		sentAt := time.Now().UTC()
		req.RequestID, req.SentAt = rand.Text()[:12], &sentAt
		body, err := json.Marshal(req)
		if err != nil {
			return err
		}
		in := &sqs.SendMessageInput{QueueUrl: queueURL, MessageBody: aws.String(string(body))}
		if *group != "" {
			in.MessageGroupId = group
			in.MessageDeduplicationId = key
		}
		sctx, cancel := context.WithTimeout(ctx, 10*time.Second)
		out, err := client.SendMessage(sctx, in)
		cancel()
		if err == nil {
			fmt.Printf("sent %s (messageId %s, attempt %d)\n", *key, aws.ToString(out.MessageId), attempt)
			return nil
		}
		sendErr = err
		fmt.Fprintf(os.Stderr, "producer: attempt %d: %v; re-sending with the same key\n", attempt, err)
		time.Sleep(time.Duration(attempt) * 200 * time.Millisecond)
	}
	return fmt.Errorf("send %s: %w", *key, sendErr)
}
