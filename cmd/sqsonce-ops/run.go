package main

import (
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/aws/aws-lambda-go/events"

	"github.com/sqsonce/sqsonce/handler"
	"github.com/sqsonce/sqsonce/middleware/idempotency"
	"github.com/sqsonce/sqsonce/middleware/lambdaenv"
	"github.com/sqsonce/sqsonce/middleware/lambdaenv/envvars"
)

// Exit codes.
const (
	exitOK      = 0 // done (or, with --dry-run, would be done)
	exitFailed  = 1 // a store or queue call failed, or a fenced write was refused
	exitRefused = 2 // bad usage, or a table or record the configuration cannot read: nothing was written
)

// maxBody bounds a message body read by --body or --message: SQS's
// largest message is 256 KiB (1 MiB with extended payloads).
const maxBody = 1 << 20

// maxMessageFile bounds the file --message reads: a message of at most
// maxBody bytes (its attributes included) as JSON, each byte escaped to at
// most 6 (\u001f), with Lambda's other fields.
const maxMessageFile = 6*maxBody + 64<<10

// command is one subcommand.
type command interface {
	// flags adds the command's flags to fs.
	flags(fs *flag.FlagSet)
	// check reports every problem of the flags, without connecting.
	check() error
	// needsSQS reports whether the command calls SQS.
	needsSQS() bool
	// exec runs the command and returns the exit code.
	exec(ctx context.Context, o *ops) int
}

// commands are the subcommands by name, with their one-line help.
var commands = []struct {
	name, help string
	new        func() command
}{
	{"inspect", "show a record, by the request's key (--key), a message body (--body), the message as Lambda delivers it (--message) or its id (--id)", func() command { return &inspectCmd{} }},
	{"list", "list INPROGRESS records past their lease, and quarantined ones (--all: every INPROGRESS record)", func() command { return &listCmd{} }},
	{"release", "release an INPROGRESS record, fenced on the record as read (its owner, or none), so that the next delivery runs again", func() command { return &releaseCmd{} }},
	{"resolve", "complete an INPROGRESS record with a given result, fenced on the record as read (its owner, or none)", func() command { return &resolveCmd{} }},
	{"redrive", "move the dead-letter queue's messages back to their queue, at a bounded rate, after checking each key", func() command { return &redriveCmd{} }},
}

func usage(w io.Writer) {
	fmt.Fprintln(w, "usage: sqsonce-ops <command> [flags]   (sqsonce-ops <command> -h for its flags)")
	fmt.Fprintln(w, "commands:")
	for _, c := range commands {
		fmt.Fprintf(w, "  %-8s %s\n", c.name, c.help)
	}
	fmt.Fprintln(w, "exit codes: 0 done; 1 a call failed or a fenced write was refused; 2 bad usage, or records the configuration cannot read (nothing written)")
}

// invocation is a parsed command line.
type invocation struct {
	g   globals
	cmd command
}

// errHelp is parse's error for -h.
var errHelp = errors.New("help requested")

