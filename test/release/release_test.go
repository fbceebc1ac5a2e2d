// Package release_test tests the release path (issue 34): it lays every
// module of the tree out as a module proxy on disk, in the zip format of
// golang.org/x/mod/zip, and from fresh modules outside the repository,
// with no replace directive and no workspace, runs `go get` of the library
// from that proxy, builds the README's own function (and, with
// SQSONCE_RELEASE_CDK=1, the README's CDK app: make release-check) and
// counts what `go list -m all` gives each kind of user.
package release_test

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"io/fs"
	"os"
	"os/exec"
	"path"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"golang.org/x/mod/modfile"
	"golang.org/x/mod/module"
	"golang.org/x/mod/semver"
	"golang.org/x/mod/zip"

	"github.com/sqsonce/sqsonce/internal/testenv/workspace"
)

const (
	// release is the version every go.mod of the tree requires its
	// sibling modules at: the release being prepared.
	release = "v0.10.0"
	// lib is the root module's path; every module of the tree is under it.
	lib = "github.com/sqsonce/sqsonce"
	// maxDynamoUser is issue 34's ceiling on `go list -m all` for a user of
	// idempotency, dynamostore and batch.
	maxDynamoUser = 26
)

// memFile is a zip.File whose content is in memory: a module's go.mod as
// the proxy serves it.
type memFile struct {
	name string
	data []byte
}

func (f memFile) Path() string                 { return f.name }
func (f memFile) Lstat() (os.FileInfo, error)  { return memInfo(f), nil }
func (f memFile) Open() (io.ReadCloser, error) { return io.NopCloser(bytes.NewReader(f.data)), nil }

type memInfo memFile

func (i memInfo) Name() string       { return path.Base(i.name) }
func (i memInfo) Size() int64        { return int64(len(i.data)) }
func (i memInfo) Mode() fs.FileMode  { return 0o644 }
func (i memInfo) ModTime() time.Time { return time.Time{} }
func (i memInfo) IsDir() bool        { return false }
func (i memInfo) Sys() any           { return nil }

// diskFile is a zip.File read from the tree.
type diskFile struct{ name, abs string }

func (f diskFile) Path() string                 { return f.name }
func (f diskFile) Lstat() (os.FileInfo, error)  { return os.Lstat(f.abs) }
func (f diskFile) Open() (io.ReadCloser, error) { return os.Open(f.abs) }

// proxy is a module proxy on disk holding every module of the tree at one
// version.
type proxy struct {
	dir     string   // the GOPROXY directory
	version string   // the version every module has in it
	modules []string // the module paths it serves
}

