package idempotency_test

import (
	"context"
	"encoding/base64"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"log/slog"
	"maps"
	"os/exec"
	"slices"
	"strings"
	"testing"
	"unicode/utf8"

	"github.com/aws/aws-lambda-go/events"

	"github.com/sqsonce/sqsonce/internal/jsonkey"
	"github.com/sqsonce/sqsonce/internal/jsonkey/jsongen"
	"github.com/sqsonce/sqsonce/middleware/idempotency"
	"github.com/sqsonce/sqsonce/middleware/idempotency/jmespath"
	"github.com/sqsonce/sqsonce/middleware/idempotency/memstore"
)

// The spelling differential (issue 25, finding 1): requests spelled the
// ways producers spell JSON (white space at every place RFC 8259 allows
// it, every escape of every character, every spelling of every number,
// members in any order), and damaged the ways transports damage it, go
// through every surface of the package that reads message content, in
// every format. Acceptance is held against encoding/json and python3's
// json on the same bytes: a body both accept is accepted on every surface
// unless it breaks a rule the package documents (an object naming a member
// twice, a lone surrogate, invalid UTF-8, a number over 100 characters,
// one the native format cannot hold exactly, no key, a key whose letter
// case the TypeScript runtime's Unicode may change), each found by python3,
// not by the code under test. Record ids are held against python3's
// json.dumps(sort_keys=True) and md5 (Python), the pinned Powertools
// TypeScript's own getHashedIdempotencyKey and getHashedPayload with
// Powertools' JMESPath (TypeScript), and, in the native format, against
// the id of the request's compact spelling: one request, one id; two
// requests, two ids.

var (
	spellingBodies = flag.Int("spelling.bodies", 3500, "bodies TestSpellingDifferential generates (make fuzz runs more)")
	spellingSeed   = flag.Uint64("spelling.seed", 25, "the seed of TestSpellingDifferential's bodies (make fuzz picks one)")
)

// spellingStyle is one way of spelling a request, and the formats whose
// ids it must not change: member order changes the TypeScript id (names
// that differ only in case stay in the order sent), a number's kind the
// Python one (1 is an int, 1.0 a float).
type spellingStyle struct {
	name  string
	style jsongen.Style
	keeps [3]bool // by format (allFormats): the id is the compact spelling's
}

var spellingStyles = []spellingStyle{
	{"white space", jsongen.Style{Space: true}, [3]bool{true, true, true}},
	{"escapes", jsongen.Style{Escapes: true}, [3]bool{true, true, true}},
	{"white space, escapes, numbers of their kind", jsongen.Style{Space: true, Escapes: true, Numbers: jsongen.SameClass}, [3]bool{true, true, true}},
	{"white space, escapes, numbers of their value", jsongen.Style{Space: true, Escapes: true, Numbers: jsongen.SameValue}, [3]bool{true, false, true}},
	{"white space, escapes, numbers of their kind, member order", jsongen.Style{Space: true, Escapes: true, Numbers: jsongen.SameClass, Reorder: true}, [3]bool{true, true, false}},
	{"everything", jsongen.Everything, [3]bool{true, false, false}},
}

// spelledBody is one body of the differential.
type spelledBody struct {
	request int    // the request it spells
	text    string // the body
	style   int    // an index of spellingStyles; -1: compact; -2: damaged
	damage  string // what was done to a damaged one
}

// spellingCorpus makes n bodies: requests, each spelled compactly, in
// every style, and damaged. A request is an object with the producer's
// key (any JSON value), a document whose id is another, a version and
// other members beside them; now and then it breaks I-JSON, inside a value
// or by naming a member twice beside the key or on its path.
func spellingCorpus(n int, seed uint64) []spelledBody {
	g := jsongen.New(seed)
	g.Defects = 8
	g.Pieces = append(slices.Clone(jsongen.Pieces), textSentinel)
	var out []spelledBody
	for request := 0; len(out) < n; request++ {
		key, id, other := g.Value(), g.Value(), g.Value()
		if g.Rand().IntN(20) == 0 {
			key = jsongen.Value{Kind: jsongen.Number, Num: jsongen.ParseNum(numberSentinel)}
		}
		version := jsongen.Value{Kind: jsongen.Number, Num: g.Number()}
		if g.Rand().IntN(4) == 0 {
			version = g.Value()
		}
		v := jsongen.Obj("idempotency_key", key, "doc", jsongen.Obj("id", id, "note", jsongen.Str(textSentinel)), "version", version, "other", other)
		switch g.Rand().IntN(40) {
		case 0: // beside every path
			v.Members = append(v.Members, jsongen.Member{Name: []rune("other"), Value: g.Value()})
		case 1: // on the key's path
			v.Members = append(v.Members, jsongen.Member{Name: []rune("idempotency_key"), Value: g.Value()})
		case 2: // on the document id's path
			v.Members[1].Value.Members = append(v.Members[1].Value.Members, jsongen.Member{Name: []rune("id"), Value: g.Value()})
		}
		out = append(out, spelledBody{request: request, text: jsongen.Compact(v), style: -1})
		for si, st := range spellingStyles {
			out = append(out, spelledBody{request: request, text: g.Spell(v, st.style), style: si})
		}
		broken, what := g.Break(g.Spell(v, jsongen.Style{Space: true}))
		out = append(out, spelledBody{request: request, text: broken, style: -2, damage: what})
	}
	return out[:n]
}

