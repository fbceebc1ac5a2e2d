package chaos

import (
	"context"
	"errors"
	"net/http"
	"net/http/httptest"
	"sync/atomic"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"
	"github.com/aws/smithy-go"
	smithyhttp "github.com/aws/smithy-go/transport/http"
)

// TestProxyFaults sends a PutItem through the proxy with each fault certain
// and checks what the SDK sees and whether the request reached DynamoDB.
func TestProxyFaults(t *testing.T) {
	tests := []struct {
		name      string
		faults    StoreFaults
		forwarded bool
		check     func(error) bool
	}{
		{"none", StoreFaults{}, true, func(err error) bool { return err == nil }},
		{"server error", StoreFaults{ServerError: 1}, false, func(err error) bool {
			var re *smithyhttp.ResponseError
			return errors.As(err, &re) && re.HTTPStatusCode() == http.StatusInternalServerError
		}},
		{"throttle", StoreFaults{Throttle: 1}, false, func(err error) bool {
			var ae smithy.APIError
			return errors.As(err, &ae) && ae.ErrorCode() == "ThrottlingException"
		}},
		{"reset before forwarding", StoreFaults{ResetBefore: 1}, false, isReset},
		{"reset after the write was applied", StoreFaults{ResetAfter: 1}, true, isReset},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var got atomic.Int32
			upstream := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
				got.Add(1)
				w.Header().Set("Content-Type", "application/x-amz-json-1.0")
				_, _ = w.Write([]byte(`{}`))
			}))
			defer upstream.Close()
			px := newProxy(upstream.URL, tt.faults, 1)
			front := httptest.NewServer(px)
			defer front.Close()

			cfg := awsConfig(front.URL)
			cfg.RetryMaxAttempts = 1
			ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
			defer cancel()
			_, err := dynamodb.NewFromConfig(cfg).PutItem(ctx, &dynamodb.PutItemInput{
				TableName: aws.String("t"),
				Item:      map[string]types.AttributeValue{"id": &types.AttributeValueMemberS{Value: "x"}},
			})
			if !tt.check(err) {
				t.Errorf("PutItem error = %v", err)
			}
			if forwarded := got.Load() == 1; forwarded != tt.forwarded {
				t.Errorf("forwarded = %v, want %v", forwarded, tt.forwarded)
			}
			faults, total := px.stats()
			if total != 1 {
				t.Errorf("proxy counted %d requests, want 1", total)
			}
			if n := len(faults); (n == 1) != tt.faults.any() {
				t.Errorf("faults counted: %v", faults)
			}
		})
	}
}

func isReset(err error) bool {
	var re *smithyhttp.RequestSendError
	return errors.As(err, &re)
}
