package s3docs

import (
	"context"
	"errors"
	"fmt"
	"net/url"
	"regexp"
	"strings"

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
	chosen := doc.Bucket != "" || doc.Key != "" || doc.VersionID != ""
	if chosen {
		// A location the message chose: errors and logs never quote it.
		what = fmt.Sprintf("document %s version %s at %s", doc.ID, doc.Version, redact.String(what+"?versionId="+doc.VersionID))
	}
	out, err := d.api.GetObject(ctx, in)
	if err != nil {
		if chosen {
			err = &quietError{err: err, text: quiet(err.Error(), doc.Bucket, doc.Key, doc.VersionID)}
		}
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

// quietError is an SDK error about a location the message chose, with a
// text that quotes none of it: the SDK's own text quotes the request's URL
// (net/http's *url.Error), and with it the bucket, key and version id.
// errors.Is and errors.As still see the SDK's error.
type quietError struct {
	err  error
	text string
}

func (e *quietError) Error() string { return e.text }
func (e *quietError) Unwrap() error { return e.err }

// quotedText matches a Go-quoted string, as net/http quotes a URL.
var quotedText = regexp.MustCompile(`"(?:[^"\\]|\\.)*"`)

// quiet is text with every quoted string, and each of the message's
// location values of 4 bytes or more, raw or escaped as a URL carries it,
// replaced by "…" (a shorter one is too common a substring to mask).
func quiet(text string, values ...string) string {
	text = quotedText.ReplaceAllString(text, `"…"`)
	for _, v := range values {
		if len(v) < 4 {
			continue
		}
		for _, form := range []string{v, url.PathEscape(v), url.QueryEscape(v), strings.ReplaceAll(url.PathEscape(v), "%2F", "/")} {
			text = strings.ReplaceAll(text, form, "…")
		}
	}
	return text
}
