// Command mkzip writes a Lambda deployment package: a zip holding one
// executable at its root. It exists so that `make build` needs nothing but Go.
//
//	go run ./tools/mkzip -o build/bootstrap.zip build/bootstrap
package main

import (
	"archive/zip"
	"flag"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"time"
)

func main() {
	out := flag.String("o", "", "the zip file to write")
	flag.Parse()
	if *out == "" || flag.NArg() != 1 {
		fmt.Fprintln(os.Stderr, "usage: mkzip -o package.zip executable")
		os.Exit(2)
	}
	if err := write(*out, flag.Arg(0)); err != nil {
		fmt.Fprintln(os.Stderr, "mkzip:", err)
		os.Exit(1)
	}
}

func write(out, exe string) error {
	in, err := os.Open(exe)
	if err != nil {
		return err
	}
	defer in.Close()
	f, err := os.Create(out)
	if err != nil {
		return err
	}
	zw := zip.NewWriter(f)
	h := &zip.FileHeader{Name: filepath.Base(exe), Method: zip.Deflate}
	h.SetMode(0o755)                                         // Lambda runs the file: it must be executable
	h.Modified = time.Date(2020, 1, 1, 0, 0, 0, 0, time.UTC) // reproducible: same binary, same zip
	w, err := zw.CreateHeader(h)
	if err == nil {
		_, err = io.Copy(w, in)
	}
	if cerr := zw.Close(); err == nil {
		err = cerr
	}
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	return err
}
