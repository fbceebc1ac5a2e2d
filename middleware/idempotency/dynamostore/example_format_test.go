package dynamostore_test

import (
	"context"
	"fmt"
	"log"
	"slices"
	"strings"
	"time"

	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"github.com/sqsonce/sqsonce/middleware/idempotency/driver"
	"github.com/sqsonce/sqsonce/middleware/idempotency/dynamostore"
)

// updates is a DynamoDB API that keeps the data attribute of each
// completion and accepts every call.
type updates struct{ data []types.AttributeValue }

func (u *updates) PutItem(context.Context, *dynamodb.PutItemInput, ...func(*dynamodb.Options)) (*dynamodb.PutItemOutput, error) {
	return &dynamodb.PutItemOutput{}, nil
}
func (u *updates) GetItem(context.Context, *dynamodb.GetItemInput, ...func(*dynamodb.Options)) (*dynamodb.GetItemOutput, error) {
	return &dynamodb.GetItemOutput{}, nil
}
func (u *updates) UpdateItem(_ context.Context, in *dynamodb.UpdateItemInput, _ ...func(*dynamodb.Options)) (*dynamodb.UpdateItemOutput, error) {
	u.data = append(u.data, in.ExpressionAttributeValues[":data"])
	return &dynamodb.UpdateItemOutput{}, nil
}
func (u *updates) TransactWriteItems(context.Context, *dynamodb.TransactWriteItemsInput, ...func(*dynamodb.Options)) (*dynamodb.TransactWriteItemsOutput, error) {
	return &dynamodb.TransactWriteItemsOutput{}, nil
}

// describe spells an attribute value in DynamoDB's JSON notation.
func describe(v types.AttributeValue) string {
	switch v := v.(type) {
	case *types.AttributeValueMemberS:
		return fmt.Sprintf("{S: %q}", v.Value)
	case *types.AttributeValueMemberN:
		return fmt.Sprintf("{N: %q}", v.Value)
	case *types.AttributeValueMemberM:
		var fields []string
		for k, e := range v.Value {
			fields = append(fields, fmt.Sprintf("%q: %s", k, describe(e)))
		}
		slices.Sort(fields)
		return "{M: {" + strings.Join(fields, ", ") + "}}"
	}
	return fmt.Sprintf("%T", v)
}

// The same results stored in each data format: the string "123" and an
// object. Powertools for TypeScript writes them as DataPowertoolsTypeScript
// does, Powertools for Python as DataPowertoolsPython does.
func ExampleWithDataFormat() {
	for _, format := range []dynamostore.DataFormat{dynamostore.DataPowertoolsPython, dynamostore.DataPowertoolsTypeScript} {
		api := &updates{}
		store, err := dynamostore.New(api, "idempotency", dynamostore.WithDataFormat(format))
		if err != nil {
			log.Fatal(err)
		}
		for _, result := range []string{`"123"`, `{"summary":"…","tokens":3}`} {
			rec := driver.Record{ID: "summarise#k", Status: driver.StatusCompleted, Owner: "me",
				ExpiresAt: time.Unix(1_800_000_000, 0), Data: []byte(result)}
			if _, err := store.Complete(context.Background(), rec); err != nil {
				log.Fatal(err)
			}
		}
		fmt.Printf("%v:\n", format)
		for _, d := range api.data {
			fmt.Println("  data", describe(d))
		}
	}
	// Output:
	// JSON text (Powertools Python):
	//   data {S: "\"123\""}
	//   data {S: "{\"summary\":\"…\",\"tokens\":3}"}
	// native DynamoDB types (Powertools TypeScript):
	//   data {S: "123"}
	//   data {M: {"summary": {S: "…"}, "tokens": {N: "3"}}}
}
