package idempotentconsumer_test

import (
	"fmt"
	"log"
	"time"

	"github.com/aws/aws-cdk-go/awscdk/v2"
	"github.com/aws/aws-cdk-go/awscdk/v2/awslambda"
	"github.com/aws/jsii-runtime-go"

	"github.com/sqsonce/sqsonce/infra/idempotentconsumer"
)

// An adopter's stack: their own handler, consumed once per key.
func Example() {
	app := awscdk.NewApp(nil)
	stack := awscdk.NewStack(app, jsii.String("Orders"), nil)
	c, err := idempotentconsumer.New(stack, "Orders", idempotentconsumer.Props{
		Code:      awslambda.Code_FromAsset(jsii.String("build/bootstrap.zip"), nil),
		Namespace: "orders",
		Timeout:   time.Minute,
	})
	if err != nil {
		log.Fatal(err)
	}
	awscdk.NewCfnOutput(stack, jsii.String("QueueUrl"), &awscdk.CfnOutputProps{Value: c.Queue.QueueUrl()})
	app.Synth(nil)
}

// The figures behind the defaults: the expiry is derived from the queues.
func ExampleProps_Plan() {
	pl, err := idempotentconsumer.Props{Namespace: "summarise"}.Plan()
	if err != nil {
		log.Fatal(err)
	}
	fmt.Println("visibility:", pl.VisibilityTimeout)
	fmt.Println("window:", pl.QueueWindow, "=", idempotentconsumer.GoSeconds(pl.QueueWindow))
	fmt.Println("dead-letter window:", pl.DeadLetterWindow, "=", idempotentconsumer.GoSeconds(pl.DeadLetterWindow))
	fmt.Println("expires after:", pl.ExpiresAfter, "=", idempotentconsumer.GoSeconds(pl.ExpiresAfter))
	// Output:
	// visibility: 18m0s
	// window: 97h30m0s = 351000s
	// dead-letter window: 433h30m0s = 1560600s
	// expires after: 457h30m0s = 1647000s
}

// A visibility timeout that leaves Lambda no room to retry is refused.
func ExampleProps_Plan_refused() {
	_, err := idempotentconsumer.Props{
		Namespace:         "summarise",
		Timeout:           3 * time.Minute,
		VisibilityTimeout: 5 * time.Minute,
	}.Plan()
	fmt.Println(err)
	// Output:
	// idempotentconsumer: VisibilityTimeout 5m0s is below 6 × Timeout 3m0s (18m0s): Lambda could not retry a throttled batch before its messages reappear
}
