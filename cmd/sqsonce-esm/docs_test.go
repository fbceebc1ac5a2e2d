//go:build unix

package main

import (
	"bufio"
	"bytes"
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/sqsonce/sqsonce/internal/testenv/esm"
	"github.com/sqsonce/sqsonce/internal/testenv/rie"
	"github.com/sqsonce/sqsonce/internal/testenv/testproc"
)

const (
	page     = "../../docs/deploy-local.md"
	makefile = "../../infra/Makefile"
)

// block is a shell block of the page and the marker before it.
type block struct {
	marker string // "run: …" or "not run here: …"
	text   string
	line   int
}

var markerRE = regexp.MustCompile(`^<!-- (run: .+|not run here: .+) -->$`)

// blocks returns the page's ```sh blocks; every one must follow a marker
// that says whether TestDeployLocalPage runs it, or why not.
func blocks(t *testing.T) []block {
	t.Helper()
	b, err := os.ReadFile(page)
	if err != nil {
		t.Fatal(err)
	}
	var out []block
	var marks []string
	sc := bufio.NewScanner(bytes.NewReader(b))
	for n := 1; sc.Scan(); n++ {
		l := sc.Text()
		if strings.HasPrefix(l, "```") && strings.TrimPrefix(l, "```") != "" {
			if lang := strings.TrimPrefix(l, "```"); lang != "sh" {
				t.Errorf("%s:%d: a %q block; shell blocks are ```sh", page, n, lang)
			}
			bl := block{line: n}
			// The marks stand on the comment lines just before the
			// fence (the docs test's <!-- sh: … --> may stand beside
			// this test's own).
			for _, c := range marks {
				if m := markerRE.FindStringSubmatch(c); m != nil {
					bl.marker = m[1]
				}
			}
			if bl.marker == "" {
				t.Errorf("%s:%d: a shell block without a <!-- run: … --> or <!-- not run here: … --> line before it", page, n)
			}
			var text []string
			for sc.Scan() {
				n++
				if sc.Text() == "```" {
					break
				}
				text = append(text, sc.Text())
			}
			bl.text = strings.Join(text, "\n") + "\n"
			out = append(out, bl)
		}
		switch {
		case strings.HasPrefix(l, "<!--"):
			marks = append(marks, l)
		case strings.TrimSpace(l) != "":
			marks = nil
		}
	}
	return out
}

// The page's cdk commands are the ones make deploy-local runs: infra's
// Makefile's pinned CLI version and its flags for moto.
func TestDeployLocalPageFlags(t *testing.T) {
	mk, err := os.ReadFile(makefile)
	if err != nil {
		t.Fatal(err)
	}
	vars := map[string]string{}
	for _, l := range strings.Split(string(mk), "\n") {
		if name, value, ok := strings.Cut(l, ":="); ok && !strings.ContainsAny(strings.TrimSpace(name), " \t#") {
			vars[strings.TrimSpace(name)] = strings.TrimSpace(value)
		}
		if name, value, ok := strings.Cut(strings.TrimPrefix(l, "export "), " := "); ok && strings.HasPrefix(l, "export ") {
			vars[name] = strings.TrimSpace(value)
		}
	}
	for _, name := range []string{"CDK_VERSION", "LOCAL_DEPLOY_FLAGS", "LOCAL_DESTROY_FLAGS", "AWS_ENDPOINT_URL_S3_FOR_CLOUDFORMATION"} {
		if vars[name] == "" {
			t.Fatalf("%s sets no %s", makefile, name)
		}
	}
	b, err := os.ReadFile(page)
	if err != nil {
		t.Fatal(err)
	}
	text := string(b)
	cdk := "npx aws-cdk@" + vars["CDK_VERSION"]
	for _, want := range []string{
		cdk + " deploy " + vars["LOCAL_DEPLOY_FLAGS"] + "\n",
		cdk + " destroy " + vars["LOCAL_DESTROY_FLAGS"],
		cdk + " bootstrap aws://123456789012/us-east-1\n",
		"export AWS_ENDPOINT_URL_S3_FOR_CLOUDFORMATION=http://localhost:5000\n",
	} {
		if !strings.Contains(text, want) {
			t.Errorf("%s does not say %q (from %s)", page, want, makefile)
		}
	}
	for _, flag := range strings.Fields(vars["LOCAL_DEPLOY_FLAGS"]) {
		if !strings.HasPrefix(flag, "--") {
			continue // a flag's value
		}
		if !strings.Contains(text, "- `"+flag) {
			t.Errorf("%s does not explain %s", page, flag)
		}
	}
}