// buildProxy lays out every module of the tree (its files as git would
// commit them: tracked and untracked, not ignored; a nested module's files
// belong to it alone) at a version of its own, unique to this run, so
// that the shared module cache never hands back another tree's copy; every
// requirement on a sibling module must name the release and is rewritten to
// that version. The test's modules leave the shared module cache as they
// found it.
func buildProxy(t *testing.T, root string) proxy {
	t.Helper()
	out, err := exec.Command("git", "-C", root, "ls-files", "-z", "--cached", "--others", "--exclude-standard").Output()
	if err != nil {
		t.Fatalf("git ls-files: %v", err)
	}
	var files []string
	for _, f := range strings.Split(string(out), "\x00") {
		if f == "" {
			continue
		}
		if fi, err := os.Lstat(filepath.Join(root, f)); err != nil || !fi.Mode().IsRegular() {
			continue // deleted in the work tree, or a symlink the zip format refuses
		}
		files = append(files, f)
	}
	p := proxy{
		dir:     t.TempDir(),
		version: fmt.Sprintf("%s-releasetest.%s.%d", release, time.Now().UTC().Format("20060102150405"), os.Getpid()),
	}
	for _, gomod := range files {
		if path.Base(gomod) != "go.mod" {
			continue
		}
		dir := path.Dir(gomod)
		data, err := os.ReadFile(filepath.Join(root, gomod))
		if err != nil {
			t.Fatal(err)
		}
		f, err := modfile.Parse(gomod, data, nil)
		if err != nil {
			t.Fatal(err)
		}
		modPath := f.Module.Mod.Path
		if modPath != lib && !strings.HasPrefix(modPath, lib+"/") {
			continue // an example module of the docs' own (test/ownfunction/stack)
		}
		siblings, bad := siblingRequires(f)
		for _, b := range bad {
			t.Errorf("%s: %s", gomod, b)
		}
		for _, s := range siblings {
			if err := f.AddRequire(s, p.version); err != nil {
				t.Fatal(err)
			}
		}
		mod, err := f.Format()
		if err != nil {
			t.Fatal(err)
		}
		zfiles := []zip.File{memFile{"go.mod", mod}}
		prefix := dir + "/"
		for _, name := range files {
			rel := name
			if dir != "." {
				if !strings.HasPrefix(name, prefix) {
					continue
				}
				rel = strings.TrimPrefix(name, prefix)
			}
			if rel != "go.mod" {
				zfiles = append(zfiles, diskFile{rel, filepath.Join(root, name)})
			}
		}
		esc, err := module.EscapePath(modPath)
		if err != nil {
			t.Fatal(err)
		}
		vdir := filepath.Join(p.dir, esc, "@v")
		if err := os.MkdirAll(vdir, 0o755); err != nil {
			t.Fatal(err)
		}
		info, _ := json.Marshal(map[string]any{"Version": p.version, "Time": time.Now().UTC().Format(time.RFC3339)})
		for name, b := range map[string][]byte{"list": []byte(p.version + "\n"), p.version + ".info": info, p.version + ".mod": mod} {
			if err := os.WriteFile(filepath.Join(vdir, name), b, 0o644); err != nil {
				t.Fatal(err)
			}
		}
		zf, err := os.Create(filepath.Join(vdir, p.version+".zip"))
		if err != nil {
			t.Fatal(err)
		}
		if err := zip.Create(zf, module.Version{Path: modPath, Version: p.version}, zfiles); err != nil {
			t.Fatalf("zip of %s: %v", modPath, err)
		}
		if err := zf.Close(); err != nil {
			t.Fatal(err)
		}
		p.modules = append(p.modules, modPath)
	}
	if len(p.modules) < 2 {
		t.Fatalf("the tree has %d modules under %s: the proxy would test nothing", len(p.modules), lib)
	}
	return p
}

// siblingRequires returns the modules of the tree f requires, and a
// complaint for each required at another version than the release.
func siblingRequires(f *modfile.File) (siblings, bad []string) {
	for _, r := range f.Require {
		if r.Mod.Path == lib || strings.HasPrefix(r.Mod.Path, lib+"/") {
			if r.Mod.Version != release {
				bad = append(bad, fmt.Sprintf("requires %s at %s, not at the release %s: a user would get that version", r.Mod.Path, r.Mod.Version, release))
			}
			siblings = append(siblings, r.Mod.Path)
		}
	}
	return siblings, bad
}

// TestSiblingRequires: a go.mod that requires a sibling module at the zero
// pseudo-version (what go mod tidy writes for a replaced module) is refused,
// one at the release is not.
func TestSiblingRequires(t *testing.T) {
	const gomod = "module " + lib + "/middleware/oteltrace\n\ngo 1.26.0\n\nrequire (\n\t" + lib + " " + release +
		"\n\t" + lib + "/middleware/idempotency/dynamostore v0.0.0-00010101000000-000000000000\n\tgithub.com/aws/aws-lambda-go v1.55.1\n)\n"
	f, err := modfile.Parse("go.mod", []byte(gomod), nil)
	if err != nil {
		t.Fatal(err)
	}
	siblings, bad := siblingRequires(f)
	if len(siblings) != 2 {
		t.Errorf("siblings %q, want the root and dynamostore", siblings)
	}
	if len(bad) != 1 || !strings.Contains(bad[0], "dynamostore at v0.0.0-") {
		t.Errorf("complaints %q, want one, on dynamostore's pseudo-version", bad)
	}
}

