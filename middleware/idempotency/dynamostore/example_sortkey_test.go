package dynamostore_test

import (
	"context"
	"fmt"
	"log"
	"strings"

	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"github.com/sqsonce/sqsonce/middleware/idempotency"
	"github.com/sqsonce/sqsonce/middleware/idempotency/dynamostore"
)

// claims is a DynamoDB API that prints the primary key of each claim and
// accepts every call.
type claims struct{ updates }

func (c *claims) PutItem(_ context.Context, in *dynamodb.PutItemInput, _ ...func(*dynamodb.Options)) (*dynamodb.PutItemOutput, error) {
	str := func(name string) string { return in.Item[name].(*types.AttributeValueMemberS).Value }
	namespace, _, _ := strings.Cut(str("sk"), "#")
	fmt.Printf("claim: pk %q, sk %q followed by the key's digest\n", str("pk"), namespace+"#")
	return &dynamodb.PutItemOutput{}, nil
}

// A table of a single-table design, shared with Powertools configured with
// sortKeyAttr: "sk" and its default static partition value. The store
// writes the records where Powertools does: the partition key holds
// "idempotency#" and the function's name, the sort key the record id.
func ExampleWithSortKey() {
	var db dynamostore.API = &claims{} // dynamodb.NewFromConfig(cfg) in a function
	store, err := dynamostore.New(db, "app-table",
		dynamostore.WithAttributes(dynamostore.Attributes{ID: "pk"}),
		// Inside Lambda: os.Getenv("AWS_LAMBDA_FUNCTION_NAME").
		dynamostore.WithSortKey(dynamostore.SortKey{Attr: "sk", FunctionName: "orders-fn"}),
	)
	if err != nil {
		log.Fatal(err)
	}
	guard, err := idempotency.New(idempotency.Config{Store: store, Namespace: "orders"})
	if err != nil {
		log.Fatal(err)
	}
	_, err = idempotency.Do(context.Background(), guard, idempotency.Raw([]byte("order-7")),
		func(context.Context) (string, error) { return "shipped", nil })
	fmt.Println(err)
	// Output:
	// claim: pk "idempotency#orders-fn", sk "orders#" followed by the key's digest
	// <nil>
}