// pySel is what python3 says of one selection of a body.
type pySel struct {
	Present bool   `json:"present"` // the members on its path are there
	Unique  bool   `json:"unique"`  // each member on its path appears once in its object
	Dup     bool   `json:"dup"`     // an object in it names a member twice
	Lone    bool   `json:"lone"`    // a string in it holds a lone surrogate (or invalid UTF-8)
	Long    bool   `json:"long"`    // a number in it is longer than 100 characters
	Exact   bool   `json:"exact"`   // a double holds every number in it exactly, by the native rule
	Null    bool   `json:"null"`    // it is null (or absent)
	Empty   bool   `json:"empty"`   // it is ""
	Missing bool   `json:"missing"` // package jmespath's missing key: null, "", or an array or object of nulls only
	MD5     string `json:"md5"`     // md5 hex of json.dumps(sort_keys=True)
	Canon   string `json:"canon"`   // the value with numbers as doubles, dumped with sorted keys: the native class
}

// pyBody is what python3 says of a body.
type pyBody struct {
	Valid  bool   `json:"valid"` // json.loads reads it (UTF-8, no NaN or Infinity)
	Whole  pySel  `json:"whole"`
	Field  pySel  `json:"field"`  // idempotency_key
	DocID  pySel  `json:"docid"`  // doc.id
	Subset pySel  `json:"subset"` // {idempotency_key, version}
	Error  string `json:"error"`
}

// spellingOracle answers each line, a body in base64, with what python3's
// json says of it (pyBody, as JSON). Invalid UTF-8 is read as lone
// surrogates (surrogateescape), so that it is found where it is.
const spellingOracle = `
import sys, json, hashlib, base64
from decimal import Decimal
class Num:
    __slots__ = ('s',)
    def __init__(self, s): self.s = s
class Pairs(list): pass
def reject(c): raise ValueError('constant ' + c)
def lone(s): return any(0xd800 <= ord(c) <= 0xdfff for c in s)
def exact(s):
    if not any(c in s for c in '.eE'):
        return abs(int(s)) <= 2**53
    f = float(s)
    return f not in (float('inf'), float('-inf')) and Decimal(s) == Decimal(repr(f))
def flags(v, fl):
    if isinstance(v, Num):
        fl['long'] |= len(v.s) > 100
        fl['exact'] &= len(v.s) > 100 or exact(v.s)
    elif isinstance(v, str):
        fl['lone'] |= lone(v)
    elif isinstance(v, Pairs):
        names = [k for k, _ in v]
        fl['dup'] |= len(set(names)) != len(names)
        for k, x in v:
            fl['lone'] |= lone(k)
            flags(x, fl)
    elif isinstance(v, list):
        for x in v: flags(x, fl)
def plain(v, doubles):
    if isinstance(v, Num):
        if doubles: return float(v.s) + 0.0
        return int(v.s) if not any(c in v.s for c in '.eE') else float(v.s)
    if isinstance(v, Pairs): return {k: plain(x, doubles) for k, x in v}
    if isinstance(v, list): return [plain(x, doubles) for x in v]
    return v
def missing(v):
    if v is None or v == '': return True
    if isinstance(v, Pairs): return all(x is None for _, x in v)
    if isinstance(v, list) and not isinstance(v, Pairs): return all(x is None for x in v)
    return False
def sel(v, present=True, unique=True):
    fl = {'dup': False, 'lone': False, 'long': False, 'exact': True}
    flags(v, fl)
    out = dict(fl, present=present, unique=unique, null=v is None, empty=isinstance(v, str) and v == '', missing=missing(v))
    try:
        out['md5'] = hashlib.md5(json.dumps(plain(v, False), sort_keys=True).encode('utf-8', 'surrogatepass')).hexdigest()
        out['canon'] = json.dumps(plain(v, True), sort_keys=True)
    except Exception as e:
        out['md5'] = out['canon'] = ''
    return out
def member(obj, name):
    if not isinstance(obj, Pairs): return None, False, True
    found = [x for k, x in obj if k == name]
    return (found[-1] if found else None), bool(found), len(found) <= 1
out = []
for line in sys.stdin:
    text = base64.b64decode(line).decode('utf-8', 'surrogateescape')
    try:
        body = json.loads(text, object_pairs_hook=Pairs, parse_int=Num, parse_float=Num, parse_constant=reject)
    except Exception as e:
        out.append(json.dumps({'valid': False, 'error': type(e).__name__}))
        continue
    key, kp, ku = member(body, 'idempotency_key')
    doc, dp, du = member(body, 'doc')
    docid, ip, iu = member(doc, 'id')
    version, vp, vu = member(body, 'version')
    subset = Pairs([('idempotency_key', key), ('version', version)])
    sub = sel(subset, kp and vp, ku and vu)
    sub['null'] = key is None or version is None
    out.append(json.dumps({'valid': True, 'whole': sel(body), 'field': sel(key, kp, ku), 'docid': sel(docid, dp and ip, du and iu), 'subset': sub}))
print('\n'.join(out))
`

