// Command invoke runs a function's bootstrap, built for this machine, under
// the AWS Lambda Runtime Interface Emulator, without Docker, and invokes it
// N times with one event file: what make invoke runs.
//
//	go run ./tools/invoke [-n 2] [-env-vars FILE] [-function SummariseFunction] [-rie PATH] BOOTSTRAP EVENT
//
// EVENT is a Lambda event, as `sam local invoke -e` takes it (events/ holds
// SQS events). FILE is the file `sam local invoke --env-vars` takes:
// {"Parameters": {...}, "SummariseFunction": {...}}; "Parameters" applies to
// every function, the function's own entry overrides it. SAM sets only the
// variables the template declares for the function; invoke, which has no
// template, sets every one.
//
// The environment, later sources winning: the local defaults
// (SQSONCE_STORE=memory, SQSONCE_PROVIDER=stub, SQSONCE_DOCUMENTS_DIR=
// samples/documents unless a SQSONCE_DOCUMENTS_BUCKET is given, and a
// request log in a temporary file), then this process's SQSONCE_*, AWS_*
// and OPENAI_* variables, then FILE. The emulator's timeout is 300 s, its
// own default, above SQSONCE_MIN_REMAINING (default 90 s). After the
// invocations it prints "invocations: N, provider calls: M", counted in
// the request log.
package main

import (
	"bufio"
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/sqsonce/sqsonce/internal/testenv/rie"
)

func main() {
	if err := run(os.Args[1:], os.Environ(), os.Stdout); err != nil {
		fmt.Fprintln(os.Stderr, "invoke:", err)
		os.Exit(1)
	}
}

// timeout is the emulator's invocation timeout.
const timeout = 300 * time.Second

func run(args, environ []string, stdout io.Writer) error {
	fs := flag.NewFlagSet("invoke", flag.ContinueOnError)
	n := fs.Int("n", 2, "how many times to invoke")
	envVars := fs.String("env-vars", "", "a `sam local invoke --env-vars` file")
	function := fs.String("function", "SummariseFunction", "the function's logical id in the env-vars file")
	riePath := fs.String("rie", "", "the aws-lambda-rie binary (default: $SQSONCE_RIE, PATH, $GOPATH/bin)")
	if err := fs.Parse(args); err != nil {
		return err
	}
	if fs.NArg() != 2 || *n < 1 {
		return errors.New("usage: invoke [-n N] [-env-vars FILE] [-function ID] [-rie PATH] BOOTSTRAP EVENT")
	}
	bootstrap, eventFile := fs.Arg(0), fs.Arg(1)
	event, err := os.ReadFile(eventFile)
	if err != nil {
		return err
	}
	var fileVars map[string]string
	if *envVars != "" {
		f, err := os.Open(*envVars)
		if err != nil {
			return err
		}
		fileVars, err = rie.ReadEnvVars(f, *function)
		f.Close()
		if err != nil {
			return fmt.Errorf("%s: %w", *envVars, err)
		}
	}
	if *riePath == "" {
		if *riePath, err = rie.Find(); err != nil {
			return err
		}
	}
	tmp, err := os.MkdirTemp("", "invoke-")
	if err != nil {
		return err
	}
	defer os.RemoveAll(tmp)
	docs, err := filepath.Abs("samples/documents")
	if err != nil {
		return err
	}
	env := environment(map[string]string{
		"SQSONCE_STORE":         "memory",
		"SQSONCE_PROVIDER":      "stub",
		"SQSONCE_DOCUMENTS_DIR": docs,
		"SQSONCE_REQUEST_LOG":   filepath.Join(tmp, "requests.jsonl"),
	}, environ, fileVars)
	before := lines(env["SQSONCE_REQUEST_LOG"])

	fn, err := rie.Start(rie.Config{RIE: *riePath, Bootstrap: bootstrap, Env: env, Timeout: timeout, FunctionName: *function})
	if err != nil {
		return err
	}
	defer fn.Close()
	ctx := context.Background()
	for range *n {
		out, err := fn.Call(ctx, event)
		if err != nil {
			return fmt.Errorf("%w\nfunction output:\n%s", err, fn.Output())
		}
		fmt.Fprintln(stdout, strings.TrimSpace(string(out)))
	}
	fmt.Fprintf(stdout, "invocations: %d, provider calls: %d\n", *n, lines(env["SQSONCE_REQUEST_LOG"])-before)
	return nil
}

// environment merges the defaults, the process's SQSONCE_*, AWS_* and
// OPENAI_* variables and the env-vars file's, later ones winning. The
// default documents folder gives way to a bucket from either of the others.
func environment(defaults map[string]string, environ []string, fileVars map[string]string) map[string]string {
	env := map[string]string{}
	for k, v := range defaults {
		env[k] = v
	}
	for _, kv := range environ {
		k, v, ok := strings.Cut(kv, "=")
		if ok && (strings.HasPrefix(k, "SQSONCE_") || strings.HasPrefix(k, "AWS_") || strings.HasPrefix(k, "OPENAI_")) {
			env[k] = v
		}
	}
	for k, v := range fileVars {
		env[k] = v
	}
	if env["SQSONCE_DOCUMENTS_BUCKET"] != "" && env["SQSONCE_DOCUMENTS_DIR"] == defaults["SQSONCE_DOCUMENTS_DIR"] {
		delete(env, "SQSONCE_DOCUMENTS_DIR")
	}
	return env
}

// lines counts the lines of a file, zero if it does not exist.
func lines(path string) int {
	f, err := os.Open(path)
	if err != nil {
		return 0
	}
	defer f.Close()
	n := 0
	sc := bufio.NewScanner(f)
	sc.Buffer(make([]byte, 0, 64<<10), 1<<20)
	for sc.Scan() {
		n++
	}
	return n
}