// parse parses args (global flags may come before or after the command)
// and checks them, without connecting to anything.
func parse(args []string, getenv func(string) string, stderr io.Writer) (*invocation, error) {
	g := defaults(getenv)
	gfs := flag.NewFlagSet("sqsonce-ops", flag.ContinueOnError)
	gfs.SetOutput(stderr)
	gfs.Usage = func() { usage(stderr); gfs.PrintDefaults() }
	g.register(gfs)
	if err := gfs.Parse(args); err != nil {
		if errors.Is(err, flag.ErrHelp) {
			return nil, errHelp
		}
		return nil, err
	}
	rest := gfs.Args()
	if len(rest) == 0 {
		usage(stderr)
		return nil, errors.New("no command")
	}
	var cmd command
	for _, c := range commands {
		if c.name == rest[0] {
			cmd = c.new()
		}
	}
	if cmd == nil {
		usage(stderr)
		return nil, fmt.Errorf("unknown command %q", rest[0])
	}
	fs := flag.NewFlagSet("sqsonce-ops "+rest[0], flag.ContinueOnError)
	fs.SetOutput(stderr)
	g.register(fs) // defaults: as the global flags left them
	cmd.flags(fs)
	if err := fs.Parse(rest[1:]); err != nil {
		if errors.Is(err, flag.ErrHelp) {
			return nil, errHelp
		}
		return nil, err
	}
	if fs.NArg() > 0 {
		return nil, fmt.Errorf("%s: unexpected argument %q (flags go before arguments; quote JSON values)", rest[0], fs.Arg(0))
	}
	tableFlag := false
	for _, f := range []*flag.FlagSet{gfs, fs} {
		f.Visit(func(f *flag.Flag) { tableFlag = tableFlag || f.Name == "table" })
	}
	if g.store == storePostgres && !tableFlag {
		g.table = "" // $SQSONCE_TABLE is the DynamoDB table; the app's PostgreSQL table is pgstore's default
	}
	if k, ok := cmd.(appKeyed); ok {
		k.setApp(appVar(getenv))
	}
	if err := errors.Join(g.check(), cmd.check()); err != nil {
		return nil, err
	}
	return &invocation{g: g, cmd: cmd}, nil
}

// runEnv is run with the environment read through getenv.
func runEnv(ctx context.Context, args []string, getenv func(string) string, stdout, stderr io.Writer) int {
	inv, err := parse(args, getenv, stderr)
	if errors.Is(err, errHelp) {
		return exitOK
	}
	if err != nil {
		fmt.Fprintln(stderr, "sqsonce-ops:", err)
		return exitRefused
	}
	o, err := open(ctx, inv.g, inv.cmd.needsSQS(), stdout, stderr)
	if err != nil {
		fmt.Fprintln(stderr, "sqsonce-ops:", err)
		return exitRefused
	}
	defer o.close()
	return inv.cmd.exec(ctx, o)
}

// selector names a record: by the request's key, a message body, the
// whole message, or its id.
type selector struct {
	key      string
	keyField string
	body     string
	message  string
	id       string
	tenant   string
	group    string
	app      string // the reference app's variable the environment sets (appVar), or ""
}

// appEnv are variables of the reference app's function (cmd/summarise)
// that infra/app.go sets on it and infra's construct sets on no other
// function. The app keys by handler.Key, which no key source spells (it
// refuses $SQSONCE_KEY): in its function's environment, one of these set,
// that key is the function's.
var appEnv = []string{"SQSONCE_PROVIDER", "SQSONCE_SUMMARIES_TABLE"}

// appVar returns the first variable of appEnv that getenv has, or "".
func appVar(getenv func(string) string) string {
	for _, name := range appEnv {
		if getenv(name) != "" {
			return name
		}
	}
	return ""
}

// appKeyed is a command that computes record ids from messages: parse
// tells it whether the environment is the reference app's function's
// (the name of the variable that says so, or "").
type appKeyed interface {
	setApp(name string)
}

func (c *inspectCmd) setApp(name string) { c.sel.app = name }
func (c *writeCmd) setApp(name string)   { c.sel.app = name }

func (s *selector) flags(fs *flag.FlagSet) {
	fs.StringVar(&s.key, "key", "", "the request's key: a string as it is (order-17), or a JSON value as the producer sends it (17, '\"17\"'); with a body:A,B key source, a JSON object of those fields")
	fs.StringVar(&s.keyField, "key-field", "", "the body field the key is in: names joined by dots, or a JSON array of names (default: --key-source; in the reference app's function environment, $"+appEnv[0]+" set, its key, "+handler.KeyField+" else the request's canonical subset; else --key, --body and --message are refused)")
	fs.StringVar(&s.body, "body", "", "a file holding the message body, or - for standard input")
	fs.StringVar(&s.message, "message", "", "a file holding the whole message, one SQS record as Lambda delivers it (messageId, body, attributes, messageAttributes; or an event of one record), or - for standard input: for a key source or tenancy that reads more than the body")
	fs.StringVar(&s.id, "id", "", "the record id, {namespace}#{digest}")
	fs.StringVar(&s.tenant, "tenant", "", "the invocation's tenant id, for a function in Lambda's tenant isolation mode: the id is scoped to it (idempotency.Guard.ScopedID)")
	fs.StringVar(&s.group, "group", "", "the message's MessageGroupId, for a function with --tenancy message-group (a fair queue's tenant): the id is scoped to it")
}

