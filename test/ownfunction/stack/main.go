// Command stack is the CDK app of test/ownfunction: a user's own stack
// around infra's construct, deploying the README's function
// (test/ownfunction) at Lambda's default 3 s timeout, keyed as its code
// keys (Props.KeySource "body:order_id", the README's
// idempotency.BodyField("order_id")). ORDERS_ZIP names the function's zip.
package main

import (
	"log"
	"os"
	"time"

	"github.com/aws/aws-cdk-go/awscdk/v2"
	"github.com/aws/aws-cdk-go/awscdk/v2/awslambda"
	"github.com/aws/jsii-runtime-go"

	"github.com/sqsonce/sqsonce/infra/idempotentconsumer"
)

func main() {
	defer jsii.Close()
	zip := os.Getenv("ORDERS_ZIP")
	if zip == "" {
		log.Fatal("ORDERS_ZIP is required: the function's bootstrap.zip")
	}
	app := awscdk.NewApp(nil)
	stack := awscdk.NewStack(app, jsii.String("Orders"), nil)
	c, err := idempotentconsumer.New(stack, "Orders", idempotentconsumer.Props{
		Code:      awslambda.Code_FromAsset(jsii.String(zip), nil),
		Namespace: "orders",
		KeySource: "body:order_id",
		Timeout:   3 * time.Second,
	})
	if err != nil {
		log.Fatal(err)
	}
	awscdk.NewCfnOutput(stack, jsii.String("QueueUrl"), &awscdk.CfnOutputProps{Value: c.Queue.QueueUrl()})
	awscdk.NewCfnOutput(stack, jsii.String("FunctionName"), &awscdk.CfnOutputProps{Value: c.Function.FunctionName()})
	awscdk.NewCfnOutput(stack, jsii.String("TableName"), &awscdk.CfnOutputProps{Value: c.Table.TableName()})
	app.Synth(nil)
}
