package handler

import (
	"context"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path"

	"github.com/sqsonce/sqsonce/internal/redact"
)

// MaxDocumentBytes bounds the size of a document read by [Dir] and by the S3
// documents of package s3docs: a larger text would make a prompt no model
// takes, and a bill nobody asked for.
const MaxDocumentBytes = 1 << 20

// ErrDocumentNotFound reports that a document version does not exist.
var ErrDocumentNotFound = errors.New("handler: document not found")

// Documents fetches the text of a document at a version.
type Documents interface {
	// Get returns the text of d. A document that does not exist is an error
	// wrapping [ErrDocumentNotFound].
	Get(ctx context.Context, d Document) (string, error)
}

// Dir is [Documents] in a local folder: the text of document ID at version V
// is the file "{ID}/{V}.txt" under the folder. Bucket, Key and VersionID of
// the [Document] are ignored. Reads cannot leave the folder.
type Dir string

var _ Documents = Dir("")

// Get implements [Documents].
func (d Dir) Get(ctx context.Context, doc Document) (string, error) {
	if err := ctx.Err(); err != nil {
		return "", err
	}
	name := path.Join(string(doc.ID), string(doc.Version)+".txt")
	if !identPattern.MatchString(string(doc.ID)) || !identPattern.MatchString(string(doc.Version)) || !fs.ValidPath(name) {
		// Not a plain identifier: named by length and digest, as Validate does.
		return "", fmt.Errorf("handler: document %s version %s: %w", redact.String(string(doc.ID)), redact.String(string(doc.Version)), ErrInvalidRequest)
	}
	root, err := os.OpenRoot(string(d))
	if err != nil {
		return "", fmt.Errorf("handler: documents folder: %w", err)
	}
	defer root.Close()
	f, err := root.Open(name)
	if errors.Is(err, fs.ErrNotExist) {
		return "", fmt.Errorf("handler: document %s version %s: %w", doc.ID, doc.Version, ErrDocumentNotFound)
	}
	if err != nil {
		return "", fmt.Errorf("handler: document %s version %s: %w", doc.ID, doc.Version, err)
	}
	defer f.Close()
	return ReadDocument(f, fmt.Sprintf("document %s version %s", doc.ID, doc.Version))
}

// ReadDocument reads a document's text from r, up to [MaxDocumentBytes]; a
// longer one is an error naming what. It is shared by the [Documents]
// implementations.
func ReadDocument(r io.Reader, what string) (string, error) {
	b, err := io.ReadAll(io.LimitReader(r, MaxDocumentBytes+1))
	if err != nil {
		return "", fmt.Errorf("handler: read %s: %w", what, err)
	}
	if len(b) > MaxDocumentBytes {
		return "", fmt.Errorf("handler: %s is larger than %d bytes", what, MaxDocumentBytes)
	}
	return string(b), nil
}
