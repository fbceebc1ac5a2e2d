package sqsvisibility

import (
	"context"
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/sqs"
)

// TestQueueURLMatchesSDK derives the queue URL of every region of every
// partition in the AWS SDK's partition data (the module this package builds
// with) and compares its host with the SDK's own SQS endpoint for the
// region: a partition the SDK knows and QueueURL does not fails here.
func TestQueueURLMatchesSDK(t *testing.T) {
	out, err := exec.Command("go", "list", "-m", "-f", "{{.Dir}}", "github.com/aws/aws-sdk-go-v2").Output()
	if err != nil {
		t.Fatalf("go list -m github.com/aws/aws-sdk-go-v2: %v", err)
	}
	path := filepath.Join(strings.TrimSpace(string(out)), "internal", "endpoints", "awsrulesfn", "partitions.json")
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	var data struct {
		Partitions []struct {
			ID      string                     `json:"id"`
			Regions map[string]json.RawMessage `json:"regions"`
		} `json:"partitions"`
	}
	if err := json.Unmarshal(b, &data); err != nil {
		t.Fatal(err)
	}
	resolver := sqs.NewDefaultEndpointResolverV2()
	checked := map[string]int{}
	for _, p := range data.Partitions {
		for region := range p.Regions {
			if strings.HasSuffix(region, "-global") {
				continue // a signing pseudo-region, not one queues live in
			}
			ep, err := resolver.ResolveEndpoint(context.Background(), sqs.EndpointParameters{
				Region: aws.String(region), UseFIPS: aws.Bool(false), UseDualStack: aws.Bool(false),
			})
			if err != nil {
				t.Fatalf("%s: SDK resolver: %v", region, err)
			}
			got, err := QueueURL("arn:" + p.ID + ":sqs:" + region + ":123456789012:q")
			if want := ep.URI.String() + "/123456789012/q"; err != nil || got != want {
				t.Errorf("partition %s, region %s: QueueURL = %q, %v; the SDK's endpoint gives %q", p.ID, region, got, err, want)
			}
			checked[p.ID]++
		}
	}
	for id := range domains {
		if checked[id] == 0 {
			t.Errorf("partition %s: no region of it in the SDK's data to check against", id)
		}
	}
	if len(checked) < 8 {
		t.Errorf("checked %d partitions (%v): the SDK's data is not what this test expects", len(checked), checked)
	}
	t.Logf("regions checked per partition: %v", checked)
}
