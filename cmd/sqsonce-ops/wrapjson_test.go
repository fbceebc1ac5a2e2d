package main

import (
	"context"
	"fmt"
	"testing"

	"github.com/aws/aws-lambda-go/events"

	"github.com/sqsonce/sqsonce/middleware/idempotency"
	"github.com/sqsonce/sqsonce/middleware/idempotency/jmespath"
	"github.com/sqsonce/sqsonce/middleware/lambdaenv/envvars"
)

// TestInspectMessageWrapJSON: a function made by WrapJSON (the README's
// wiring: each body decoded into the request type) completed a message;
// with the function's key source, tenancy and format, inspect --message
// finds its record, for a body key source and a JMESPath one, a struct
// request type and one of any, in every format (under message-group
// tenancy for the native one, which Powertools' formats refuse). Before,
// the JMESPath key of a request type of any failed every delivery.
func TestInspectMessageWrapJSON(t *testing.T) {
	type order struct {
		OrderID     string `json:"order_id"`
		AmountCents int    `json:"amount_cents"`
	}
	env, store, _, _ := dynamoEnv(t, "orders")
	delete(env, appEnv[0])
	formats := map[string]idempotency.Format{envvars.FormatNative: idempotency.FormatNative,
		envvars.FormatPowertoolsPython: idempotency.FormatPowertoolsPython, envvars.FormatPowertoolsTypeScript: idempotency.FormatPowertoolsTypeScript}
	i := 0
	for fname, format := range formats {
		tenancy, tenancyVar := idempotency.TenancyMessageGroup, envvars.TenancyMessageGroup
		if format != idempotency.FormatNative {
			tenancy, tenancyVar = idempotency.TenancyOff, envvars.TenancyOff
		}
		for _, source := range []string{"body:order_id", "jmespath:powertools_json(body).order_id"} {
			key := idempotency.BodyField("order_id")
			if source != "body:order_id" {
				key = jmespath.MustCompile("powertools_json(body).order_id").Selector()
			}
			for _, reqType := range []string{"struct", "any"} {
				i++
				ns := fmt.Sprintf("orders-%d", i)
				name := fmt.Sprintf("%s, %s, %s request", fname, source, reqType)
				g, err := idempotency.New(idempotency.Config{Store: store, Namespace: ns, Format: format, Tenancy: tenancy})
				if err != nil {
					t.Fatal(err)
				}
				var id string
				var fn func(context.Context, events.SQSMessage) (string, error)
				if reqType == "struct" {
					fn = idempotency.WrapJSON(g, key, func(ctx context.Context, _ order, _ events.SQSMessage) (string, error) {
						id = idempotency.RecordID(ctx)
						return "ch_1", nil
					}, idempotency.DisallowUnknownFields())
				} else {
					fn = idempotency.WrapJSON(g, key, func(ctx context.Context, _ any, _ events.SQSMessage) (string, error) {
						id = idempotency.RecordID(ctx)
						return "ch_1", nil
					})
				}
				body := `{"order_id":"o-1","amount_cents":250}`
				if _, err := fn(t.Context(), events.SQSMessage{MessageId: "m-1", Body: body,
					Attributes: map[string]string{"MessageGroupId": "tenant-a"}}); err != nil {
					t.Errorf("%s: the function failed: %v", name, err)
					continue
				}
				e := map[string]string{}
				for k, v := range env {
					e[k] = v
				}
				e[envNamespace], e[envKey], e[envTenancy], e[envFormat] = ns, source, tenancyVar, fname
				msg := writeFile(t, "message.json", `{"messageId":"m-1","body":"{\"order_id\":\"o-1\",\"amount_cents\":250}",`+
					`"attributes":{"MessageGroupId":"tenant-a","ApproximateReceiveCount":"1"},"messageAttributes":{},"eventSource":"aws:sqs"}`)
				if v := inspectJSON(t, e, exitOK, "--message", msg); v.ID != id || v.State != stateCompleted {
					t.Errorf("%s: inspect --message: %+v, want the function's record %s completed", name, v, id)
				}
			}
		}
	}
}
