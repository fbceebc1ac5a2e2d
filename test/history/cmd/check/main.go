// Command check reads the history files of one run and verifies the
// promise's properties on them (package history): it prints a verdict
// table and the first violating events of each violated property, and
// exits 1 when a property was violated, 2 when the files could not be read.
//
//	go run ./test/history/cmd/check [-show N] FILE|DIR...
//
// A directory stands for the *.jsonl files in it.
package main

import (
	"flag"
	"fmt"
	"io"
	"os"

	"github.com/sqsonce/sqsonce/test/history"
)

func main() { os.Exit(run(os.Args[1:], os.Stdout, os.Stderr)) }

func run(args []string, stdout, stderr io.Writer) int {
	fs := flag.NewFlagSet("check", flag.ContinueOnError)
	fs.SetOutput(stderr)
	show := fs.Int("show", 3, "violations shown per property")
	fs.Usage = func() {
		fmt.Fprintln(stderr, "usage: check [-show N] FILE|DIR...")
		fs.PrintDefaults()
	}
	if err := fs.Parse(args); err != nil {
		return 2
	}
	if fs.NArg() == 0 {
		fs.Usage()
		return 2
	}
	h, err := history.ReadFiles(fs.Args()...)
	if err != nil {
		fmt.Fprintln(stderr, "check:", err)
		return 2
	}
	v := history.Check(h)
	if err := v.Write(stdout, *show); err != nil {
		fmt.Fprintln(stderr, "check:", err)
		return 2
	}
	if v.Failed() {
		return 1
	}
	return 0
}
