package s3docs

import (
	"context"
	"errors"
	"fmt"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/s3"
	"github.com/aws/smithy-go"
	"github.com/sqsonce/sqsonce/handler"
	"github.com/sqsonce/sqsonce/internal/redact"
)

// API is the part of *s3.Client the documents call.
type API interface {
	GetObject(ctx context.Context, in *s3.GetObjectInput, optFns ...func(*s3.Options)) (*s3.GetObjectOutput, error)
}

var _ API = (*s3.Client)(nil)

// Documents is [handler.Documents] in S3.
type Documents struct {
	api    API
	bucket string
	prefix string
}

var _ handler.Documents = (*Documents)(nil)

// New returns Documents reading from bucket, for documents that name no
// bucket of their own, with object keys "{prefix}{id}/{version}.txt" for
// documents that name no key (prefix may be empty, or end in "/").
func New(api API, bucket, prefix string) *Documents {
	return &Documents{api: api, bucket: bucket, prefix: prefix}
}

// Get implements [handler.Documents]: one GetObject of the document's bucket
// and key, at its S3 version when it names one. A missing object or version
// is an error wrapping [handler.ErrDocumentNotFound].
func (d *Documents) Get(ctx context.Context, doc handler.Document) (string, error) {
	bucket, key := d.Location(doc)
	if bucket == "" {
		return "", fmt.Errorf("s3docs: document %s version %s: no bucket", doc.ID, doc.Version)
	}
	in := &s3.GetObjectInput{Bucket: aws.String(bucket), Key: aws.String(key)}
	if doc.VersionID != "" {
		in.VersionId = aws.String(doc.VersionID)
	}
	what := fmt.Sprintf("s3://%s/%s", bucket, key)
	if doc.Bucket != "" || doc.Key != "" || doc.VersionID != "" {
		// A location the message chose: errors and logs never quote it.
		what = fmt.Sprintf("document %s version %s at %s", doc.ID, doc.Version, redact.String(what+"?versionId="+doc.VersionID))
	}
	out, err := d.api.GetObject(ctx, in)
	if err != nil {
		var apiErr smithy.APIError
		if errors.As(err, &apiErr) {
			switch apiErr.ErrorCode() {
			case "NoSuchKey", "NoSuchVersion", "NotFound", "NoSuchBucket":
				return "", fmt.Errorf("s3docs: %s: %w: %w", what, handler.ErrDocumentNotFound, err)
			}
		}
		return "", fmt.Errorf("s3docs: %s: %w", what, err)
	}
	defer out.Body.Close()
	return handler.ReadDocument(out.Body, what)
}

// Location returns the bucket and key that doc is read from.
func (d *Documents) Location(doc handler.Document) (bucket, key string) {
	bucket, key = doc.Bucket, doc.Key
	if bucket == "" {
		bucket = d.bucket
	}
	if key == "" {
		key = d.prefix + string(doc.ID) + "/" + string(doc.Version) + ".txt"
	}
	return bucket, key
}
