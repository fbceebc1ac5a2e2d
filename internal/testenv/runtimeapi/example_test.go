package runtimeapi_test

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"strings"

	"github.com/sqsonce/sqsonce/internal/testenv/runtimeapi"
)

// A runtime polls /next and answers each invocation on its own request
// id; aws-lambda-go does this in every one of its
// AWS_LAMBDA_MAX_CONCURRENCY goroutines.
func ExampleServer() {
	s, err := runtimeapi.NewServer()
	if err != nil {
		panic(err)
	}
	defer s.Close()
	call, _ := s.Enqueue(runtimeapi.Invocation{Payload: []byte(`{"n":1}`), TenantID: "tenant-a"})

	go func() { // the runtime
		resp, err := http.Get("http://" + s.Addr() + "/2018-06-01/runtime/invocation/next")
		if err != nil {
			return
		}
		event, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		id := resp.Header.Get(runtimeapi.HeaderRequestID)
		answer := fmt.Sprintf(`{"tenant":%q,"event":%s}`, resp.Header.Get(runtimeapi.HeaderTenantID), event)
		r, err := http.Post("http://"+s.Addr()+"/2018-06-01/runtime/invocation/"+id+"/response", "application/json", strings.NewReader(answer))
		if err == nil {
			r.Body.Close()
		}
	}()

	res, err := call.Wait(context.Background())
	fmt.Println(string(res.Response), res.RequestID == call.RequestID(), err)
	// Output: {"tenant":"tenant-a","event":{"n":1}} true <nil>
}
