package rie_test

import (
	"fmt"
	"strings"

	"github.com/sqsonce/sqsonce/internal/testenv/rie"
)

// The file `sam local invoke --env-vars` takes: the function's own entry
// overrides "Parameters".
func ExampleReadEnvVars() {
	file := `{"Parameters": {"SQSONCE_PROVIDER": "bedrock", "SQSONCE_CONCURRENCY": 4},
	          "SummariseFunction": {"SQSONCE_PROVIDER": "stub"}}`
	env, err := rie.ReadEnvVars(strings.NewReader(file), "SummariseFunction")
	fmt.Println(env["SQSONCE_PROVIDER"], env["SQSONCE_CONCURRENCY"], err)
	// Output: stub 4 <nil>
}
