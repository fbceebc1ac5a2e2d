package idempotentconsumer_test

import (
	"testing"

	"github.com/aws/aws-cdk-go/awscdk/v2"
	"github.com/aws/aws-cdk-go/awscdk/v2/assertions"
	"github.com/aws/aws-cdk-go/awscdk/v2/awsdynamodb"
	"github.com/aws/jsii-runtime-go"

	"github.com/sqsonce/sqsonce/infra/idempotentconsumer"
	"github.com/sqsonce/sqsonce/middleware/idempotency/driver"
)

// sortKeyEnv is the function's environment for a table with partition key
// pk, sort key sk and the partition value orders#idempotency.
var sortKeyEnv = map[string]any{
	idempotentconsumer.EnvPartitionKey:    "pk",
	idempotentconsumer.EnvSortKey:         "sk",
	idempotentconsumer.EnvStaticPartition: "orders#idempotency",
}

var sortKey = idempotentconsumer.SortKey{Attribute: "sk", PartitionKey: "pk", Partition: "orders#idempotency"}

// TestConstructSortKey: a new table with a sort key has both keys (S), TTL
// on expiration, and the function gets the key's three variables.
func TestConstructSortKey(t *testing.T) {
	_, tpl := build(t, "SortKey", idempotentconsumer.Props{SortKey: sortKey}, nil)
	check(t, "key schema", func() {
		tpl.HasResourceProperties(jsii.String("AWS::DynamoDB::Table"), map[string]any{
			"KeySchema": []any{
				map[string]any{"AttributeName": "pk", "KeyType": "HASH"},
				map[string]any{"AttributeName": "sk", "KeyType": "RANGE"},
			},
			"AttributeDefinitions": []any{
				map[string]any{"AttributeName": "pk", "AttributeType": "S"},
				map[string]any{"AttributeName": "sk", "AttributeType": "S"},
			},
			"TimeToLiveSpecification": map[string]any{"AttributeName": driver.AttrExpiration, "Enabled": true},
			"BillingMode":             "PAY_PER_REQUEST",
		})
	})
	check(t, "environment", func() {
		tpl.HasResourceProperties(jsii.String("AWS::Lambda::Function"), map[string]any{
			"Environment": map[string]any{"Variables": assertions.Match_ObjectLike(&sortKeyEnv)},
		})
	})
}

// TestConstructNoSortKey: without SortKey the table is keyed by id alone
// and the function gets none of the sort key's variables.
func TestConstructNoSortKey(t *testing.T) {
	_, tpl := build(t, "NoSortKey", idempotentconsumer.Props{}, nil)
	check(t, "key schema", func() {
		tpl.HasResourceProperties(jsii.String("AWS::DynamoDB::Table"), map[string]any{
			"KeySchema": []any{map[string]any{"AttributeName": driver.AttrID, "KeyType": "HASH"}},
		})
	})
	absent := map[string]any{}
	for k := range sortKeyEnv {
		absent[k] = assertions.Match_Absent()
	}
	check(t, "environment", func() {
		tpl.HasResourceProperties(jsii.String("AWS::Lambda::Function"), map[string]any{
			"Environment": map[string]any{"Variables": assertions.Match_ObjectLike(&absent)},
		})
	})
}

// TestConstructExistingTableSortKey: an adopted table with a sort key is
// used as it is; the function gets the key's variables.
func TestConstructExistingTableSortKey(t *testing.T) {
	_, tpl := build(t, "ExistingSortKey", idempotentconsumer.Props{SortKey: sortKey}, func(stack awscdk.Stack, p *idempotentconsumer.Props) {
		p.Table = awsdynamodb.Table_FromTableName(stack, jsii.String("SingleTable"), jsii.String("app-table"))
	})
	check(t, "no table", func() { tpl.ResourceCountIs(jsii.String("AWS::DynamoDB::Table"), jsii.Number(0)) })
	env := map[string]any{idempotentconsumer.EnvTable: "app-table"}
	for k, v := range sortKeyEnv {
		env[k] = v
	}
	check(t, "environment", func() {
		tpl.HasResourceProperties(jsii.String("AWS::Lambda::Function"), map[string]any{
			"Environment": map[string]any{"Variables": assertions.Match_ObjectLike(&env)},
		})
	})
}
