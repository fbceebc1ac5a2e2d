package idempotency_test

import (
	"bytes"
	"compress/gzip"
	"context"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"log/slog"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/aws/aws-lambda-go/events"

	"github.com/sqsonce/sqsonce/middleware/idempotency"
	"github.com/sqsonce/sqsonce/middleware/idempotency/jmespath"
	"github.com/sqsonce/sqsonce/middleware/idempotency/memstore"
)

// The record-id golden table pins the full record id (and the validation
// hash) that every key source gives every value, in every format: records
// are persisted for weeks, so a change to how any id is derived must fail
// here. Run with -update to rewrite testdata/record-ids.golden.json, and
// review the diff: an id that changed re-keys every stored record.
//
// The table is pinned on purpose; its Powertools rows are also checked
// against python3's json and hashlib and against the pinned Powertools
// TypeScript, and its native rows against a canonical JSON (RFC 8785:
// JSON.stringify with sorted keys) and SHA-256 computed by node, so a row
// cannot be pinned wrong.
const goldenIDs = "testdata/record-ids.golden.json"

// goldenValue is a JSON value a producer sends as a key.
type goldenValue struct {
	text string
	kind string // str, int, big, float, obj, arr, bool, or raw (not JSON: raw material only)
}

var goldenValues = []goldenValue{
	{`"059f36b4-87a3-44ab-83d2-661975830a7d"`, "str"},
	{`"Zoë 中 😀"`, "str"},
	{`"Zo\u00eb \u4e2d \ud83d\ude00"`, "str"}, // the same string, escaped
	{`"tab\there \"q\" </> \u2028"`, "str"},
	{`10`, "int"},
	{`10.0`, "float"},
	{`0.7`, "float"},
	{`0.70`, "float"},
	{`7e-1`, "float"},
	{`1e-7`, "float"},
	{`-0`, "int"},
	{`9007199254740993`, "big"},
	{`123456789012345678901234567890`, "big"},
	{`{"b":[1,2.5,{"c":null}],"a":"x","É":true}`, "obj"},
	{`[1,"two",[3.0],{"k":false}]`, "arr"},
	{`true`, "bool"},
	{`order-42`, "raw"},
	{`  spaced material  `, "raw"},
}

// goldenBody is a message body carrying v in every place a source looks.
func goldenBody(v string) string {
	return `{"idempotency_key":` + v + `,"document":{"id":` + v + `,"version":9},"document_id":` + v +
		`,"version":9,"items":[{"sku":` + v + `,"qty":2},{"sku":"other","qty":0}],"sent_at":"2026-11-29T12:00:00Z"}`
}

// goldenRow is one pinned id: what source took which value, in which
// format and namespace. For a validation hash the namespace is empty.
type goldenRow struct {
	Source    string `json:"source"`
	Value     string `json:"value"`
	Format    string `json:"format"`
	Namespace string `json:"namespace,omitempty"`
	ID        string `json:"id"`

	selector  string // the selector the native format hashes; "" for raw material
	selection string // the JSON value the source must select, for the peers
}

// goldenSource is one way of making a record id or a validation hash,
// through the public API as users call it.
type goldenSource struct {
	name       string
	validation bool                             // the row is a validation hash, not a record id
	selector   string                           // expected native selector
	selection  func(v string) string            // expected selection, as JSON
	takes      func(v goldenValue) bool         // the values the source is given
	run        func(r *goldenRun) error         // calls the API; the id is the reported event's
	msg        func(v string) events.SQSMessage // the message; default goldenMessage
}

func goldenMessage(v string) events.SQSMessage {
	return events.SQSMessage{MessageId: "m-1", Body: goldenBody(v)}
}

// goldenRun is one call: a fresh guard and store, the value, and the id
// the guard reported.
type goldenRun struct {
	t      *testing.T
	cfg    idempotency.Config
	store  *memstore.Store
	v      string
	m      events.SQSMessage
	lastID string
}

func (r *goldenRun) guard(mod func(*idempotency.Config)) *idempotency.Guard {
	cfg := r.cfg
	cfg.Store = r.store
	cfg.Logger = slog.New(slog.DiscardHandler)
	cfg.OnOutcome = func(_ context.Context, ev idempotency.Report) { r.lastID = ev.ID }
	if mod != nil {
		mod(&cfg)
	}
	g, err := idempotency.New(cfg)
	if err != nil {
		r.t.Fatal(err)
	}
	return g
}

