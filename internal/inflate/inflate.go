// Package inflate decompresses gzip data that a message or a stored record
// carries, bounded: what a sender compressed is never inflated past a limit.
// Gzip is its inverse, for the stores and the sealer that compress results.
package inflate

import (
	"bytes"
	"compress/gzip"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"sync"
)

var gzipWriters = sync.Pool{New: func() any { return gzip.NewWriter(nil) }}

// Gzip is p gzip-compressed at the default level, with a writer reused
// from a pool.
func Gzip(p []byte) []byte {
	var buf bytes.Buffer
	buf.Grow(len(p)/2 + 64)
	zw := gzipWriters.Get().(*gzip.Writer)
	zw.Reset(&buf)
	_, _ = zw.Write(p) // writes to a bytes.Buffer do not fail
	_ = zw.Close()
	zw.Reset(nil)
	gzipWriters.Put(zw)
	return buf.Bytes()
}

// tooLarge is the error of data that inflates beyond the limit.
type tooLarge struct{ max int }

func (e tooLarge) Error() string { return fmt.Sprintf("more than %d bytes once inflated", e.max) }

// IsTooLarge reports whether err is Gunzip's or GunzipMember's error for
// data that inflates beyond the limit.
func IsTooLarge(err error) bool {
	var t tooLarge
	return errors.As(err, &t)
}

// Gunzip returns z decompressed (every gzip member of it), or an error
// when z is not gzip or inflates beyond max bytes.
func Gunzip(z []byte, max int) ([]byte, error) {
	r, err := gzip.NewReader(bytes.NewReader(z))
	if err != nil {
		return nil, err
	}
	return read(r, z, max)
}

// GunzipMember returns z decompressed when z is exactly one gzip member,
// with nothing after it, that inflates to at most max bytes; otherwise an
// error. It allocates the output once, sized by the member's trailer
// (bounded by max).
func GunzipMember(z []byte, max int) ([]byte, error) {
	br := bytes.NewReader(z)
	r, err := gzip.NewReader(br)
	if err != nil {
		return nil, err
	}
	r.Multistream(false)
	out, err := read(r, z, max)
	if err != nil {
		return nil, err
	}
	if br.Len() > 0 {
		return nil, errors.New("data after the gzip member")
	}
	return out, nil
}

// read reads r to its end into one buffer whose capacity is the size the
// gzip trailer of z announces, capped at max+1 (a trailer that lies only
// costs regrowths).
func read(r *gzip.Reader, z []byte, max int) ([]byte, error) {
	size := 512
	if len(z) >= 4 {
		size = int(min(uint64(binary.LittleEndian.Uint32(z[len(z)-4:])), uint64(max)) + 1)
	}
	buf := make([]byte, 0, size)
	for {
		if len(buf) == cap(buf) {
			buf = append(buf, 0)[:len(buf)]
		}
		n, err := r.Read(buf[len(buf):min(cap(buf), max+1)])
		buf = buf[:len(buf)+n]
		if len(buf) > max {
			return nil, tooLarge{max}
		}
		if err == io.EOF {
			return buf, nil
		}
		if err != nil {
			return nil, err
		}
	}
}