// TestReleaseIsNew: the version the tree's go.mod files require their
// siblings at is the release being prepared: later than every release
// CHANGELOG.md records (a published tag cannot be cut again, and siblings at
// an earlier release would select its old API), and the version
// docs/development.md's release steps name.
func TestReleaseIsNew(t *testing.T) {
	root := workspace.Root(t)
	changelog, err := os.ReadFile(filepath.Join(root, "CHANGELOG.md"))
	if err != nil {
		t.Fatal(err)
	}
	if !semver.IsValid(release) {
		t.Fatalf("release %q is not a semantic version", release)
	}
	var released []string
	for line := range strings.Lines(string(changelog)) {
		if v, ok := strings.CutPrefix(strings.TrimSpace(line), "## "); ok {
			if f := strings.Fields(v); len(f) > 0 && semver.IsValid(f[0]) {
				released = append(released, f[0])
			}
		}
	}
	if len(released) == 0 {
		t.Fatal("CHANGELOG.md records no release (## vX.Y.Z)")
	}
	for _, v := range released {
		if semver.Compare(release, v) <= 0 {
			t.Errorf("release %s is not later than %s, which CHANGELOG.md records as released", release, v)
		}
	}
	dev, err := os.ReadFile(filepath.Join(root, "docs", "development.md"))
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(string(dev), "`"+release+"`") {
		t.Errorf("docs/development.md's release steps do not name %s", release)
	}
}

// goEnv is the environment of a user's go command: no workspace, the
// library from the test's proxy, then the third-party modules from the
// module proxies the environment names (never direct from version control)
// and, on any error from those or with none named, from the module cache's
// own download directory (as the tree's builds left them). The cache alone
// is not enough on a fresh machine: the tree's builds leave in it only what
// they compiled, while a user's go mod tidy also wants the modules of other
// platforms' imports (golang.org/x/sys/windows under the OpenTelemetry
// SDK), and a version list the cache holds answers a query with a version
// whose zip it lacks (go mod tidy then found no module for the SDK).
func goEnv(t *testing.T, p proxy) []string {
	t.Helper()
	out, err := exec.Command("go", "env", "GOMODCACHE", "GOPROXY").Output()
	if err != nil {
		t.Fatalf("go env GOMODCACHE GOPROXY: %v", err)
	}
	lines := strings.Split(strings.TrimSpace(string(out)), "\n")
	modcache := strings.TrimSpace(lines[0])
	goproxy := "file://" + filepath.ToSlash(p.dir) + ","
	if len(lines) > 1 {
		for _, n := range networkProxies(lines[1]) {
			goproxy += n + "|"
		}
	}
	goproxy += "file://" + filepath.ToSlash(filepath.Join(modcache, "cache", "download"))
	t.Cleanup(func() {
		// The test's versions of the library in the shared module cache
		// (-modcacherw leaves them writable).
		for _, m := range p.modules {
			esc, _ := module.EscapePath(m)
			os.RemoveAll(filepath.Join(modcache, esc+"@"+p.version))
			for _, ext := range []string{".info", ".mod", ".zip", ".ziphash", ".lock", ".partial"} {
				os.Remove(filepath.Join(modcache, "cache", "download", esc, "@v", p.version+ext))
			}
		}
		esc, _ := module.EscapePath(lib)
		pruneCache(filepath.Join(modcache, esc))
		pruneCache(filepath.Join(modcache, "cache", "download", esc))
	})
	return append(os.Environ(),
		"GOWORK=off",
		"GOFLAGS=-mod=mod -modcacherw -buildvcs=false",
		"GOTOOLCHAIN=local",
		"GOPROXY="+goproxy,
		"GOSUMDB=off",
		"GONOSUMDB="+lib,
		"GONOSUMCHECK=1",
		"GOPRIVATE=",
		"GONOPROXY=",
	)
}

// networkProxies returns the module proxies of a GOPROXY value, in order,
// without "direct" and "off" (the library's test versions must come from
// the test's proxy, never from version control) and without its
// separators: the caller says how each falls through to the next.
func networkProxies(goproxy string) []string {
	var out []string
	for _, e := range strings.FieldsFunc(goproxy, func(r rune) bool { return r == ',' || r == '|' }) {
		if e = strings.TrimSpace(e); e != "" && e != "direct" && e != "off" {
			out = append(out, e)
		}
	}
	return out
}

// pruneCache removes under dir (the library's part of the module cache)
// the version lists that name only test versions and the directories left
// empty, deepest first: the library is not in the cache outside this test.
func pruneCache(dir string) {
	var dirs []string
	filepath.WalkDir(dir, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return nil
		}
		if d.IsDir() {
			dirs = append(dirs, p)
		} else if d.Name() == "list" {
			if b, err := os.ReadFile(p); err == nil && onlyTestVersions(string(b)) {
				os.Remove(p)
			}
		}
		return nil
	})
	for i := len(dirs) - 1; i >= 0; i-- {
		os.Remove(dirs[i]) // fails, as it should, on a directory not empty
	}
	os.Remove(filepath.Dir(dir)) // github.com/sqsonce, when it holds nothing else
}

