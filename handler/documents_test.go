package handler_test

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/sqsonce/sqsonce/handler"
)

func TestDir(t *testing.T) {
	dir := t.TempDir()
	if err := os.MkdirAll(filepath.Join(dir, "a"), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, "a", "1.txt"), []byte("hello"), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.MkdirAll(filepath.Join(dir, "big"), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, "big", "1.txt"), make([]byte, handler.MaxDocumentBytes+1), 0o644); err != nil {
		t.Fatal(err)
	}
	outside := filepath.Join(t.TempDir(), "secret.txt")
	if err := os.WriteFile(outside, []byte("secret"), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink(filepath.Dir(outside), filepath.Join(dir, "link")); err != nil {
		t.Fatal(err)
	}
	d := handler.Dir(dir)
	tests := []struct {
		name    string
		doc     handler.Document
		want    string
		wantErr error
		errText string
	}{
		{"found", handler.Document{ID: "a", Version: "1"}, "hello", nil, ""},
		{"S3 fields ignored", handler.Document{ID: "a", Version: "1", Bucket: "b", Key: "k", VersionID: "v"}, "hello", nil, ""},
		{"missing version", handler.Document{ID: "a", Version: "2"}, "", handler.ErrDocumentNotFound, ""},
		{"missing document", handler.Document{ID: "zz", Version: "1"}, "", handler.ErrDocumentNotFound, ""},
		{"parent directory", handler.Document{ID: "..", Version: "1"}, "", handler.ErrInvalidRequest, ""},
		{"separator", handler.Document{ID: "a/../a", Version: "1"}, "", handler.ErrInvalidRequest, ""},
		{"symlink out of the folder", handler.Document{ID: "link", Version: "secret"}, "", nil, "escape"},
		{"too large", handler.Document{ID: "big", Version: "1"}, "", nil, "larger than"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := d.Get(t.Context(), tt.doc)
			if tt.wantErr == nil && tt.errText == "" {
				if err != nil || got != tt.want {
					t.Fatalf("Get = %q, %v; want %q", got, err, tt.want)
				}
				return
			}
			if err == nil {
				t.Fatalf("Get = %q, want an error", got)
			}
			if tt.wantErr != nil && !errors.Is(err, tt.wantErr) {
				t.Errorf("error %v, want %v", err, tt.wantErr)
			}
			if tt.errText != "" && !strings.Contains(err.Error(), tt.errText) {
				t.Errorf("error %v, want it to mention %q", err, tt.errText)
			}
		})
	}
}

func TestSampleDocuments(t *testing.T) {
	text, err := docs.Get(t.Context(), handler.Document{ID: "4471", Version: "9"})
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(text, "version 9") {
		t.Errorf("samples/documents/4471/9.txt = %q", text)
	}
}
