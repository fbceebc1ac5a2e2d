package motoserver

import (
	"context"
	"crypto/rand"
	"net/http"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	awsmiddleware "github.com/aws/aws-sdk-go-v2/aws/middleware"
	awshttp "github.com/aws/aws-sdk-go-v2/aws/transport/http"
	"github.com/aws/aws-sdk-go-v2/credentials"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"
)

// Region is the region of the clients built here.
const Region = "us-east-1"

// Config returns an aws.Config for the server: its endpoint as BaseEndpoint,
// static credentials "test"/"test", region us-east-1 and the SDK's standard
// retryer with 3 attempts. It reads no environment variable and no shared
// config file, so a developer's AWS profile cannot leak into a test.
func (s *Server) Config(t testing.TB) aws.Config {
	t.Helper()
	return aws.Config{
		Region:           Region,
		Credentials:      credentials.NewStaticCredentialsProvider("test", "test", ""),
		BaseEndpoint:     aws.String(s.Endpoint(t)),
		RetryMaxAttempts: 3,
	}
}

// DynamoDB returns a DynamoDB client for the server. optFns adjust the
// client's options, for example [Counter.Option].
func (s *Server) DynamoDB(t testing.TB, optFns ...func(*dynamodb.Options)) *dynamodb.Client {
	t.Helper()
	return dynamodb.NewFromConfig(s.Config(t), optFns...)
}

// CreateTable creates table name with the idempotency record's key schema:
// partition key "id" (S), on-demand billing. It waits until the table is
// active and deletes it when the test ends.
func CreateTable(t testing.TB, db *dynamodb.Client, name string) {
	t.Helper()
	createTable(t, db, name, "id", "")
}

// CreateTableWithSortKey creates table name as [CreateTable] does, with
// the partition key partitionKey (S) and the sort key sortKey (S): the
// schema of a table Powertools uses with sort_key_attr / sortKeyAttr.
func CreateTableWithSortKey(t testing.TB, db *dynamodb.Client, name, partitionKey, sortKey string) {
	t.Helper()
	createTable(t, db, name, partitionKey, sortKey)
}

// NewTableWithSortKey creates a table named after the test, unique to this
// call, with [CreateTableWithSortKey], and returns its name.
func NewTableWithSortKey(t testing.TB, db *dynamodb.Client, partitionKey, sortKey string) string {
	t.Helper()
	name := TableName(t)
	CreateTableWithSortKey(t, db, name, partitionKey, sortKey)
	return name
}

func createTable(t testing.TB, db *dynamodb.Client, name, partitionKey, sortKey string) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	in := &dynamodb.CreateTableInput{
		TableName:            aws.String(name),
		AttributeDefinitions: []types.AttributeDefinition{{AttributeName: aws.String(partitionKey), AttributeType: types.ScalarAttributeTypeS}},
		KeySchema:            []types.KeySchemaElement{{AttributeName: aws.String(partitionKey), KeyType: types.KeyTypeHash}},
		BillingMode:          types.BillingModePayPerRequest,
	}
	if sortKey != "" {
		in.AttributeDefinitions = append(in.AttributeDefinitions, types.AttributeDefinition{AttributeName: aws.String(sortKey), AttributeType: types.ScalarAttributeTypeS})
		in.KeySchema = append(in.KeySchema, types.KeySchemaElement{AttributeName: aws.String(sortKey), KeyType: types.KeyTypeRange})
	}
	_, err := db.CreateTable(ctx, in)
	if err != nil {
		t.Fatalf("motoserver: create table %s: %v", name, err)
	}
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		if _, err := db.DeleteTable(ctx, &dynamodb.DeleteTableInput{TableName: aws.String(name)}); err != nil {
			t.Errorf("motoserver: delete table %s: %v", name, err)
		}
	})
	w := dynamodb.NewTableExistsWaiter(db, func(o *dynamodb.TableExistsWaiterOptions) { o.MinDelay = 50 * time.Millisecond })
	if err := w.Wait(ctx, &dynamodb.DescribeTableInput{TableName: aws.String(name)}, 25*time.Second); err != nil {
		t.Fatalf("motoserver: wait for table %s: %v", name, err)
	}
}

// NewTable creates a table named after the test, unique to this call, with
// [CreateTable], and returns its name. Tests that each use their own table
// may run in parallel.
func NewTable(t testing.TB, db *dynamodb.Client) string {
	t.Helper()
	name := TableName(t)
	CreateTable(t, db, name)
	return name
}

// TableName returns a valid DynamoDB table name derived from the test's name
// and unique to this call.
func TableName(t testing.TB) string {
	var b strings.Builder
	for _, r := range t.Name() {
		switch {
		case r >= 'a' && r <= 'z', r >= 'A' && r <= 'Z', r >= '0' && r <= '9', r == '-', r == '.', r == '_':
			b.WriteRune(r)
		default:
			b.WriteByte('_')
		}
	}
	name := b.String()
	if len(name) > 200 {
		name = name[:200]
	}
	return name + "-" + strings.ToLower(rand.Text()[:10])
}

// Counter counts the HTTP requests that clients built with its [Counter.Option]
// send, per operation: retries count as requests of their own. The zero
// value is ready to use; it is safe for concurrent use.
type Counter struct {
	mu  sync.Mutex
	ops map[string]int
}

// Option is a DynamoDB client option that routes the client's requests
// through c.
func (c *Counter) Option() func(*dynamodb.Options) {
	return func(o *dynamodb.Options) {
		next := o.HTTPClient
		if next == nil {
			next = awshttp.NewBuildableClient()
		}
		o.HTTPClient = &countingClient{c: c, next: next}
	}
}

// Count returns the requests of operation op (e.g. "PutItem") so far.
func (c *Counter) Count(op string) int {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.ops[op]
}

// Total returns all requests so far.
func (c *Counter) Total() int {
	c.mu.Lock()
	defer c.mu.Unlock()
	n := 0
	for _, v := range c.ops {
		n += v
	}
	return n
}

// Calls returns a copy of the counts per operation.
func (c *Counter) Calls() map[string]int {
	c.mu.Lock()
	defer c.mu.Unlock()
	m := make(map[string]int, len(c.ops))
	for k, v := range c.ops {
		m[k] = v
	}
	return m
}

// Reset sets every count to zero.
func (c *Counter) Reset() {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.ops = nil
}

func (c *Counter) add(op string) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.ops == nil {
		c.ops = map[string]int{}
	}
	c.ops[op]++
}

type countingClient struct {
	c    *Counter
	next aws.HTTPClient
}

func (cc *countingClient) Do(req *http.Request) (*http.Response, error) {
	op := awsmiddleware.GetOperationName(req.Context())
	if target := req.Header.Get("X-Amz-Target"); target != "" {
		op = target[strings.LastIndexByte(target, '.')+1:]
	}
	cc.c.add(op)
	return cc.next.Do(req)
}