func op(context.Context, events.SQSMessage) (string, error) { return "done", nil }

// wrap runs the message through Wrap with key (and a payload, if given).
func (r *goldenRun) wrap(key idempotency.Selector, payload ...idempotency.Selector) error {
	var opts []idempotency.Option
	for _, p := range payload {
		opts = append(opts, idempotency.WithPayload(p))
	}
	_, err := idempotency.Wrap(r.guard(nil), key, op, opts...)(context.Background(), r.m)
	return err
}

// validation is the validation hash stored with the last record.
func (r *goldenRun) validation() (string, error) {
	rec, ok := r.store.Get(r.lastID)
	if !ok || rec.Validation == "" {
		return "", fmt.Errorf("no record %q with a validation hash", r.lastID)
	}
	return rec.Validation, nil
}

type rawReq struct {
	Key      json.RawMessage `json:"idempotency_key"`
	Document struct {
		ID json.RawMessage `json:"id"`
	} `json:"document"`
	DocumentID json.RawMessage `json:"document_id"`
	Version    int             `json:"version"`
}

type stringReq struct {
	Key string `json:"idempotency_key"`
}

func typedOp[Req any](context.Context, Req, events.SQSMessage) (string, error) { return "done", nil }

func valueIs(kinds ...string) func(goldenValue) bool {
	return func(v goldenValue) bool { return slices.Contains(kinds, v.kind) }
}

func same(v string) string { return v }

func subset(v string) string { return `{"document_id":` + v + `,"version":9}` }

