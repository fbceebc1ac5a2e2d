package esm_test

import (
	"fmt"

	"github.com/aws/aws-lambda-go/events"

	"github.com/sqsonce/sqsonce/internal/testenv/esm"
)

// A partial batch response names the records to leave on the queue; the
// others are deleted.
func ExampleAcknowledged() {
	ev := events.SQSEvent{Records: []events.SQSMessage{{MessageId: "a"}, {MessageId: "b"}}}
	resp := events.SQSEventResponse{BatchItemFailures: []events.SQSBatchItemFailure{{ItemIdentifier: "b"}}}
	acked, err := esm.Acknowledged(ev, resp)
	fmt.Println(len(acked), acked[0].MessageId, err)

	_, err = esm.Acknowledged(ev, events.SQSEventResponse{BatchItemFailures: []events.SQSBatchItemFailure{{ItemIdentifier: "z"}}})
	fmt.Println(err)
	// Output:
	// 1 a <nil>
	// esm: batch item failure names no record of the batch
}
