package inflate_test

import (
	"bytes"
	"compress/gzip"
	"strings"
	"testing"

	"github.com/sqsonce/sqsonce/internal/inflate"
)

func gz(t *testing.T, b []byte) []byte {
	t.Helper()
	var buf bytes.Buffer
	w := gzip.NewWriter(&buf)
	if _, err := w.Write(b); err != nil {
		t.Fatal(err)
	}
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
	return buf.Bytes()
}

func TestGunzip(t *testing.T) {
	in := bytes.Repeat([]byte("a"), 1000)
	if out, err := inflate.Gunzip(gz(t, in), 1000); err != nil || !bytes.Equal(out, in) {
		t.Errorf("at the limit: %d bytes, %v; want the 1000 bytes", len(out), err)
	}
	if _, err := inflate.Gunzip(gz(t, in), 999); err == nil || !strings.Contains(err.Error(), "more than 999 bytes") {
		t.Errorf("past the limit: %v, want an error naming it", err)
	}
	if _, err := inflate.Gunzip([]byte("not gzip"), 1000); err == nil {
		t.Error("not gzip: no error")
	}
}