var goldenSources = []goldenSource{
	{name: "field idempotency_key", selector: `body ["idempotency_key"]`, selection: same,
		run: func(r *goldenRun) error { return r.wrap(idempotency.BodyField("idempotency_key")) }},
	{name: "path document.id", selector: `body ["document","id"]`, selection: same,
		run: func(r *goldenRun) error { return r.wrap(idempotency.BodyField("document", "id")) }},
	{name: "subset document_id,version", selector: "body fields", selection: subset,
		run: func(r *goldenRun) error { return r.wrap(idempotency.BodySubset("version", "document_id")) }},
	{name: "subset document_id", selector: "body fields", selection: func(v string) string { return `{"document_id":` + v + `}` },
		run: func(r *goldenRun) error { return r.wrap(idempotency.BodySubset("document_id")) }},
	{name: "first of field absent_key, subset document_id,version", selector: "body fields", selection: subset,
		run: func(r *goldenRun) error {
			return r.wrap(idempotency.FirstOf(idempotency.BodyField("absent_key"), idempotency.BodySubset("document_id", "version")))
		}},
	{name: "first of field idempotency_key, subset document_id,version", selector: `body ["idempotency_key"]`, selection: same,
		run: func(r *goldenRun) error {
			return r.wrap(idempotency.FirstOf(idempotency.BodyField("idempotency_key"), idempotency.BodySubset("document_id", "version")))
		}},
	{name: "KeyOf order, raw JSON", selector: "order", selection: same,
		run: func(r *goldenRun) error {
			return r.wrap(idempotency.SelectorFunc(func(events.SQSMessage) (idempotency.Selection, error) {
				return idempotency.SelectionOf("order", json.RawMessage(r.v))
			}))
		}},
	{name: "KeyOf order work, struct", selector: "order work", selection: subset,
		run: func(r *goldenRun) error {
			return r.wrap(idempotency.SelectorFunc(func(events.SQSMessage) (idempotency.Selection, error) {
				return idempotency.SelectionOf("order work", struct {
					DocumentID json.RawMessage `json:"document_id"`
					Version    int             `json:"version"`
				}{json.RawMessage(r.v), 9})
			}))
		}},
	{name: "WrapJSON BodyKey idempotency_key, json.RawMessage", selector: `body ["idempotency_key"]`, selection: same,
		run: func(r *goldenRun) error {
			_, err := idempotency.WrapJSON(r.guard(nil), idempotency.BodyField("idempotency_key"), typedOp[rawReq])(context.Background(), r.m)
			return err
		}},
	{name: "WrapJSON BodyKey idempotency_key, string", selector: `body ["idempotency_key"]`, selection: same, takes: valueIs("str"),
		run: func(r *goldenRun) error {
			_, err := idempotency.WrapJSON(r.guard(nil), idempotency.BodyField("idempotency_key"), typedOp[stringReq])(context.Background(), r.m)
			return err
		}},
	{name: "WrapJSON BodyKey document.id, json.RawMessage", selector: `body ["document","id"]`, selection: same,
		run: func(r *goldenRun) error {
			_, err := idempotency.WrapJSON(r.guard(nil), idempotency.BodyField("document", "id"), typedOp[rawReq])(context.Background(), r.m)
			return err
		}},
	{name: "jmespath powertools_json(body).idempotency_key", selector: "jmespath powertools_json(body).idempotency_key", selection: same,
		run: func(r *goldenRun) error {
			return r.wrap(jmespath.MustCompile(`powertools_json(body).idempotency_key`).Selector())
		}},
	{name: "jmespath powertools_json(body).[document_id, version]", selector: "jmespath powertools_json(body).[document_id, version]",
		selection: func(v string) string { return "[" + v + ",9]" },
		run: func(r *goldenRun) error {
			return r.wrap(jmespath.MustCompile(`powertools_json(body).[document_id, version]`).Selector())
		}},
	{name: "jmespath filter powertools_json(body).items[?qty > `0`].sku", selector: "jmespath powertools_json(body).items[?qty > `0`].sku",
		selection: func(v string) string { return "[" + v + "]" }, takes: valueIs("str", "int", "bool", "obj"),
		run: func(r *goldenRun) error {
			return r.wrap(jmespath.MustCompile("powertools_json(body).items[?qty > `0`].sku").Selector())
		}},
	{name: "jmespath functions join('/', [powertools_json(body).document.id, to_string(powertools_json(body).version)])",
		selector: "jmespath join('/', [powertools_json(body).document.id, to_string(powertools_json(body).version)])",
		takes:    valueIs("str"),
		selection: func(v string) string {
			var s string
			if err := json.Unmarshal([]byte(v), &s); err != nil {
				panic(err)
			}
			b, _ := json.Marshal(s + "/9")
			return string(b)
		},
		run: func(r *goldenRun) error {
			return r.wrap(jmespath.MustCompile(`join('/', [powertools_json(body).document.id, to_string(powertools_json(body).version)])`).Selector())
		}},
	{name: "jmespath powertools_json(powertools_base64(body)).idempotency_key", selector: "jmespath powertools_json(powertools_base64(body)).idempotency_key",
		selection: same,
		msg: func(v string) events.SQSMessage {
			return events.SQSMessage{MessageId: "m-1", Body: base64.StdEncoding.EncodeToString([]byte(goldenBody(v)))}
		},
		run: func(r *goldenRun) error {
			return r.wrap(jmespath.MustCompile(`powertools_json(powertools_base64(body)).idempotency_key`).Selector())
		}},
	{name: "jmespath powertools_json(powertools_base64_gzip(body)).document.id", selector: "jmespath powertools_json(powertools_base64_gzip(body)).document.id",
		selection: same,
		msg: func(v string) events.SQSMessage {
			var b bytes.Buffer
			w := gzip.NewWriter(&b)
			w.Write([]byte(goldenBody(v))) //nolint:errcheck // a bytes.Buffer does not fail
			w.Close()                      //nolint:errcheck
			return events.SQSMessage{MessageId: "m-1", Body: base64.StdEncoding.EncodeToString(b.Bytes())}
		},
		run: func(r *goldenRun) error {
			return r.wrap(jmespath.MustCompile(`powertools_json(powertools_base64_gzip(body)).document.id`).Selector())
		}},
	{name: "jmespath messageAttributes.key.stringValue", selector: "jmespath messageAttributes.key.stringValue",
		selection: func(v string) string { b, _ := json.Marshal(v); return string(b) },
		msg: func(v string) events.SQSMessage {
			return events.SQSMessage{MessageId: "m-1", Body: "not JSON",
				MessageAttributes: map[string]events.SQSMessageAttribute{"key": {DataType: "String", StringValue: &v}}}
		},
		run: func(r *goldenRun) error {
			return r.wrap(jmespath.MustCompile(`messageAttributes.key.stringValue`).Selector())
		}},
	{name: "raw material through Do", selection: same, takes: func(goldenValue) bool { return true },
		run: func(r *goldenRun) error {
			_, err := idempotency.Do(context.Background(), r.guard(nil), idempotency.Raw([]byte(r.v)), func(context.Context) (int, error) { return 1, nil })
			return err
		}},

	// Validation hashes.
	{name: "payload subset document_id,version (Wrap)", validation: true, selector: "body fields", selection: subset,
		run: func(r *goldenRun) error {
			if err := r.wrap(idempotency.BodyField("sent_at"), idempotency.BodySubset("document_id", "version")); err != nil {
				return err
			}
			return nil
		}},
	{name: "payload jmespath powertools_json(body).[document_id, version] (Wrap)", validation: true,
		selector: "jmespath powertools_json(body).[document_id, version]", selection: func(v string) string { return "[" + v + ",9]" },
		run: func(r *goldenRun) error {
			return r.wrap(idempotency.BodyField("sent_at"), jmespath.MustCompile(`powertools_json(body).[document_id, version]`).Selector())
		}},
	{name: "payload KeyOf payload (WrapJSON)", validation: true, selector: "payload", selection: subset,
		run: func(r *goldenRun) error {
			body := jsonBody[rawReq]{
				KeyFunc: func(rawReq) (idempotency.Selection, error) { return idempotency.SelectionOf("pinned", "k") },
				PayloadFunc: func(q rawReq) (idempotency.Selection, error) {
					return idempotency.SelectionOf("payload", struct {
						DocumentID json.RawMessage `json:"document_id"`
						Version    int             `json:"version"`
					}{q.DocumentID, q.Version})
				}}
			_, err := wrapJSON(r.guard(nil), body, typedOp[rawReq])(context.Background(), r.m)
			return err
		}},
	{name: "payload raw material (Do)", validation: true, selection: same, takes: func(goldenValue) bool { return true },
		run: func(r *goldenRun) error {
			_, err := idempotency.Do(context.Background(), r.guard(nil), idempotency.Raw([]byte(`"payload-key"`)), func(context.Context) (int, error) { return 1, nil }, idempotency.WithPayload(idempotency.Raw([]byte(r.v))))
			return err
		}},
}