// onlyTestVersions reports whether every line of a version list names a
// test version.
func onlyTestVersions(list string) bool {
	for _, v := range strings.Fields(list) {
		if !strings.Contains(v, "-releasetest.") {
			return false
		}
	}
	return true
}

// user is a fresh module outside the repository.
type user struct {
	t   *testing.T
	dir string
	env []string
}

func newUser(t *testing.T, env []string, name, main string) *user {
	t.Helper()
	dir := t.TempDir()
	gomod := "module example.com/" + name + "\n\ngo 1.26.0\n"
	if err := os.WriteFile(filepath.Join(dir, "go.mod"), []byte(gomod), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, "main.go"), []byte(main), 0o644); err != nil {
		t.Fatal(err)
	}
	return &user{t: t, dir: dir, env: env}
}

func (u *user) goCmd(args ...string) string {
	u.t.Helper()
	cmd := exec.Command("go", args...)
	cmd.Dir = u.dir
	cmd.Env = u.env
	out, err := cmd.CombinedOutput()
	if err != nil {
		u.t.Fatalf("go %s: %v\n%s", strings.Join(args, " "), err, out)
	}
	return string(out)
}

// build runs go get of pkgs, go mod tidy and go build, checks that go.mod
// has no replace directive and requires the library at version, and
// returns `go list -m all` (-e: a module of the graph whose go.mod the
// build read but whose .info the module cache lacks is still counted).
func (u *user) build(version string, pkgs ...string) []string {
	u.t.Helper()
	get := []string{"get"}
	for _, p := range pkgs {
		get = append(get, p+"@"+version)
	}
	u.goCmd(get...)
	u.goCmd("mod", "tidy")
	u.goCmd("build", "-o", os.DevNull, ".")
	data, err := os.ReadFile(filepath.Join(u.dir, "go.mod"))
	if err != nil {
		u.t.Fatal(err)
	}
	f, err := modfile.Parse("go.mod", data, nil)
	if err != nil {
		u.t.Fatal(err)
	}
	if len(f.Replace) != 0 {
		u.t.Errorf("go.mod has a replace directive:\n%s", data)
	}
	for _, r := range f.Require {
		if strings.HasPrefix(r.Mod.Path, lib) && r.Mod.Version != version {
			u.t.Errorf("go.mod requires %s at %s, not %s", r.Mod.Path, r.Mod.Version, version)
		}
	}
	return strings.Fields(u.goCmd("list", "-m", "-e", "-f", "{{.Path}}", "all"))
}

// version returns the version of module m in the user's graph.
func (u *user) version(m string) string {
	u.t.Helper()
	return strings.TrimSpace(u.goCmd("list", "-m", "-f", "{{.Version}}", m))
}

// without reports every module of mods whose path starts with one of bad.
func without(t *testing.T, who string, mods []string, bad ...string) {
	t.Helper()
	for _, m := range mods {
		for _, b := range bad {
			if strings.HasPrefix(m, b) {
				t.Errorf("%s's go list -m all names %s", who, m)
			}
		}
	}
}

const dynamoUser = `package main

import (
	"context"
	"log"

	"github.com/aws/aws-lambda-go/events"
	"github.com/aws/aws-lambda-go/lambda"
	"github.com/aws/aws-sdk-go-v2/config"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"

	"github.com/sqsonce/sqsonce/middleware/batch"
	"github.com/sqsonce/sqsonce/middleware/idempotency"
	"github.com/sqsonce/sqsonce/middleware/idempotency/dynamostore"
)

func work(ctx context.Context, m events.SQSMessage) (string, error) { return m.MessageId, nil }

func main() {
	cfg, err := config.LoadDefaultConfig(context.Background())
	if err != nil {
		log.Fatal(err)
	}
	store, err := dynamostore.New(dynamodb.NewFromConfig(cfg), "idempotency")
	if err != nil {
		log.Fatal(err)
	}
	g, err := idempotency.New(idempotency.Config{Store: store, Namespace: "orders"})
	if err != nil {
		log.Fatal(err)
	}
	h := idempotency.Wrap(g, idempotency.BodyField("order_id"), work)
	lambda.StartHandlerFunc(batch.SQS(h, batch.Options{}))
}
`