// powertoolsSpellingPeer answers each line, a body in base64, with the
// record ids the pinned Powertools TypeScript computes for the SQS record
// {body}, with keyPrefix "fn": eventKeyJmesPath powertools_json(body).
// idempotency_key, powertools_json(body).doc.id and
// powertools_json(body).{idempotency_key: idempotency_key, version:
// version}; the whole body parsed (no JMESPath); and the validation hashes
// of payloadValidationJmesPath powertools_json(body).idempotency_key and
// powertools_json(body).{idempotency_key: idempotency_key, version:
// version}; "-" where it throws.
const powertoolsSpellingPeer = `
import { BasePersistenceLayer } from '@aws-lambda-powertools/idempotency/persistence';
import { IdempotencyConfig } from '@aws-lambda-powertools/idempotency';
import { readFileSync } from 'node:fs';
class Hasher extends BasePersistenceLayer {
  async _getRecord() {} async _putRecord() {} async _updateRecord() {} async _deleteRecord() {}
}
const hasher = (opts) => { const h = new Hasher(); h.configure({ config: new IdempotencyConfig(opts), keyPrefix: 'fn' }); return h; };
const field = hasher({ eventKeyJmesPath: 'powertools_json(body).idempotency_key', payloadValidationJmesPath: 'powertools_json(body).idempotency_key' });
const doc = hasher({ eventKeyJmesPath: 'powertools_json(body).doc.id' });
const subset = hasher({ eventKeyJmesPath: 'powertools_json(body).{idempotency_key: idempotency_key, version: version}' });
const whole = hasher({});
const subsetPayload = hasher({ payloadValidationJmesPath: 'powertools_json(body).{idempotency_key: idempotency_key, version: version}' });
const tryOr = (f) => { try { const v = f(); return v === undefined || v === '' ? '-' : v; } catch { return '-'; } };
const origWarn = console.warn; console.warn = () => {};
const out = [];
for (const line of readFileSync(0, 'utf8').split('\n').slice(0, -1)) {
  const body = Buffer.from(line, 'base64').toString('utf8');
  const rec = { body };
  out.push([
    tryOr(() => field.getHashedIdempotencyKey(rec)), tryOr(() => doc.getHashedIdempotencyKey(rec)),
    tryOr(() => subset.getHashedIdempotencyKey(rec)), tryOr(() => whole.getHashedIdempotencyKey(JSON.parse(body))),
    tryOr(() => field.getHashedPayload(rec)), tryOr(() => subsetPayload.getHashedPayload(rec)),
  ].join(' '));
}
console.warn = origWarn;
console.log(out.join('\n'));
`

// tsIDs are Powertools TypeScript's ids of a body, as powertoolsSpellingPeer
// writes them.
type tsIDs struct{ field, docid, subset, whole, validation, validationSubset string }

// spellingSurface is one surface of the package that reads a body, in
// one format.
type spellingSurface struct {
	name     string
	selector string // the native format's selector: the class of a value is the selector and the value
	sel      string // the selection the references read: field, docid, subset or whole
	body     bool   // the whole body must keep the rules (else: the selection and the names on its path)
	noKey    func(s pySel) bool
	// id is the record id the surface gives m, or the validation hash for
	// the validation surface.
	id func(e *spellingEnv, fi int, m events.SQSMessage) (string, error)
	// native says whether the native format reads JSON here (raw material
	// is its bytes).
	native bool
	// lossyUTF8 says the surface reads a Go event, whose strings are
	// valid UTF-8 by the time they are read (Expression.Selector's doc).
	lossyUTF8 bool
}

// spellingEnv holds a guard per format, with its store and the last id it
// reported.
type spellingEnv struct {
	guards [3]*idempotency.Guard
	stores [3]*memstore.Store
	lastID string
	calls  int // bodies given a validation record: each its own key
}