// goldenFormatHash is the validation hash of a Key made directly, with
// Format.Hash: its own rows.
const goldenFormatHash = "Format.Hash payload"

var goldenFormats = []idempotency.Format{idempotency.FormatNative, idempotency.FormatPowertoolsPython, idempotency.FormatPowertoolsTypeScript}

var goldenNamespaces = []string{"summarise", "orders-prod.lambda_function.handler", "Zoë ns/with spaces"}

// goldenRows computes every row with the code under test.
func goldenRows(t *testing.T) []goldenRow {
	var rows []goldenRow
	refused := map[string]int{}
	for _, src := range goldenSources {
		for vi, v := range goldenValues {
			if src.takes == nil && v.kind == "raw" || src.takes != nil && !src.takes(v) {
				continue
			}
			for fi, f := range goldenFormats {
				ns := goldenNamespaces[(vi+fi)%len(goldenNamespaces)]
				m := goldenMessage(v.text)
				if src.msg != nil {
					m = src.msg(v.text)
				}
				r := &goldenRun{t: t, cfg: idempotency.Config{Namespace: ns, Format: f}, store: memstore.New(), v: v.text, m: m}
				err := src.run(r)
				id := r.lastID
				if err == nil && src.validation {
					id, err = r.validation()
				}
				if err != nil {
					refused[src.name+" / "+f.String()]++
					continue
				}
				row := goldenRow{Source: src.name, Value: v.text, Format: f.String(), ID: id, selector: src.selector, selection: src.selection(v.text)}
				if !src.validation {
					row.Namespace = ns
				}
				rows = append(rows, row)
			}
		}
	}
	for _, v := range goldenValues {
		for _, f := range goldenFormats {
			hash, err := f.Hash(idempotency.Selection{Selector: "payload", Value: json.RawMessage(v.text)})
			if err != nil {
				refused[goldenFormatHash+" / "+f.String()]++
				continue
			}
			rows = append(rows, goldenRow{Source: goldenFormatHash, Value: v.text, Format: f.String(), ID: hash, selector: "payload", selection: v.text})
		}
	}
	for _, k := range slices.Sorted(func(yield func(string) bool) {
		for k := range refused {
			if !yield(k) {
				return
			}
		}
	}) {
		t.Logf("refused: %s: %d values", k, refused[k])
	}
	return rows
}

