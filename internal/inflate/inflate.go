// Package inflate decompresses gzip data that a message or a stored record
// carries, bounded: what a sender compressed is never inflated past a limit.
package inflate

import (
	"bytes"
	"compress/gzip"
	"fmt"
	"io"
)

// Gunzip returns z decompressed, or an error when z is not gzip or inflates
// beyond max bytes.
func Gunzip(z []byte, max int) ([]byte, error) {
	r, err := gzip.NewReader(bytes.NewReader(z))
	if err != nil {
		return nil, err
	}
	out, err := io.ReadAll(io.LimitReader(r, int64(max)+1))
	if err != nil {
		return nil, err
	}
	if len(out) > max {
		return nil, fmt.Errorf("more than %d bytes once inflated", max)
	}
	return out, nil
}
