package main

import (
	"errors"
	"fmt"
	"strconv"
	"strings"
	"time"

	"github.com/aws/aws-cdk-go/awscdk/v2"
	"github.com/aws/aws-cdk-go/awscdk/v2/awslambda"

	"github.com/sqsonce/sqsonce/infra/idempotentconsumer"
)

// Context keys the app reads (cdk.json "context", or -c key=value) and the
// defaults of the app's own settings. The consumer's figures default in
// package idempotentconsumer when their key is absent.
const (
	defaultStackName    = "Sqsonce"
	defaultBootstrapZip = "../build/bootstrap.zip"
	defaultNamespace    = "summarise"
	defaultProvider     = "bedrock"
	defaultModel        = "anthropic.claude-3-haiku-20240307-v1:0"
	defaultPrefix       = "documents/"
)

// Environment variables of the summarise runtime that the app sets, beyond
// the ones package idempotentconsumer owns.
const (
	envSummariesTable  = "SQSONCE_SUMMARIES_TABLE"
	envProvider        = "SQSONCE_PROVIDER"
	envModel           = "SQSONCE_MODEL"
	envDocumentsBucket = "SQSONCE_DOCUMENTS_BUCKET"
	envDocumentsPrefix = "SQSONCE_DOCUMENTS_PREFIX"
	envConcurrency     = "SQSONCE_CONCURRENCY"
	envMinRemaining    = "SQSONCE_MIN_REMAINING"
)

// config is the app's settings, read from the CDK context by [readConfig].
type config struct {
	StackName       string
	BootstrapZip    string
	Provider        string // bedrock, openai or stub
	Model           string
	DocumentsBucket string // empty: the stack creates a bucket
	DocumentsPrefix string
	Concurrency     int // zero: the batch size
	// MinRemaining is the time that must be left before the invocation's
	// deadline for a record to start (SQSONCE_MIN_REMAINING). Zero: half
	// the function's timeout. It must be below the timeout.
	MinRemaining  time.Duration
	AlarmTopicArn string
	Consumer      idempotentconsumer.Props // without Code
}

// readConfig reads the settings from get, which returns the context value
// of a key or nil. Values may be strings (from -c key=value) or JSON
// numbers (from cdk.json). It reports every bad value at once.
func readConfig(get func(key string) any) (config, error) {
	var errs []error
	str := func(key, def string) string {
		v := get(key)
		if v == nil {
			return def
		}
		s := strings.TrimSpace(fmt.Sprint(v))
		if s == "" {
			return def
		}
		return s
	}
	num := func(key string) int {
		s := str(key, "")
		if s == "" {
			return 0
		}
		n, err := strconv.Atoi(s)
		if err != nil || n <= 0 {
			errs = append(errs, fmt.Errorf("infra: context %s=%q is not a positive integer", key, s))
		}
		return n
	}
	dur := func(key string) time.Duration {
		s := str(key, "")
		if s == "" {
			return 0
		}
		d, err := time.ParseDuration(s)
		if err != nil || d <= 0 {
			errs = append(errs, fmt.Errorf("infra: context %s=%q is not a positive Go duration such as \"96h\"", key, s))
		}
		return d
	}

	c := config{
		StackName:       str("stackName", defaultStackName),
		BootstrapZip:    str("bootstrapZip", defaultBootstrapZip),
		Provider:        str("provider", defaultProvider),
		Model:           str("model", defaultModel),
		DocumentsBucket: str("documentsBucket", ""),
		DocumentsPrefix: str("documentsPrefix", defaultPrefix),
		AlarmTopicArn:   str("alarmTopicArn", ""),
		Concurrency:     num("concurrency"),
		MinRemaining:    dur("minRemaining"),
	}
	switch c.Provider {
	case "bedrock", "openai", "stub":
	default:
		errs = append(errs, fmt.Errorf("infra: context provider=%q is not bedrock, openai or stub", c.Provider))
	}
	if c.DocumentsPrefix == "/" {
		c.DocumentsPrefix = ""
	}
	c.Consumer = idempotentconsumer.Props{
		Namespace:           str("namespace", defaultNamespace),
		QueueName:           str("queueName", ""),
		MemorySize:          num("memorySize"),
		Timeout:             dur("timeout"),
		VisibilityTimeout:   dur("visibilityTimeout"),
		Retention:           dur("retention"),
		DeadLetterRetention: dur("deadLetterRetention"),
		MaxReceiveCount:     num("maxReceiveCount"),
		ExpiryMargin:        dur("expiryMargin"),
		ExpiresAfter:        dur("expiresAfter"),
		BatchSize:           num("batchSize"),
		MaxConcurrency:      num("maxConcurrency"),
		OldestMessageAlarm:  dur("oldestMessageAlarm"),
	}
	switch w := str("maxBatchingWindow", ""); w {
	case "":
	case "0", "0s", "off":
		c.Consumer.MaxBatchingWindow = -1
	default:
		c.Consumer.MaxBatchingWindow = dur("maxBatchingWindow")
	}
	switch v := strings.ToLower(str("deletionProtection", "true")); v {
	case "true":
	case "false":
		c.Consumer.DisableDeletionProtection = true
	default:
		errs = append(errs, fmt.Errorf("infra: context deletionProtection=%q is not true or false", v))
	}
	switch v := strings.ToLower(str("tracing", "disabled")); v {
	case "disabled":
	case "active":
		c.Consumer.Tracing = awslambda.Tracing_ACTIVE
	case "passthrough":
		c.Consumer.Tracing = awslambda.Tracing_PASS_THROUGH
	default:
		errs = append(errs, fmt.Errorf("infra: context tracing=%q is not disabled, active or passthrough", v))
	}
	switch p := strings.ToLower(str("tableRemovalPolicy", "retain")); p {
	case "retain":
		c.Consumer.TableRemovalPolicy = awscdk.RemovalPolicy_RETAIN
	case "destroy":
		c.Consumer.TableRemovalPolicy = awscdk.RemovalPolicy_DESTROY
	default:
		errs = append(errs, fmt.Errorf("infra: context tableRemovalPolicy=%q is not retain or destroy", p))
	}
	return c, errors.Join(errs...)
}
