package idempotentconsumer_test

import (
	"testing"

	"github.com/aws/aws-cdk-go/awscdk/v2/assertions"
	"github.com/aws/jsii-runtime-go"

	"github.com/sqsonce/sqsonce/infra/idempotentconsumer"
)

// TestConstructStrict: Props.Strict gives the function SQSONCE_STRICT=true;
// without it the variable is absent, and Props.Environment may not set it.
func TestConstructStrict(t *testing.T) {
	_, tpl := build(t, "Strict", idempotentconsumer.Props{Strict: true}, nil)
	check(t, "environment", func() {
		tpl.HasResourceProperties(jsii.String("AWS::Lambda::Function"), map[string]any{
			"Environment": map[string]any{"Variables": assertions.Match_ObjectLike(&map[string]any{
				idempotentconsumer.EnvStrict: "true",
			})},
		})
	})
	_, tpl = build(t, "NotStrict", idempotentconsumer.Props{}, nil)
	check(t, "no variable", func() {
		tpl.HasResourceProperties(jsii.String("AWS::Lambda::Function"), map[string]any{
			"Environment": map[string]any{"Variables": assertions.Match_ObjectLike(&map[string]any{
				idempotentconsumer.EnvStrict: assertions.Match_Absent(),
			})},
		})
	})
	if _, err := (idempotentconsumer.Props{Namespace: "n", Environment: map[string]string{idempotentconsumer.EnvStrict: "true"}}).Plan(); err == nil {
		t.Error("Plan accepted Props.Environment setting " + idempotentconsumer.EnvStrict)
	}
}
