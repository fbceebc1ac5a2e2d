// Command probe links every package with a planted site, for
// TestNoPlantedInBuild: its binary must carry no planted name unless it is
// built with the tag sqsonceplanted.
package main

import (
	"context"
	"fmt"

	"github.com/aws/aws-lambda-go/events"

	"github.com/sqsonce/sqsonce/middleware/batch"
	"github.com/sqsonce/sqsonce/middleware/idempotency"
	"github.com/sqsonce/sqsonce/middleware/idempotency/memstore"
)

func main() {
	g, err := idempotency.New(idempotency.Config{Store: memstore.New(), Namespace: "probe"})
	if err != nil {
		panic(err)
	}
	h := batch.SQS(idempotency.Wrap(g, idempotency.BodyField("k"), func(context.Context, events.SQSMessage) (int, error) { return 1, nil }), batch.Options{})
	resp, err := h(context.Background(), events.SQSEvent{Records: []events.SQSMessage{{MessageId: "m", Body: `{"k":"a"}`}}})
	fmt.Println(len(resp.BatchItemFailures), err)
	j := batch.SQS(idempotency.WrapJSON(g, idempotency.BodyField("k"), func(context.Context, struct{ K string }, events.SQSMessage) (int, error) { return 1, nil }), batch.Options{})
	resp, err = j(context.Background(), events.SQSEvent{Records: []events.SQSMessage{{MessageId: "n", Body: `{"K":"b"}`}}})
	fmt.Println(len(resp.BatchItemFailures), err)
}