// newSpellingEnv makes a guard per format over memory, logging to logs
// (nil: nowhere).
func newSpellingEnv(t *testing.T, logs *logCapture) *spellingEnv {
	e := &spellingEnv{}
	for fi, f := range allFormats {
		handler := slog.DiscardHandler
		if logs != nil {
			handler = slog.NewJSONHandler(logs, &slog.HandlerOptions{Level: slog.LevelDebug})
		}
		e.stores[fi] = memstore.New()
		g, err := idempotency.New(idempotency.Config{Store: e.stores[fi], Namespace: "fn", Format: f, Logger: slog.New(handler),
			OnOutcome: func(_ context.Context, ev idempotency.Report) { e.lastID = ev.ID }})
		if err != nil {
			t.Fatal(err)
		}
		e.guards[fi] = g
	}
	return e
}

func noField(s pySel) bool   { return !s.Present || s.Null || s.Empty }
func noSubset(s pySel) bool  { return !s.Present || s.Null }
func jmesNoKey(s pySel) bool { return s.Missing }
func never(pySel) bool       { return false }

type spellingReq struct {
	Key json.RawMessage `json:"idempotency_key"`
	Doc struct {
		ID json.RawMessage `json:"id"`
	} `json:"doc"`
	Version json.RawMessage `json:"version"`
}

func guardID(fn idempotency.Selector) func(*spellingEnv, int, events.SQSMessage) (string, error) {
	return func(e *spellingEnv, fi int, m events.SQSMessage) (string, error) {
		k, err := idempotency.Select(fn, m)
		if err != nil {
			return "", err
		}
		return e.guards[fi].ID(k)
	}
}

func wrapID(fn idempotency.Selector) func(*spellingEnv, int, events.SQSMessage) (string, error) {
	return func(e *spellingEnv, fi int, m events.SQSMessage) (string, error) {
		e.lastID = ""
		if _, err := idempotency.Wrap(e.guards[fi], fn, func(context.Context, events.SQSMessage) (int, error) { return 1, nil })(context.Background(), m); err != nil {
			return "", err
		}
		return e.lastID, nil
	}
}

func wrapJSONSpellingID(key idempotency.Selector) func(*spellingEnv, int, events.SQSMessage) (string, error) {
	return func(e *spellingEnv, fi int, m events.SQSMessage) (string, error) {
		e.lastID = ""
		h := idempotency.WrapJSON(e.guards[fi], key,
			func(context.Context, spellingReq, events.SQSMessage) (int, error) { return 1, nil })
		if _, err := h(context.Background(), m); err != nil {
			return "", err
		}
		return e.lastID, nil
	}
}

func wrapEventID[E any](key idempotency.Selector, event func(m events.SQSMessage) E) func(*spellingEnv, int, events.SQSMessage) (string, error) {
	return func(e *spellingEnv, fi int, m events.SQSMessage) (string, error) {
		e.lastID = ""
		h := idempotency.Wrap(e.guards[fi], key, func(context.Context, E) (int, error) { return 1, nil })
		if _, err := h(context.Background(), event(m)); err != nil {
			return "", err
		}
		return e.lastID, nil
	}
}