func (s *selector) check() error {
	n := 0
	for _, v := range []string{s.key, s.body, s.message, s.id} {
		if v != "" {
			n++
		}
	}
	var errs []error
	switch {
	case s.body != "" && s.message != "":
		errs = append(errs, errors.New("--body and --message both give the message: give one (--message holds the body and the attributes)"))
	case n != 1:
		errs = append(errs, errors.New("name the record with one of --key, --body, --message and --id"))
	}
	if s.keyField != "" {
		if _, err := keyPath(s.keyField); err != nil {
			errs = append(errs, err)
		}
	}
	if (s.tenant != "" || s.group != "") && s.id != "" {
		errs = append(errs, errors.New("--tenant and --group scope a key's or a message's id: --id names the record already"))
	}
	return errors.Join(errs...)
}

// keySource is how the tool takes a message's key: the function's key
// source (--key-source, $SQSONCE_KEY), --key-field, or, in the reference
// app's function environment, the app's.
type keySource struct {
	sel  idempotency.Selector
	kind string   // envvars.KeyBody, KeySubset or KeyJMESPath; "" for the reference app's
	path []string // where --key goes in a body: the field, or the app's
	name string   // the key source and where it was given, as the output names it
}

// keyFunc returns the key source: --key-field, or the function's
// (--key-source, $SQSONCE_KEY), or, with neither, the reference app's when
// app names the variable of its environment that is set (appVar). With
// none of them it fails: the tool never takes a key the function may not
// take, whose record id would show the function's record as absent.
func keyFunc(o *ops, field, app string) (keySource, error) {
	switch {
	case field != "" && o.g.keySource != "":
		return keySource{}, fmt.Errorf("--key-field and --key-source ($%s) both name the key: give one", envKey)
	case field != "":
		path, _ := keyPath(field) // checked
		return keySource{sel: idempotency.BodyField(path[0], path[1:]...), kind: envvars.KeyBody, path: path,
			name: "--key-field " + field}, nil
	case o.g.keySource != "":
		k, err := envvars.ParseKey(o.g.keySource)
		if err != nil {
			return keySource{}, fmt.Errorf("--key-source: %w", err)
		}
		sel, err := lambdaenv.Selector(k)
		if err != nil {
			return keySource{}, err
		}
		return keySource{sel: sel, kind: k.Kind, path: k.Path, name: fmt.Sprintf("%s (--key-source, $%s)", o.g.keySource, envKey)}, nil
	case app != "":
		return keySource{sel: handler.Key(), path: []string{handler.KeyField},
			name: fmt.Sprintf("the reference app's (handler.Key: %s, else the request's canonical subset; $%s is set)", handler.KeyField, app)}, nil
	}
	return keySource{}, errNoKeySource
}

// errNoKeySource is keyFunc's error without a key source.
var errNoKeySource = fmt.Errorf("no key source: give your function's selector as --key-source (its $%s, the construct's Props.KeySource: "+
	"body:order_id, body:a,b or jmespath:EXPR) or --key-field; "+
	"the reference app's key is taken only in its function's environment ($%s or $%s set)", envKey, appEnv[0], appEnv[1])