func rowKey(r goldenRow) string { return r.Source + "\x00" + r.Format + "\x00" + r.Value }

// encodeRows writes one row per line, so that a diff shows the ids that
// changed.
func encodeRows(rows []goldenRow) []byte {
	var b bytes.Buffer
	b.WriteString("[\n")
	for i, r := range rows {
		line, err := json.Marshal(r)
		if err != nil {
			panic(err)
		}
		b.Write(line)
		if i < len(rows)-1 {
			b.WriteByte(',')
		}
		b.WriteByte('\n')
	}
	b.WriteString("]\n")
	return b.Bytes()
}

// TestRecordIDsGolden: every row of the golden table is derived exactly
// as pinned, and no row is added or lost.
func TestRecordIDsGolden(t *testing.T) {
	rows := goldenRows(t)
	if *update {
		if err := os.WriteFile(goldenIDs, encodeRows(rows), 0o644); err != nil {
			t.Fatal(err)
		}
		t.Logf("wrote %d rows to %s", len(rows), goldenIDs)
		return
	}
	b, err := os.ReadFile(goldenIDs)
	if err != nil {
		t.Fatal(err)
	}
	var want []goldenRow
	if err := json.Unmarshal(b, &want); err != nil {
		t.Fatal(err)
	}
	got := map[string]goldenRow{}
	for _, r := range rows {
		got[rowKey(r)] = r
	}
	wanted := map[string]bool{}
	bad := 0
	for _, w := range want {
		wanted[rowKey(w)] = true
		g, ok := got[rowKey(w)]
		switch {
		case !ok:
			t.Errorf("%s, %s, value %s: no id now (refused), want %s", w.Source, w.Format, w.Value, w.ID)
			bad++
		case g.ID != w.ID || g.Namespace != w.Namespace:
			t.Errorf("%s, %s, value %s: id %s, want %s", w.Source, w.Format, w.Value, g.ID, w.ID)
			bad++
		}
	}
	for _, r := range rows {
		if !wanted[rowKey(r)] {
			t.Errorf("%s, %s, value %s: id %s, not in the golden table", r.Source, r.Format, r.Value, r.ID)
			bad++
		}
	}
	if bad > 0 {
		t.Errorf("%d of %d rows differ from %s: a changed id re-keys stored records", bad, len(want), goldenIDs)
	}
	if len(want) < 600 {
		t.Errorf("the golden table has %d rows; it should cover every source and format", len(want))
	}
}

// TestRecordIDsGoldenSameAcrossSources: sources documented to give one
// record id for one selection do.
func TestRecordIDsGoldenSameAcrossSources(t *testing.T) {
	ids := map[string]string{}
	for _, r := range goldenRows(t) {
		ids[rowKey(r)] = r.ID
	}
	for _, pair := range [][2]string{
		{"WrapJSON BodyKey idempotency_key, json.RawMessage", "field idempotency_key"},
		{"WrapJSON BodyKey idempotency_key, string", "field idempotency_key"},
		{"WrapJSON BodyKey document.id, json.RawMessage", "path document.id"},
		{"first of field absent_key, subset document_id,version", "subset document_id,version"},
		{"first of field idempotency_key, subset document_id,version", "field idempotency_key"},
	} {
		n := 0
		for _, v := range goldenValues {
			for _, f := range goldenFormats {
				a, ok := ids[pair[0]+"\x00"+f.String()+"\x00"+v.text]
				if !ok {
					continue
				}
				n++
				if b := ids[pair[1]+"\x00"+f.String()+"\x00"+v.text]; a != b {
					t.Errorf("%s, value %s: %s gives %s, %s gives %s", f, v.text, pair[0], a, pair[1], b)
				}
			}
		}
		if n == 0 {
			t.Errorf("no rows for %s", pair[0])
		}
	}
}