// The page's blocks marked "run" run, in order, in one shell, against a
// queue on moto_server standing for the stack's: the function under the
// emulator gets the message and sqsonce-esm deletes it.
func TestDeployLocalPage(t *testing.T) {
	awsEnv(t)
	riePath, err := rie.Find()
	if err != nil {
		testproc.Unavailable(t, "rie", err, rie.Install)
	}
	if _, err := exec.LookPath("aws"); err != nil {
		testproc.Unavailable(t, "aws", err, "install the AWS CLI (pip install awscli)")
	}
	endpoint := moto.Endpoint(t)
	client := esm.SQSClient(t, moto)
	// A short visibility timeout: a record the function missed while the
	// emulator was starting comes back within --idle.
	q := esm.NewQueue(t, client, map[string]string{"VisibilityTimeout": "2"})

	dir := t.TempDir()
	if err := os.WriteFile(filepath.Join(dir, "function.env"), []byte("SQSONCE_NAMESPACE=orders\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	ports := make([]string, 2)
	for i := range ports {
		p, err := testproc.FreePort()
		if err != nil {
			t.Fatal(err)
		}
		ports[i] = "127.0.0.1:" + strconv.Itoa(p)
	}
	subst := []struct{ old, new string }{
		{"http://127.0.0.1:5000", endpoint},
		{"http://localhost:5000", strings.Replace(endpoint, "127.0.0.1", "localhost", 1)},
		{"./cmd/myfunction", "./cmd/sqsonce-esm/testdata/fn"},
		{"127.0.0.1:8080", ports[0]},
		{"127.0.0.1:9001", ports[1]},
		{"build/host/bootstrap", filepath.Join(dir, "bootstrap")},
		{"./function.env", filepath.Join(dir, "function.env")},
	}
	var script strings.Builder
	script.WriteString("set -euo pipefail\ncd ../..\n")
	ran := 0
	for _, b := range blocks(t) {
		if strings.HasPrefix(b.marker, "run: ") {
			script.WriteString(b.text)
			ran++
		}
	}
	text := script.String()
	// The page installs the tool from the checkout, as a user of it does.
	if !strings.Contains(text, "go install ./cmd/sqsonce-esm") {
		t.Error("the page's run blocks no longer install the tool from the checkout")
	}
	for _, s := range subst {
		if !strings.Contains(text, s.old) {
			t.Errorf("the page's run blocks no longer hold %q, which the test replaces", s.old)
		}
		text = strings.ReplaceAll(text, s.old, s.new)
	}
	if ran == 0 || t.Failed() {
		t.Fatalf("%d blocks to run", ran)
	}

	// The output goes to a file, not a pipe: the emulator the page starts
	// in the background would hold a pipe open after the shell exits.
	outFile, err := os.Create(filepath.Join(dir, "output"))
	if err != nil {
		t.Fatal(err)
	}
	defer outFile.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, "bash", "-c", text)
	// The shell, and what it starts in the background (it has no job
	// control: the same process group), are killed together.
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	cmd.Cancel = func() error { return syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL) }
	cmd.Stdout, cmd.Stderr = outFile, outFile
	cmd.Env = append(os.Environ(),
		"QUEUE_URL="+q.URL,
		"GOBIN="+filepath.Join(dir, "bin"),
		"PATH="+filepath.Join(dir, "bin")+string(os.PathListSeparator)+filepath.Dir(riePath)+string(os.PathListSeparator)+os.Getenv("PATH"),
	)
	err = cmd.Run()
	if cmd.Process != nil {
		_ = syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL) // the emulator and its function
	}
	out, rerr := os.ReadFile(outFile.Name())
	if rerr != nil {
		t.Fatal(rerr)
	}
	if err != nil {
		t.Fatalf("the page's commands: %v\n%s\nscript:\n%s", err, out, text)
	}
	log := string(out)
	if len(lines(log, "acknowledged and deleted")) != 1 || len(lines(log, "stopped", "records=", "deleted=1", "left_on_queue=0")) != 1 {
		t.Errorf("want one record acknowledged and deleted, none left; output:\n%s", log)
	}
	if got := drain(t, client, q); len(got) != 0 {
		t.Errorf("the queue still holds %d messages", len(got))
	}
	if strings.Contains(log, "amount_cents") {
		t.Errorf("the output quotes the message:\n%s", log)
	}
}