var spellingSurfaces = []spellingSurface{
	{name: "Wrap, BodyField(idempotency_key)", selector: `body ["idempotency_key"]`, sel: "field", noKey: noField, native: true,
		id: wrapID(idempotency.BodyField("idempotency_key"))},
	{name: "Guard.ID, BodyField(doc, id)", selector: `body ["doc","id"]`, sel: "docid", noKey: noField, native: true,
		id: guardID(idempotency.BodyField("doc", "id"))},
	{name: "Guard.ID, BodySubset(idempotency_key, version)", selector: "body fields", sel: "subset", noKey: noSubset, native: true,
		id: guardID(idempotency.BodySubset("version", "idempotency_key"))},
	{name: "Wrap, FirstOf(BodyField(absent), BodySubset)", selector: "body fields", sel: "subset", noKey: noSubset, native: true,
		id: wrapID(idempotency.FirstOf(idempotency.BodyField("absent"), idempotency.BodySubset("idempotency_key", "version")))},
	{name: "jmespath powertools_json(body).idempotency_key", selector: "jmespath powertools_json(body).idempotency_key", sel: "field", body: true, noKey: jmesNoKey, native: true,
		id: guardID(jmespath.MustCompile(`powertools_json(body).idempotency_key`).Selector())},
	{name: "jmespath powertools_json(body).doc.id", selector: "jmespath powertools_json(body).doc.id", sel: "docid", body: true, noKey: jmesNoKey, native: true,
		id: wrapID(jmespath.MustCompile(`powertools_json(body).doc.id`).Selector())},
	{name: "jmespath powertools_json(body).{…}", selector: "jmespath powertools_json(body).{…}", sel: "subset", body: true, noKey: jmesNoKey, native: true,
		id: guardID(jmespath.MustCompile(`powertools_json(body).{idempotency_key: idempotency_key, version: version}`).Selector())},
	{name: "WrapJSON, BodyField, decoded into a json.RawMessage", selector: `body ["idempotency_key"]`, sel: "field", body: true, noKey: noField, native: true,
		id: wrapJSONSpellingID(idempotency.BodyField("idempotency_key"))},
	{name: "WrapJSON, SelectionOf of a json.RawMessage", selector: "doc id", sel: "docid", body: true, noKey: never, native: true,
		id: wrapJSONSpellingID(idempotency.SelectorFunc(func(q spellingReq) (idempotency.Selection, error) { return idempotency.SelectionOf("doc id", q.Doc.ID) }))},
	{name: "Wrap of a json.RawMessage, jmespath idempotency_key", selector: "jmespath idempotency_key", sel: "field", body: true, noKey: jmesNoKey, native: true,
		id: wrapEventID(jmespath.MustCompile(`idempotency_key`).Selector(), func(m events.SQSMessage) json.RawMessage { return json.RawMessage(m.Body) })},
	{name: "Wrap of an API Gateway request, jmespath powertools_json(body).idempotency_key", selector: "jmespath powertools_json(body).idempotency_key", sel: "field", body: true, noKey: jmesNoKey, native: true, lossyUTF8: true,
		id: wrapEventID(jmespath.MustCompile(`powertools_json(body).idempotency_key`).Selector(),
			func(m events.SQSMessage) events.APIGatewayV2HTTPRequest {
				return events.APIGatewayV2HTTPRequest{Body: m.Body}
			})},
	{name: "Guard.ID, Raw of the body", sel: "whole", body: true, noKey: never,
		id: func(e *spellingEnv, fi int, m events.SQSMessage) (string, error) {
			return e.guards[fi].ID(idempotency.Raw([]byte(m.Body)))
		}},
	// A payload is never missing: an absent field is null, and null and ""
	// are hashed as Powertools hashes them.
	{name: "validation hash stored by Wrap WithPayload, BodyField(idempotency_key)", selector: "validation", sel: "field", noKey: never, native: true,
		id: validationHash(idempotency.BodyField("idempotency_key"))},
	{name: "validation hash stored by Wrap WithPayload, BodySubset(idempotency_key, version)", selector: "validation", sel: "subset", noKey: never, native: true,
		id: validationHash(idempotency.BodySubset("version", "idempotency_key"))},
	{name: "validation hash stored by Wrap WithPayload, jmespath powertools_json(body).idempotency_key", selector: "validation", sel: "field", body: true, noKey: never, native: true,
		id: validationHash(jmespath.MustCompile(`powertools_json(body).idempotency_key`).Selector())},
}

// validationHash is the validation hash Wrap stores for payload, in a
// record of its own.
func validationHash(payload idempotency.Selector) func(e *spellingEnv, fi int, m events.SQSMessage) (string, error) {
	return func(e *spellingEnv, fi int, m events.SQSMessage) (string, error) {
		e.calls++
		key, _ := idempotency.SelectionOf("validation", fmt.Sprintf("validation record %d", e.calls)) // a record of its own: no body's key
		h := idempotency.Wrap(e.guards[fi], idempotency.SelectorFunc(func(events.SQSMessage) (idempotency.Selection, error) { return key, nil }), func(context.Context, events.SQSMessage) (int, error) { return 1, nil }, idempotency.WithPayload(payload))
		if _, err := h(context.Background(), m); err != nil {
			return "", err
		}
		rec, ok := e.stores[fi].Get(e.lastID)
		if !ok {
			return "", errors.New("no record")
		}
		return rec.Validation, nil
	}
}

// documentedRefusal names the documented refusal err is in format fi, or
// "" when it is none.
func documentedRefusal(err error, fi int) string {
	switch {
	case errors.Is(err, idempotency.ErrNoKey):
		return "no key"
	case errors.Is(err, jsonkey.ErrDuplicateName):
		return "a name twice"
	case errors.Is(err, jsonkey.ErrLoneSurrogate):
		return "a lone surrogate"
	case errors.Is(err, jsonkey.ErrInvalidUTF8):
		return "invalid UTF-8"
	case errors.Is(err, jsonkey.ErrNumberTooLong):
		return "a number over 100 characters"
	case errors.Is(err, jsonkey.ErrInexactNumber) && fi == 0:
		return "a number a double does not hold (native)"
	case (errors.Is(err, jsonkey.ErrCaseVersioned) || errors.Is(err, jsonkey.ErrSortChanged)) && fi == 2:
		return "a key whose case the runtime's Unicode may change (TypeScript)"
	}
	return ""
}