const redisUser = `package main

import (
	"context"
	"log"

	"github.com/aws/aws-lambda-go/events"
	"github.com/aws/aws-lambda-go/lambda"
	"github.com/redis/go-redis/v9"

	"github.com/sqsonce/sqsonce/middleware/batch"
	"github.com/sqsonce/sqsonce/middleware/idempotency"
	"github.com/sqsonce/sqsonce/middleware/idempotency/redisstore"
)

func work(ctx context.Context, m events.SQSMessage) (string, error) { return m.MessageId, nil }

func main() {
	store, err := redisstore.New(context.Background(), redis.NewClient(&redis.Options{Addr: "127.0.0.1:6379"}))
	if err != nil {
		log.Fatal(err)
	}
	g, err := idempotency.New(idempotency.Config{Store: store, Namespace: "orders"})
	if err != nil {
		log.Fatal(err)
	}
	h := idempotency.Wrap(g, idempotency.BodyField("order_id"), work)
	lambda.StartHandlerFunc(batch.SQS(h, batch.Options{}))
}
`

const pgUser = `package main

import (
	"context"
	"log"

	"github.com/aws/aws-lambda-go/events"
	"github.com/aws/aws-lambda-go/lambda"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/sqsonce/sqsonce/middleware/batch"
	"github.com/sqsonce/sqsonce/middleware/idempotency"
	"github.com/sqsonce/sqsonce/middleware/idempotency/pgstore"
)

func work(ctx context.Context, m events.SQSMessage) (string, error) { return m.MessageId, nil }

func main() {
	pool, err := pgxpool.New(context.Background(), "postgres://localhost:5432/app")
	if err != nil {
		log.Fatal(err)
	}
	store, err := pgstore.New(pool)
	if err != nil {
		log.Fatal(err)
	}
	g, err := idempotency.New(idempotency.Config{Store: store, Namespace: "orders"})
	if err != nil {
		log.Fatal(err)
	}
	h := idempotency.Wrap(g, idempotency.BodyField("order_id"), work)
	lambda.StartHandlerFunc(batch.SQS(h, batch.Options{}))
}
`

// sqsUser uses batch with the dead-letter mover and the visibility changer
// on the SQS client, and no idempotency store.
const sqsUser = `package main

import (
	"context"
	"log"

	"github.com/aws/aws-lambda-go/events"
	"github.com/aws/aws-lambda-go/lambda"
	"github.com/aws/aws-sdk-go-v2/config"
	"github.com/aws/aws-sdk-go-v2/service/sqs"

	"github.com/sqsonce/sqsonce/middleware/batch"
	"github.com/sqsonce/sqsonce/middleware/batch/sqsdlq"
	"github.com/sqsonce/sqsonce/middleware/batch/sqsvisibility"
)

func work(ctx context.Context, m events.SQSMessage) (string, error) { return m.MessageId, nil }

func main() {
	cfg, err := config.LoadDefaultConfig(context.Background())
	if err != nil {
		log.Fatal(err)
	}
	client := sqs.NewFromConfig(cfg)
	mover, err := sqsdlq.New(client)
	if err != nil {
		log.Fatal(err)
	}
	changer, err := sqsvisibility.New(client)
	if err != nil {
		log.Fatal(err)
	}
	lambda.StartHandlerFunc(batch.SQS(work, batch.Options{
		DeadLetter: batch.DeadLetter{Mover: mover},
		Pacing:     batch.Pacing{Changer: changer},
	}))
}
`

// otelUser traces with oteltrace on memstore, with the SDK and no
// exporter of its own choosing yet.
const otelUser = `package main

import (
	"context"

	"github.com/aws/aws-lambda-go/events"
	"github.com/aws/aws-lambda-go/lambda"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"

	"github.com/sqsonce/sqsonce/middleware/batch"
	"github.com/sqsonce/sqsonce/middleware/idempotency"
	"github.com/sqsonce/sqsonce/middleware/idempotency/memstore"
	"github.com/sqsonce/sqsonce/middleware/oteltrace"
)

func work(ctx context.Context, m events.SQSMessage) (string, error) { return m.MessageId, nil }

func main() {
	tp := sdktrace.NewTracerProvider()
	cfg := oteltrace.Instrument(idempotency.Config{Store: memstore.New(), Namespace: "orders"}, oteltrace.WithTracerProvider(tp))
	g, err := idempotency.New(cfg)
	if err != nil {
		panic(err)
	}
	h := idempotency.Wrap(g, idempotency.BodyField("order_id"), work)
	lambda.StartHandlerFunc(oteltrace.SQS(h, batch.Options{}, oteltrace.WithTracerProvider(tp)))
}
`