// resolve returns the record id the selector names, computed as the
// guard does (Guard.ID, with the configured namespace and format, and
// Guard.ScopedID with --tenant).
func (s *selector) resolve(o *ops, stdin io.Reader) (string, error) {
	if s.id != "" {
		return s.id, nil
	}
	// The input first: its errors do not depend on the key source.
	m := events.SQSMessage{MessageId: "sqsonce-ops"}
	var err error
	switch {
	case s.message != "":
		if m, err = readMessage(s.message, stdin); err != nil {
			return "", err
		}
	case s.key == "":
		b, err := readInput("--body", s.body, stdin, maxBody)
		if err != nil {
			return "", err
		}
		m.Body = string(b)
	}
	ks, err := keyFunc(o, s.keyField, s.app)
	if errors.Is(err, errNoKeySource) {
		return "", fmt.Errorf("%w; or name the record with --id (a selector of the function's own code has no key source)", err)
	}
	if err != nil {
		return "", err
	}
	if o.stderr != nil {
		fmt.Fprintf(o.stderr, "sqsonce-ops: key source: %s\n", ks.name)
	}
	if s.key != "" {
		switch ks.kind {
		case envvars.KeyJMESPath:
			return "", errors.New("--key: a JMESPath key source is evaluated on the message: give it with --message (or its body with --body)")
		case envvars.KeySubset:
			if !jsonValue(s.key) || !strings.HasPrefix(strings.TrimSpace(s.key), "{") {
				return "", errors.New("--key: with a body:A,B key source, give the fields as one JSON object, e.g. '{\"a\":1,\"b\":2}'")
			}
			m.Body = s.key
		default:
			b, err := bodyWith(ks.path, s.key)
			if err != nil {
				return "", err
			}
			m.Body = b
		}
	}
	k, err := idempotency.Select(ks.sel, m)
	if err != nil {
		return "", err
	}
	group := s.group
	if g := m.Attributes["MessageGroupId"]; s.message != "" && o.g.tenancy == envvars.TenancyMessageGroup {
		// The function scopes the id to the message's group, as messageID
		// does, and a message without one not at all.
		switch {
		case group != "" && g == "":
			return "", errors.New("--group: the message has no attributes.MessageGroupId, so the function does not scope its id: leave --group out")
		case group != "" && group != g:
			return "", errors.New("--group differs from the message's attributes.MessageGroupId, which scopes the function's id: give one")
		}
		group = g
	}
	switch o.g.tenancy {
	case envvars.TenancyOff:
		if s.tenant != "" || s.group != "" {
			return "", fmt.Errorf("--tenancy off ($%s): the function scopes no id, so --tenant and --group do not apply", envTenancy)
		}
	case envvars.TenancyMessageGroup:
	default:
		if s.group != "" {
			return "", fmt.Errorf("--group scopes an id only for a function with --tenancy %s ($%s)", envvars.TenancyMessageGroup, envTenancy)
		}
	}
	return o.guard.ScopedID(s.tenant, group, k)
}

// readInput reads the file name names (- for r), of at most limit bytes.
// Its errors name opt (the flag), never the content.
func readInput(opt, name string, r io.Reader, limit int) ([]byte, error) {
	if name != "-" {
		f, err := os.Open(name)
		if err != nil {
			return nil, fmt.Errorf("%s: %w", opt, err)
		}
		defer f.Close()
		r = f
	}
	b, err := io.ReadAll(io.LimitReader(r, int64(limit)+1))
	if err != nil {
		return nil, fmt.Errorf("%s: %w", opt, err)
	}
	if len(b) > limit {
		return nil, fmt.Errorf("%s: longer than %d bytes", opt, limit)
	}
	return b, nil
}

// lambdaRecord is --message's file: an SQS record as Lambda delivers it
// (events.SQSMessage's JSON), or an event holding one.
type lambdaRecord struct {
	events.SQSMessage
	Records []json.RawMessage `json:"Records"`
}