// expectation is what the references say a surface must do with a body
// in a format: accept it, or refuse it for the reason given.
func expectation(s *spellingSurface, fi int, goValid bool, py pyBody, text string) (accept bool, why string) {
	sel := map[string]pySel{"field": py.Field, "docid": py.DocID, "subset": py.Subset, "whole": py.Whole}[s.sel]
	scope := sel
	if s.body {
		scope = py.Whole
	}
	switch {
	case !goValid && !py.Valid:
		return false, "not JSON"
	case !goValid:
		return false, "not JSON (encoding/json)"
	case !py.Valid:
		return false, "not JSON (python3: " + py.Error + ")"
	case !s.body && !sel.Unique:
		return false, "a name twice"
	case scope.Dup:
		return false, "a name twice"
	case scope.Lone && !(s.lossyUTF8 && !utf8.ValidString(text)):
		return false, "a lone surrogate or invalid UTF-8"
	case scope.Long:
		return false, "a number over 100 characters"
	case s.noKey(sel):
		return false, "no key"
	case fi == 0 && !sel.Exact:
		return false, "a number a double does not hold (native)"
	}
	return true, ""
}

// TestSpellingDifferential runs the differential (see above) on
// -spelling.bodies bodies from -spelling.seed.
func TestSpellingDifferential(t *testing.T) {
	python, err := exec.LookPath("python3")
	if err != nil {
		peerMissing(t, "python3", err)
	}
	node, dir := powertoolsNode(t)
	bodies := spellingCorpus(*spellingBodies, *spellingSeed)

	lines := make([]string, len(bodies))
	for i, b := range bodies {
		lines[i] = base64.StdEncoding.EncodeToString([]byte(b.text))
	}
	pyAnswers := runPeer(t, "", lines, python, "-c", spellingOracle)
	py := make([]pyBody, len(bodies))
	goValid := make([]bool, len(bodies))
	var tsLines []string
	var tsOf []int // the body of each line
	for i, a := range pyAnswers {
		if err := json.Unmarshal([]byte(a), &py[i]); err != nil {
			t.Fatalf("python3 answered %q: %v", a, err)
		}
		goValid[i] = json.Valid([]byte(bodies[i].text))
		if goValid[i] && py[i].Valid {
			tsLines = append(tsLines, lines[i])
			tsOf = append(tsOf, i)
		}
	}
	ts := make([]tsIDs, len(bodies))
	for k, a := range runPeer(t, dir, tsLines, node, "--input-type=module", "-e", powertoolsSpellingPeer) {
		f := strings.Fields(a)
		if len(f) != 6 {
			t.Fatalf("Powertools TypeScript answered %q", a)
		}
		ts[tsOf[k]] = tsIDs{f[0], f[1], f[2], f[3], f[4], f[5]}
	}

	var logs logCapture
	e := newSpellingEnv(t, &logs)

	type key struct {
		surface, format, request int
	}
	compactID := map[key]string{}          // the id of each request's compact spelling
	nativeID := map[key]string{}           // the first native id of each request (the compact's, or a spelling's)
	classOf := map[string]string{}         // native: id → class (the selector and the value, by python3)
	idOfClass := map[string]string{}       // native: class → id
	refused := map[string]map[string]int{} // documented refusals of bodies encoding/json accepts, by surface and reason
	byReason := map[string]int{}           // the same, by reason
	refusedBody := make([]bool, len(bodies))
	var undocumented, accepted, checkedPy, checkedTS, sameAsCompact, failures, lossySkipped, panics int
	fail := func(format string, args ...any) {
		if failures++; failures <= 40 {
			t.Errorf(format, args...)
		}
	}
	for i, b := range bodies {
		m := events.SQSMessage{MessageId: fmt.Sprintf("m-%d", i), Body: b.text}
		for si := range spellingSurfaces {
			s := &spellingSurfaces[si]
			if s.lossyUTF8 && !utf8.ValidString(b.text) {
				lossySkipped++ // an event's strings are UTF-8 once the runtime decoded it
				continue
			}
			for fi, f := range allFormats {
				if fi == 0 && !s.native {
					continue
				}
				id, err := callSurface(s, e, fi, m)
				if errors.Is(err, errPanicked) {
					fail("%s, %v, %s: %v:\n%.400q", s.name, f, styleName(b), err, b.text)
					panics++
					continue
				}
				want, why := expectation(s, fi, goValid[i], py[i], b.text)
				if err != nil && (strings.Contains(err.Error(), textSentinel) || strings.Contains(err.Error(), numberSentinel)) {
					fail("%s, %v: the error quotes the message: %v", s.name, f, err)
				}
				doc := documentedRefusal(err, fi)
				switch {
				case want && err != nil && doc != "" && strings.HasPrefix(doc, "a key whose case"):
					// documented, and not found by the references
				case want && err != nil:
					fail("%s, %v, %s: refused (%v), while encoding/json and python3 accept it and it keeps the rules:\n%.400q", s.name, f, styleName(b), err, b.text)
					undocumented++
					continue
				case !want && err == nil:
					fail("%s, %v, %s: accepted (id %s), while the references say %s:\n%.400q", s.name, f, styleName(b), id, why, b.text)
					continue
				case !want && goValid[i] && doc == "" && !strings.HasPrefix(why, "not JSON"):
					fail("%s, %v, %s: refused with %v, which names no documented rule; want %s:\n%.400q", s.name, f, styleName(b), err, why, b.text)
					undocumented++
					continue
				}
				if err != nil {
					if goValid[i] {
						reason := doc
						if reason == "" {
							reason = why
						}
						if refused[s.name+", "+f.String()] == nil {
							refused[s.name+", "+f.String()] = map[string]int{}
						}
						refused[s.name+", "+f.String()][reason]++
						byReason[reason]++
						refusedBody[i] = true
					}
					continue
				}
				accepted++
				ref := map[string]pySel{"field": py[i].Field, "docid": py[i].DocID, "subset": py[i].Subset, "whole": py[i].Whole}[s.sel]
				tsRef := map[string]string{"field": ts[i].field, "docid": ts[i].docid, "subset": ts[i].subset, "whole": ts[i].whole}[s.sel]
				validation := strings.HasPrefix(s.name, "validation")
				switch f {
				case idempotency.FormatPowertoolsPython:
					want := "fn#" + ref.MD5
					if validation {
						want = ref.MD5
					}
					if id != want {
						fail("%s, %s: id %s; python3 says %s:\n%.400q", s.name, styleName(b), id, want, b.text)
					}
					checkedPy++
				case idempotency.FormatPowertoolsTypeScript:
					want := tsRef
					if validation {
						want = map[string]string{"field": ts[i].validation, "subset": ts[i].validationSubset}[s.sel]
					}
					if id != want {
						fail("%s, %s: id %s; Powertools TypeScript says %s:\n%.400q", s.name, styleName(b), id, want, b.text)
					}
					checkedTS++
				default:
					// A damaged body that is still JSON may be another request
					// (-9e1 for 9e1): only the spellings are one request.
					if k := (key{si, fi, b.request}); b.style != -2 {
						if first, ok := nativeID[k]; ok && first != id {
							fail("%s, native, %s: id %s; another spelling of the request has %s:\n%.400q", s.name, styleName(b), id, first, b.text)
						}
						nativeID[k] = id
					}
					if !validation {
						class := s.selector + "\x00" + ref.Canon
						if c, ok := classOf[id]; ok && c != class {
							fail("native: %q and %q share the id %s", c, class, id)
						}
						if other, ok := idOfClass[class]; ok && other != id {
							fail("native: the value %q has the ids %s and %s", class, other, id)
						}
						classOf[id], idOfClass[class] = class, id
					}
				}
				k := key{si, fi, b.request}
				if b.style == -1 {
					compactID[k] = id
				} else if c, ok := compactID[k]; ok && b.style >= 0 && spellingStyles[b.style].keeps[fi] {
					if c != id {
						fail("%s, %v, %s: id %s; the compact spelling's %s:\n%.400q", s.name, f, styleName(b), id, c, b.text)
					}
					sameAsCompact++
				}
			}
		}
	}
	logs.mu.Lock()
	if all := logs.buf.String(); strings.Contains(all, textSentinel) || strings.Contains(all, numberSentinel) {
		t.Errorf("a log line quotes the message")
	}
	logs.mu.Unlock()

	var valid, pyValid, both, damaged int
	for i := range bodies {
		if goValid[i] {
			valid++
		}
		if py[i].Valid {
			pyValid++
		}
		if goValid[i] && py[i].Valid {
			both++
		}
		if bodies[i].style == -2 {
			damaged++
		}
	}
	t.Logf("seed %d: %d bodies (%d requests: compact, %d styles, damaged); accepted by encoding/json %d, by python3 %d, by both %d; %d damaged",
		*spellingSeed, len(bodies), bodies[len(bodies)-1].request+1, len(spellingStyles), valid, pyValid, both, damaged)
	t.Logf("%d surfaces × formats: %d accepted; ids checked against python3 %d, against Powertools TypeScript %d; %d spellings given their compact spelling's id",
		len(spellingSurfaces)*3-1, accepted, checkedPy, checkedTS, sameAsCompact)
	nRefused, evaluations := 0, 0
	for i := range bodies {
		if refusedBody[i] {
			nRefused++
		}
	}
	for _, n := range byReason {
		evaluations += n
	}
	t.Logf("refused by sqsonce while accepted by encoding/json: %d bodies on some surface (%d surface × format evaluations), as documented: %v",
		nRefused, evaluations, byReason)
	t.Logf("refused by sqsonce while accepted by encoding/json, outside the documented refusals: %d; panics: %d; %d bodies of invalid UTF-8 not given to the event surface",
		undocumented, panics, lossySkipped)
	if testing.Verbose() {
		for _, name := range slices.Sorted(maps.Keys(refused)) {
			t.Logf("  %s: refused as documented: %v", name, refused[name])
		}
	}
}

