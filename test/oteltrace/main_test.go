// Package oteltrace_test holds oteltrace's tests: here, in the test module,
// so that oteltrace's own go.mod requires nothing only they need
// (dynamostore, the OTLP exporter and protobuf, gRPC) and a user's graph
// does not carry it. graph_test.go stays with the module.
package oteltrace_test

import (
	"os"
	"testing"

	"github.com/sqsonce/sqsonce/internal/testenv/motoserver"
)

var moto = motoserver.New()

func TestMain(m *testing.M) {
	if os.Getenv(fakeDynamoDBEnv) != "" {
		serveFakeDynamoDB()
	}
	os.Exit(moto.Run(m))
}
