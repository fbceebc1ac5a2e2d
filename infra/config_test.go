package main

import (
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/aws/aws-cdk-go/awscdk/v2"
	"github.com/aws/aws-cdk-go/awscdk/v2/awslambda"

	"github.com/sqsonce/sqsonce/infra/idempotentconsumer"
)

func TestReadConfig(t *testing.T) {
	for _, tc := range []struct {
		name string
		ctx  map[string]any
		want config
	}{
		{
			name: "defaults",
			ctx:  map[string]any{},
			want: config{
				StackName: defaultStackName, BootstrapZip: defaultBootstrapZip, Provider: defaultProvider, Model: defaultModel,
				DocumentsPrefix: defaultPrefix,
				Consumer:        idempotentconsumer.Props{Namespace: defaultNamespace, TableRemovalPolicy: awscdk.RemovalPolicy_RETAIN},
			},
		},
		{
			name: "strings from -c and numbers from cdk.json",
			ctx: map[string]any{
				"stackName": "S", "bootstrapZip": "x.zip", "namespace": "ns", "provider": "openai", "model": "gpt",
				"documentsBucket": "b", "documentsPrefix": "/", "concurrency": float64(2), "alarmTopicArn": "arn:t",
				"memorySize": "1024", "timeout": "90s", "visibilityTimeout": "15m", "retention": "48h",
				"deadLetterRetention": "72h", "maxReceiveCount": float64(7), "expiryMargin": "1h", "expiresAfter": "100h",
				"batchSize": "50", "maxBatchingWindow": "20s", "maxConcurrency": "3", "oldestMessageAlarm": "30m",
				"tableRemovalPolicy": "DESTROY", "minRemaining": "45s", "deletionProtection": "False", "tracing": "PassThrough",
			},
			want: config{
				StackName: "S", BootstrapZip: "x.zip", Provider: "openai", Model: "gpt", DocumentsBucket: "b",
				DocumentsPrefix: "", Concurrency: 2, MinRemaining: 45 * time.Second, AlarmTopicArn: "arn:t",
				Consumer: idempotentconsumer.Props{
					Namespace: "ns", MemorySize: 1024, Timeout: 90 * time.Second, VisibilityTimeout: 15 * time.Minute,
					Retention: 48 * time.Hour, DeadLetterRetention: 72 * time.Hour, MaxReceiveCount: 7,
					ExpiryMargin: time.Hour, ExpiresAfter: 100 * time.Hour, BatchSize: 50, MaxBatchingWindow: 20 * time.Second,
					MaxConcurrency: 3, OldestMessageAlarm: 30 * time.Minute, TableRemovalPolicy: awscdk.RemovalPolicy_DESTROY,
					DisableDeletionProtection: true, Tracing: awslambda.Tracing_PASS_THROUGH,
				},
			},
		},
		{
			name: "batching window off",
			ctx:  map[string]any{"maxBatchingWindow": "off", "namespace": " spaced "},
			want: config{
				StackName: defaultStackName, BootstrapZip: defaultBootstrapZip, Provider: defaultProvider, Model: defaultModel,
				DocumentsPrefix: defaultPrefix,
				Consumer:        idempotentconsumer.Props{Namespace: "spaced", MaxBatchingWindow: -1, TableRemovalPolicy: awscdk.RemovalPolicy_RETAIN},
			},
		},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got, err := readConfig(func(k string) any { return tc.ctx[k] })
			if err != nil {
				t.Fatal(err)
			}
			if !reflect.DeepEqual(got, tc.want) {
				t.Errorf("readConfig\n got %+v\nwant %+v", got, tc.want)
			}
		})
	}
}

func TestReadConfigRejects(t *testing.T) {
	ctx := map[string]any{
		"provider":           "gemini",
		"timeout":            "3 minutes",
		"retention":          "-1h",
		"batchSize":          "ten",
		"concurrency":        float64(-1),
		"tableRemovalPolicy": "snapshot",
		"minRemaining":       "-10s",
		"deletionProtection": "maybe",
		"tracing":            "on",
	}
	_, err := readConfig(func(k string) any { return ctx[k] })
	if err == nil {
		t.Fatal("readConfig accepted bad values")
	}
	for _, want := range []string{
		`provider="gemini" is not bedrock, openai or stub`,
		`timeout="3 minutes" is not a positive Go duration`,
		`retention="-1h" is not a positive Go duration`,
		`batchSize="ten" is not a positive integer`,
		`concurrency="-1" is not a positive integer`,
		`tableRemovalPolicy="snapshot" is not retain or destroy`,
		`minRemaining="-10s" is not a positive Go duration`,
		`deletionProtection="maybe" is not true or false`,
		`tracing="on" is not disabled, active or passthrough`,
	} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("error %q\nlacks %q", err, want)
		}
	}
}
