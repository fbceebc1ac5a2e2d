package s3docs_test

import (
	"context"
	"errors"
	"io"
	"os"
	"strings"
	"testing"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/s3"
	s3types "github.com/aws/aws-sdk-go-v2/service/s3/types"
	"github.com/aws/smithy-go"
	"github.com/sqsonce/sqsonce/handler"
	"github.com/sqsonce/sqsonce/handler/s3docs"
	"github.com/sqsonce/sqsonce/internal/testenv/motoserver"
)

var moto = motoserver.New()

func TestMain(m *testing.M) { os.Exit(moto.Run(m)) }

type fakeS3 struct {
	in   *s3.GetObjectInput
	body string
	err  error
}

func (f *fakeS3) GetObject(_ context.Context, in *s3.GetObjectInput, _ ...func(*s3.Options)) (*s3.GetObjectOutput, error) {
	f.in = in
	if f.err != nil {
		return nil, f.err
	}
	return &s3.GetObjectOutput{Body: io.NopCloser(strings.NewReader(f.body))}, nil
}

func TestGet(t *testing.T) {
	tests := []struct {
		name                       string
		doc                        handler.Document
		wantBucket, wantKey, wantV string
	}{
		{"default location", handler.Document{ID: "4471", Version: "9"}, "docs", "in/4471/9.txt", ""},
		{"own bucket and key", handler.Document{ID: "4471", Version: "9", Bucket: "other", Key: "x/y.md"}, "other", "x/y.md", ""},
		{"version id", handler.Document{ID: "4471", Version: "9", VersionID: "v-123"}, "docs", "in/4471/9.txt", "v-123"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			f := &fakeS3{body: "text"}
			got, err := s3docs.New(f, "docs", "in/").Get(t.Context(), tt.doc)
			if err != nil || got != "text" {
				t.Fatalf("Get = %q, %v", got, err)
			}
			if aws.ToString(f.in.Bucket) != tt.wantBucket || aws.ToString(f.in.Key) != tt.wantKey || aws.ToString(f.in.VersionId) != tt.wantV {
				t.Errorf("GetObject(bucket %q, key %q, version %q)", aws.ToString(f.in.Bucket), aws.ToString(f.in.Key), aws.ToString(f.in.VersionId))
			}
		})
	}
}

func TestGetErrors(t *testing.T) {
	tests := []struct {
		name     string
		err      error
		notFound bool
	}{
		{"no such key", &s3types.NoSuchKey{Message: aws.String("gone")}, true},
		{"no such version", &smithy.GenericAPIError{Code: "NoSuchVersion"}, true},
		{"access denied", &smithy.GenericAPIError{Code: "AccessDenied"}, false},
		{"network", errors.New("connection reset"), false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := s3docs.New(&fakeS3{err: tt.err}, "docs", "").Get(t.Context(), handler.Document{ID: "1", Version: "1"})
			if err == nil {
				t.Fatal("no error")
			}
			if got := errors.Is(err, handler.ErrDocumentNotFound); got != tt.notFound {
				t.Errorf("errors.Is(%v, ErrDocumentNotFound) = %v, want %v", err, got, tt.notFound)
			}
		})
	}
	if _, err := s3docs.New(&fakeS3{}, "", "").Get(t.Context(), handler.Document{ID: "1", Version: "1"}); err == nil {
		t.Error("no error without a bucket")
	}
}

// TestMotoVersions reads an overwritten object at its first S3 version from
// a real S3-compatible server.
func TestMotoVersions(t *testing.T) {
	client := s3.NewFromConfig(moto.Config(t), func(o *s3.Options) { o.UsePathStyle = true })
	ctx := t.Context()
	bucket := strings.ToLower(strings.ReplaceAll(motoserver.TableName(t), "_", "-"))
	if len(bucket) > 60 {
		bucket = bucket[:60]
	}
	if _, err := client.CreateBucket(ctx, &s3.CreateBucketInput{Bucket: aws.String(bucket)}); err != nil {
		t.Fatal(err)
	}
	if _, err := client.PutBucketVersioning(ctx, &s3.PutBucketVersioningInput{Bucket: aws.String(bucket),
		VersioningConfiguration: &s3types.VersioningConfiguration{Status: s3types.BucketVersioningStatusEnabled}}); err != nil {
		t.Fatal(err)
	}
	put := func(body string) string {
		out, err := client.PutObject(ctx, &s3.PutObjectInput{Bucket: aws.String(bucket), Key: aws.String("docs/4471/9.txt"), Body: strings.NewReader(body)})
		if err != nil {
			t.Fatal(err)
		}
		return aws.ToString(out.VersionId)
	}
	first := put("first text")
	put("second text")
	d := s3docs.New(client, bucket, "docs/")
	if got, err := d.Get(ctx, handler.Document{ID: "4471", Version: "9"}); err != nil || got != "second text" {
		t.Errorf("latest = %q, %v", got, err)
	}
	if got, err := d.Get(ctx, handler.Document{ID: "4471", Version: "9", VersionID: first}); err != nil || got != "first text" {
		t.Errorf("version %s = %q, %v", first, got, err)
	}
	if _, err := d.Get(ctx, handler.Document{ID: "4471", Version: "10"}); !errors.Is(err, handler.ErrDocumentNotFound) {
		t.Errorf("missing object: %v, want ErrDocumentNotFound", err)
	}
}

// TestGetErrorQuotesNoLocation: a transport error reading a location the
// message chose (its key and version id here) quotes neither: the SDK's text
// quotes the request's URL. errors.Is still sees the cause.
func TestGetErrorQuotesNoLocation(t *testing.T) {
	client := s3.New(s3.Options{
		Region: "us-east-1", BaseEndpoint: aws.String("http://127.0.0.1:1"), // nothing listens
		UsePathStyle: true, Credentials: aws.AnonymousCredentials{}, RetryMaxAttempts: 1,
	})
	const secret = "customer-4471-ssn-123-45-6789"
	for _, doc := range []handler.Document{
		{ID: "d", Version: "1", Key: "private/" + secret + ".txt"},
		{ID: "d", Version: "1", Key: "private/" + secret + " with spaces.txt"},
		{ID: "d", Version: "1", VersionID: "v-" + secret},
		{ID: "d", Version: "1", Bucket: "bucket-" + secret},
	} {
		_, err := s3docs.New(client, "docs", "").Get(t.Context(), doc)
		if err == nil {
			t.Fatal("no error from an endpoint nobody listens on")
		}
		if strings.Contains(err.Error(), secret) || strings.Contains(err.Error(), "customer-4471") {
			t.Errorf("the error quotes the message's location: %v", err)
		}
		if _, ok := errors.AsType[*smithy.OperationError](err); !ok {
			t.Errorf("errors.As does not find the SDK's error in %v", err)
		}
	}
	ctx, cancel := context.WithCancel(t.Context())
	cancel()
	if _, err := s3docs.New(client, "docs", "").Get(ctx, handler.Document{ID: "d", Version: "1", Key: secret}); !errors.Is(err, context.Canceled) {
		t.Errorf("Get with an ended context = %v, want it to wrap context.Canceled", err)
	}
}