// floorUser uses aws-lambda-go and the DynamoDB client alone: the fewest
// modules a DynamoDB-backed function can have.
const floorUser = `package main

import (
	"context"

	"github.com/aws/aws-lambda-go/events"
	"github.com/aws/aws-lambda-go/lambda"
	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/config"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
)

func main() {
	cfg, err := config.LoadDefaultConfig(context.Background())
	if err != nil {
		panic(err)
	}
	c := dynamodb.NewFromConfig(cfg)
	lambda.Start(func(ctx context.Context, e events.SQSEvent) error {
		_, err := c.DescribeTable(ctx, &dynamodb.DescribeTableInput{TableName: aws.String("idempotency")})
		return err
	})
}
`

// TestRelease: from fresh modules outside the repository, with no replace
// directive and no workspace, `go get` of the library at the release from
// a proxy built from the tree, and each user's `go list -m all`: the
// DynamoDB user (idempotency, dynamostore, batch) at most 26 modules and
// none of pgx, go-redis, porcupine or OpenTelemetry; the Redis user no pgx;
// the PostgreSQL user (pgstore) and the SQS user (sqsdlq, sqsvisibility)
// nothing of the other stores; the OpenTelemetry user (oteltrace) neither
// dynamostore nor an exporter or gRPC it did not choose; no user any module
// of the test harness (internal/testenv) nor gowebpki/jcs, the Redis and
// PostgreSQL users no DynamoDB client; the README's own function built
// as written, without the KMS client. The counts are printed with the
// floor: aws-lambda-go and the DynamoDB client alone.
func TestRelease(t *testing.T) {
	if raceEnabled {
		t.Skip("the release test builds modules outside the tree and gains nothing from -race: make test runs it without it (make release-check)")
	}
	if _, err := exec.LookPath("git"); err != nil {
		if os.Getenv("CI") != "" {
			t.Fatal("git is not installed: the release test lists the tree's files with git ls-files")
		}
		t.Skip("git is not installed: the release test lists the tree's files with git ls-files")
	}
	root, err := filepath.Abs("../..")
	if err != nil {
		t.Fatal(err)
	}
	start := time.Now()
	p := buildProxy(t, root)
	env := goEnv(t, p)
	t.Logf("proxy: %d modules at %s (%v)", len(p.modules), p.version, time.Since(start).Round(time.Millisecond))
	const idem, dyn, bat = lib + "/middleware/idempotency", lib + "/middleware/idempotency/dynamostore", lib + "/middleware/batch"

	start = time.Now()
	du := newUser(t, env, "dynamo", dynamoUser)
	dmods := du.build(p.version, idem, dyn, bat)
	if len(dmods) > maxDynamoUser {
		t.Errorf("the DynamoDB user's go list -m all has %d modules, want at most %d:\n%s", len(dmods), maxDynamoUser, strings.Join(dmods, "\n"))
	}
	without(t, "the DynamoDB user", dmods, "github.com/jackc/", "github.com/redis/go-redis", "github.com/anishathalye/porcupine", "go.opentelemetry.io")

	fu := newUser(t, env, "floor", floorUser)
	var pins []string
	for _, m := range []string{"github.com/aws/aws-lambda-go", "github.com/aws/aws-sdk-go-v2", "github.com/aws/aws-sdk-go-v2/config", "github.com/aws/aws-sdk-go-v2/service/dynamodb"} {
		pins = append(pins, m+"@"+du.version(m))
	}
	fu.goCmd(append([]string{"get"}, pins...)...)
	fu.goCmd("mod", "tidy")
	fu.goCmd("build", "-o", os.DevNull, ".")
	floor := strings.Fields(fu.goCmd("list", "-m", "-e", "-f", "{{.Path}}", "all"))

	ru := newUser(t, env, "redis", redisUser)
	rmods := ru.build(p.version, idem, lib+"/middleware/idempotency/redisstore", bat)
	without(t, "the Redis user", rmods, "github.com/jackc/", "github.com/anishathalye/porcupine", "go.opentelemetry.io")

	pu := newUser(t, env, "postgres", pgUser)
	pmods := pu.build(p.version, idem, lib+"/middleware/idempotency/pgstore", bat)
	without(t, "the PostgreSQL user", pmods, "github.com/redis/go-redis", "github.com/anishathalye/porcupine", "go.opentelemetry.io")

	su := newUser(t, env, "sqs", sqsUser)
	smods := su.build(p.version, bat, lib+"/middleware/batch/sqsdlq", lib+"/middleware/batch/sqsvisibility")
	without(t, "the SQS user", smods, "github.com/jackc/", "github.com/redis/go-redis", "github.com/anishathalye/porcupine", "go.opentelemetry.io")

	ou := newUser(t, env, "otel", otelUser)
	omods := ou.build(p.version, idem, bat, lib+"/middleware/oteltrace") // the SDK at the version oteltrace requires
	without(t, "the OpenTelemetry user", omods, "github.com/jackc/", "github.com/redis/go-redis", "github.com/anishathalye/porcupine",
		lib+"/middleware/idempotency/dynamostore", "go.opentelemetry.io/otel/exporters/", "google.golang.org/grpc")

	fn := newUser(t, env, "orders", workspace.READMEMain(t))
	fmods := fn.build(p.version, idem, bat, lib+"/middleware/lambdaenv")
	without(t, "the README's function", fmods, "github.com/jackc/", "github.com/redis/go-redis", "github.com/aws/aws-sdk-go-v2/service/kms", "github.com/anishathalye/porcupine", "go.opentelemetry.io")

	// The test harness and what only tests need are no user's: a library
	// module's tests that need them live where a user's graph does not
	// reach (see test/pgstore, test/dynamostore, test/format); no store
	// but dynamostore brings the DynamoDB client.
	for _, u := range []struct {
		who  string
		mods []string
	}{{"the DynamoDB user", dmods}, {"the Redis user", rmods}, {"the PostgreSQL user", pmods}, {"the SQS user", smods},
		{"the OpenTelemetry user", omods}, {"the README's function", fmods}} {
		without(t, u.who, u.mods, lib+"/internal/testenv", "github.com/gowebpki/jcs")
	}
	without(t, "the Redis user", rmods, "github.com/aws/aws-sdk-go-v2/service/dynamodb")
	without(t, "the PostgreSQL user", pmods, "github.com/aws/aws-sdk-go-v2/service/dynamodb")

	t.Logf("go list -m all: floor (aws-lambda-go + DynamoDB client) %d, DynamoDB user (idempotency, dynamostore, batch) %d (at most %d), Redis user %d, PostgreSQL user (idempotency, pgstore, batch) %d, SQS user (batch, sqsdlq, sqsvisibility) %d, OpenTelemetry user (oteltrace on memstore) %d, README's function %d (%v)",
		len(floor), len(dmods), maxDynamoUser, len(rmods), len(pmods), len(smods), len(omods), len(fmods), time.Since(start).Round(time.Millisecond))

	t.Run("CDKApp", func(t *testing.T) {
		if os.Getenv("SQSONCE_RELEASE_CDK") != "1" {
			t.Skip("SQSONCE_RELEASE_CDK=1 builds the README's CDK app against the release (make release-check, after make test-infra has built the CDK for Go: cold, its build takes about 9 minutes)")
		}
		main, err := os.ReadFile(filepath.Join(root, "test", "ownfunction", "stack", "main.go"))
		if err != nil {
			t.Fatal(err)
		}
		start := time.Now()
		app := newUser(t, env, "stack", string(main))
		amods := app.build(p.version, lib+"/infra/idempotentconsumer")
		without(t, "the CDK app", amods, "github.com/jackc/", "github.com/redis/go-redis", "github.com/anishathalye/porcupine", lib+"/internal/testenv")
		t.Logf("go list -m all: the README's CDK app %d (%v)", len(amods), time.Since(start).Round(time.Millisecond))
	})
}

// TestNetworkProxies: a user's go command falls through to the
// environment's module proxies, in order, and never to version control.
func TestNetworkProxies(t *testing.T) {
	for _, c := range []struct {
		in   string
		want []string
	}{
		{"https://proxy.golang.org,direct", []string{"https://proxy.golang.org"}},
		{"https://a.example|https://b.example,direct", []string{"https://a.example", "https://b.example"}},
		{"off", nil},
		{"direct", nil},
		{"", nil},
	} {
		if got := networkProxies(c.in); !slices.Equal(got, c.want) {
			t.Errorf("networkProxies(%q) = %q, want %q", c.in, got, c.want)
		}
	}
}