// nativePeer computes the native format's digest independently: SHA-256
// of "raw\0" and the material, or of the canonical JSON (RFC 8785, which
// is JSON.stringify with object keys sorted by UTF-16 code units) of
// {"selector", "value"}.
const nativePeer = `
const { createHash } = require('node:crypto');
const canon = (x) => Array.isArray(x) ? '[' + x.map(canon).join(',') + ']'
  : (x !== null && typeof x === 'object') ? '{' + Object.keys(x).sort().map((k) => JSON.stringify(k) + ':' + canon(x[k])).join(',') + '}'
  : JSON.stringify(x);
const out = [];
for (const line of require('node:fs').readFileSync(0, 'utf8').split('\n').slice(0, -1)) {
  const q = JSON.parse(line);
  const material = 'raw' in q ? 'raw\0' + q.raw : canon({ selector: q.selector, value: JSON.parse(q.value) });
  out.push(createHash('sha256').update(material, 'utf8').digest('hex'));
}
console.log(out.join('\n'));
`

// digestOf is a row's digest: its id after the namespace.
func digestOf(r goldenRow) string {
	if r.Namespace == "" {
		return r.ID
	}
	return strings.TrimPrefix(r.ID, r.Namespace+"#")
}

// TestRecordIDsGoldenPeers checks the golden table's rows against the
// independent references: python3 for FormatPowertoolsPython, the pinned
// Powertools TypeScript for FormatPowertoolsTypeScript, node's JSON and
// SHA-256 for FormatNative.
func TestRecordIDsGoldenPeers(t *testing.T) {
	rows := goldenRows(t)
	byFormat := map[string][]goldenRow{}
	for _, r := range rows {
		if r.Namespace != "" && !strings.HasPrefix(r.ID, r.Namespace+"#") {
			t.Errorf("%s, %s: id %s does not begin with its namespace %q", r.Source, r.Format, r.ID, r.Namespace)
		}
		byFormat[r.Format] = append(byFormat[r.Format], r)
	}
	check := func(t *testing.T, rows []goldenRow, answers []string, want func(goldenRow, string) string) {
		for i, r := range rows {
			if w := want(r, answers[i]); digestOf(r) != w {
				t.Errorf("%s, value %s (selection %s): digest %s, the peer says %s", r.Source, r.Value, r.selection, digestOf(r), w)
			}
		}
		t.Logf("%d rows agree", len(rows))
	}
	t.Run("python", func(t *testing.T) {
		python, err := exec.LookPath("python3")
		if err != nil {
			peerMissing(t, "python3", err)
		}
		rows := byFormat[idempotency.FormatPowertoolsPython.String()]
		lines := make([]string, len(rows))
		for i, r := range rows {
			lines[i] = r.selection
		}
		check(t, rows, runPeer(t, "", lines, python, "-c", pythonPeer), func(_ goldenRow, answer string) string {
			hash, _, _ := strings.Cut(answer, " ")
			return hash
		})
	})
	t.Run("typescript", func(t *testing.T) {
		dir, _ := filepath.Abs(filepath.Join("..", "..", "internal", "testenv", "powertools", "testdata"))
		if d := os.Getenv("SQSONCE_POWERTOOLS_NODE_DIR"); d != "" {
			dir = d
		}
		node, err := exec.LookPath("node")
		if err == nil {
			_, err = os.Stat(filepath.Join(dir, "node_modules", "@aws-lambda-powertools", "idempotency", "package.json"))
		}
		if err != nil {
			peerMissing(t, "node with @aws-lambda-powertools/idempotency in "+dir, err)
		}
		rows := byFormat[idempotency.FormatPowertoolsTypeScript.String()]
		lines := make([]string, len(rows))
		for i, r := range rows {
			lines[i] = r.selection
		}
		check(t, rows, runPeer(t, dir, lines, node, "--input-type=module", "-e", nodePeer), func(r goldenRow, answer string) string {
			id, validation, _ := strings.Cut(answer, " ")
			if r.Namespace == "" {
				return validation
			}
			return strings.TrimPrefix(id, "fn#")
		})
	})
	t.Run("native", func(t *testing.T) {
		node, err := exec.LookPath("node")
		if err != nil {
			peerMissing(t, "node", err)
		}
		rows := byFormat[idempotency.FormatNative.String()]
		lines := make([]string, len(rows))
		for i, r := range rows {
			var q any = map[string]string{"selector": r.selector, "value": r.selection}
			if r.selector == "" {
				q = map[string]string{"raw": r.selection}
			}
			b, _ := json.Marshal(q)
			lines[i] = string(b)
		}
		check(t, rows, runPeer(t, "", lines, node, "-e", nativePeer), func(_ goldenRow, answer string) string { return answer })
	})
}