// readMessage reads --message: one SQS record as Lambda delivers it, or an
// event of exactly one. Its errors name fields, offsets and sizes, never
// the content (json's own quote values: a number, a character).
func readMessage(name string, stdin io.Reader) (events.SQSMessage, error) {
	b, err := readInput("--message", name, stdin, maxMessageFile)
	if err != nil {
		return events.SQSMessage{}, err
	}
	var rec lambdaRecord
	if err := decodeMessage(b, &rec); err != nil {
		return events.SQSMessage{}, err
	}
	if rec.Records != nil {
		if len(rec.Records) != 1 {
			return events.SQSMessage{}, fmt.Errorf("--message: an event of %d records: give one record", len(rec.Records))
		}
		var one lambdaRecord
		if err := decodeMessage(rec.Records[0], &one); err != nil {
			return events.SQSMessage{}, err
		}
		if one.Records != nil {
			return events.SQSMessage{}, errors.New("--message: its record holds Records: give one SQS record")
		}
		rec = one
	}
	m := rec.SQSMessage
	if m.Body == "" {
		return events.SQSMessage{}, errors.New("--message: no body: give one SQS record as Lambda delivers it (messageId, body, attributes, messageAttributes); a message body alone goes to --body")
	}
	if len(m.Body) > maxBody {
		return events.SQSMessage{}, fmt.Errorf("--message: its body is longer than %d bytes", maxBody)
	}
	return m, nil
}

// decodeMessage decodes b into rec, with an error that quotes nothing of b.
func decodeMessage(b []byte, rec *lambdaRecord) error {
	err := json.Unmarshal(b, rec)
	var syntax *json.SyntaxError
	var typ *json.UnmarshalTypeError
	switch {
	case err == nil:
		return nil
	case errors.As(err, &syntax):
		return fmt.Errorf("--message: not JSON (at byte %d of %d)", syntax.Offset, len(b))
	case errors.As(err, &typ) && typ.Field != "":
		// Only the record's own field: a path further in names map keys
		// (message attributes' names), which are the message's.
		field, _, _ := strings.Cut(strings.TrimPrefix(typ.Field, "SQSMessage."), ".")
		return fmt.Errorf("--message: field %s holds a value of the wrong type: give one SQS record as Lambda delivers it", field)
	default:
		return fmt.Errorf("--message: not an SQS record as Lambda delivers it (a JSON object: messageId, body, attributes, messageAttributes; %d bytes)", len(b))
	}
}

// messageID is the record id of m's key, scoped as the function scopes it
// under the configured tenancy: by its MessageGroupId with message-group.
// (An invocation's tenant is not in the message: a dead-lettered message
// of a tenant-isolated function is classed by its unscoped id.)
func messageID(o *ops, kf idempotency.Selector, m events.SQSMessage) (string, error) {
	k, err := idempotency.Select(kf, m)
	if err != nil {
		return "", err
	}
	if o.g.tenancy == envvars.TenancyMessageGroup {
		return o.guard.ScopedID("", m.Attributes["MessageGroupId"], k)
	}
	return o.guard.ID(k)
}

// bodyWith is a JSON body holding value at path: what a producer sends.
func bodyWith(path []string, value string) (string, error) {
	if !utf8.ValidString(value) || !utf8.ValidString(strings.Join(path, "")) {
		// json.Marshal would write it as U+FFFD: another key's record.
		return "", errors.New("--key or --key-field is not valid UTF-8, which the function refuses in a key")
	}
	body := strings.TrimSpace(value)
	if !jsonValue(value) {
		// A plain string, as the producer's JSON holds it quoted: r-2 is
		// "r-2". (A key that reads as JSON, such as 17 or true, is that
		// value: quote it as JSON for the string.)
		q, _ := json.Marshal(value)
		body = string(q)
	}
	for i := len(path) - 1; i >= 0; i-- {
		name, _ := jsonString(path[i])
		body = "{" + name + ":" + body + "}"
	}
	return body, nil
}

// refuse prints why a command refuses to act, and returns exitRefused.
func refuse(o *ops, format string, args ...any) int {
	fmt.Fprintf(o.stderr, "sqsonce-ops: refused: "+format+"\n", args...)
	return exitRefused
}

// failed prints a failure, and returns exitFailed.
func failed(o *ops, format string, args ...any) int {
	fmt.Fprintf(o.stderr, "sqsonce-ops: "+format+"\n", args...)
	return exitFailed
}

// now is the clock, for tests.
var now = time.Now
