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

func TestGunzipMember(t *testing.T) {
	in := bytes.Repeat([]byte("a"), 1000)
	one := gz(t, in)
	if out, err := inflate.GunzipMember(one, 1000); err != nil || !bytes.Equal(out, in) || cap(out) != 1001 {
		t.Errorf("one member at the limit: %d bytes (capacity %d), %v; want the 1000 bytes in one allocation of 1001", len(out), cap(out), err)
	}
	if _, err := inflate.GunzipMember(one, 999); !inflate.IsTooLarge(err) {
		t.Errorf("past the limit: %v, want IsTooLarge", err)
	}
	two := append(append([]byte(nil), one...), gz(t, in)...)
	if out, err := inflate.Gunzip(two, 2000); err != nil || len(out) != 2000 {
		t.Errorf("Gunzip of two members: %d bytes, %v; want both", len(out), err)
	}
	for name, z := range map[string][]byte{
		"two members":    two,
		"trailing bytes": append(append([]byte(nil), one...), 0),
		"truncated":      one[:len(one)-3],
		"not gzip":       []byte("not gzip"),
	} {
		if out, err := inflate.GunzipMember(z, 4000); err == nil || inflate.IsTooLarge(err) {
			t.Errorf("%s: %d bytes, %v; want an error other than the limit's", name, len(out), err)
		}
	}
	// A trailer announcing more than the limit costs no more than the limit.
	lying := append([]byte(nil), one...)
	copy(lying[len(lying)-4:], []byte{0xff, 0xff, 0xff, 0x7f})
	if _, err := inflate.GunzipMember(lying, 1<<20); err == nil {
		t.Error("a member whose trailer lies about its size: no error")
	}
}