// errPanicked is the error of a surface that panicked.
var errPanicked = errors.New("panic")

// callSurface is s.id, with a panic as an error wrapping errPanicked.
func callSurface(s *spellingSurface, e *spellingEnv, fi int, m events.SQSMessage) (id string, err error) {
	defer func() {
		if p := recover(); p != nil {
			id, err = "", fmt.Errorf("%w: %v", errPanicked, p)
		}
	}()
	return s.id(e, fi, m)
}

func styleName(b spelledBody) string {
	switch b.style {
	case -1:
		return "compact"
	case -2:
		return "damaged: " + b.damage
	}
	return spellingStyles[b.style].name
}

// TestWhiteSpaceBeforeColon (issue 25, finding 1): each spelling the
// finding names, on the surface it names, gets its compact spelling's
// record id in every format, with no error and no panic. On 2e43541 each
// panicked (index out of range in jsonkey's index) or, where it did not,
// got another id than its compact spelling, or was refused.
func TestWhiteSpaceBeforeColon(t *testing.T) {
	type order struct {
		OrderID string `json:"order_id"`
	}
	typedOrder := func(key idempotency.Selector) func(*spellingEnv, int, events.SQSMessage) (string, error) {
		return func(e *spellingEnv, fi int, m events.SQSMessage) (string, error) {
			e.lastID = ""
			h := idempotency.WrapJSON(e.guards[fi], key, func(context.Context, order, events.SQSMessage) (int, error) { return 1, nil })
			if _, err := h(context.Background(), m); err != nil {
				return "", err
			}
			return e.lastID, nil
		}
	}
	orderKey := typedOrder(idempotency.SelectorFunc(func(o order) (idempotency.Selection, error) { return idempotency.SelectionOf("order", o.OrderID) }))
	for _, tc := range []struct {
		name, spelled, compact string
		id                     func(*spellingEnv, int, events.SQSMessage) (string, error)
	}{
		{"WrapJSON, SelectionOf", `{"order_id" : "o-2"}`, `{"order_id":"o-2"}`, orderKey},
		{"WrapJSON, SelectionOf, pretty-printed", "{\n  \"order_id\" : \"o-3\"\n}", `{"order_id":"o-3"}`, orderKey},
		{"WrapJSON, BodyField, pretty-printed", "{\n  \"order_id\" : \"o-3\"\n}", `{"order_id":"o-3"}`,
			typedOrder(idempotency.BodyField("order_id"))},
		{"BodyField(doc)", `{"doc" : {"id" : 1}}`, `{"doc":{"id":1}}`, guardID(idempotency.BodyField("doc"))},
		{"BodySubset(a, b)", `{"a" : {"x" : 1}, "b" : 2}`, `{"a":{"x":1},"b":2}`, guardID(idempotency.BodySubset("a", "b"))},
		{"BodyField(parameters), an object of numbers", `{"parameters" : {"temperature" : 0.7, "max_tokens" : 100}}`,
			`{"parameters":{"temperature":0.7,"max_tokens":100}}`, guardID(idempotency.BodyField("parameters"))},
		{"BodyField(k), a member after an array", `{"k" : {"a":[1 ,2], "b" :3 }}`, `{"k":{"a":[1,2],"b":3}}`, guardID(idempotency.BodyField("k"))},
		{"jmespath, an object", `{"doc" : {"id" : 1, "rev" : 2}}`, `{"doc":{"id":1,"rev":2}}`, guardID(jmespath.MustCompile(`powertools_json(body).doc`).Selector())},
		{"Wrap of a json.RawMessage, an object", `{"doc" : {"id" : 1, "rev" : 2}}`, `{"doc":{"id":1,"rev":2}}`,
			wrapEventID(jmespath.MustCompile(`doc`).Selector(), func(m events.SQSMessage) json.RawMessage { return json.RawMessage(m.Body) })},
		{"Raw", `{"a" : 1, "b" : [ 2 , 3 ] }`, `{"a":1,"b":[2,3]}`, func(e *spellingEnv, fi int, m events.SQSMessage) (string, error) {
			if fi == 0 {
				return "", errSkip // the native format hashes raw material as bytes
			}
			return e.guards[fi].ID(idempotency.Raw([]byte(m.Body)))
		}},
	} {
		e := newSpellingEnv(t, nil)
		for fi, f := range allFormats {
			want, err := callSurface(&spellingSurface{id: tc.id}, e, fi, events.SQSMessage{MessageId: "m-1", Body: tc.compact})
			if errors.Is(err, errSkip) {
				continue
			}
			if err != nil {
				t.Fatalf("%s, %v, compact %s: %v", tc.name, f, tc.compact, err)
			}
			got, err := callSurface(&spellingSurface{id: tc.id}, e, fi, events.SQSMessage{MessageId: "m-2", Body: tc.spelled})
			if err != nil || got != want {
				t.Errorf("%s, %v, %q: id %q, %v; the compact spelling's %q", tc.name, f, tc.spelled, got, err, want)
			}
		}
	}
}

// errSkip is a surface's answer for a format it does not apply to.
var errSkip = errors.New("not in this format")
