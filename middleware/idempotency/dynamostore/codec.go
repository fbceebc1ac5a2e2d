package dynamostore

import (
	"bytes"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math"
	"slices"
	"strconv"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"github.com/sqsonce/sqsonce/internal/inflate"
	"github.com/sqsonce/sqsonce/internal/redact"
	"github.com/sqsonce/sqsonce/middleware/idempotency/driver"
)

// encodingGzip is the value of the data encoding flag of a compressed result.
const encodingGzip = "gzip"

// maxInflated bounds the size of a decompressed result.
const maxInflated = 64 << 20

func attrS(v string) *types.AttributeValueMemberS { return &types.AttributeValueMemberS{Value: v} }

func attrN(v int64) *types.AttributeValueMemberN {
	return &types.AttributeValueMemberN{Value: strconv.FormatInt(v, 10)}
}

// numbers are number attributes of vs, in two allocations: one for the
// attributes, one for their digits.
func numbers(vs [5]int64) *[5]types.AttributeValueMemberN {
	var buf [5 * 20]byte
	var ends [5]int
	b := buf[:0]
	for i, v := range vs {
		b = strconv.AppendInt(b, v, 10)
		ends[i] = len(b)
	}
	digits := string(b)
	ns := new([5]types.AttributeValueMemberN)
	start := 0
	for i, end := range ends {
		ns[i].Value, start = digits[start:end], end
	}
	return ns
}

// claimItem is the item Acquire writes; with now, the numbers of its
// condition's :now and :now_ms, made with the item's.
func (s *Store) claimItem(rec driver.Record, now time.Time) (item map[string]types.AttributeValue, nowS, nowMs types.AttributeValue) {
	a := s.attrs
	item = s.keyWith(rec.ID, 6)
	ns := numbers([5]int64{rec.ExpiresAt.Unix(), rec.LeaseUntil.UnixMilli(), rec.StrictLease.UnixMilli(), now.Unix(), now.UnixMilli()})
	item[a.Status] = s.req.inProgress
	item[a.Expiration] = &ns[0]
	item[a.LeaseExpiry] = &ns[1]
	item[a.Owner] = attrS(rec.Owner)
	if !rec.StrictLease.IsZero() {
		item[a.StrictLease] = &ns[2]
	}
	if rec.Validation != "" {
		item[a.Validation] = attrS(rec.Validation)
	}
	return item, &ns[3], &ns[4]
}

// stored is a record read from an item, with what the item's condition
// checks see that a Record cannot tell.
type stored struct {
	rec           driver.Record
	hasExpiration bool // the item has an expiration attribute
	hasLease      bool // the item has a lease expiry attribute
	released      bool // the item is a claim released by Release
	inexact       bool // its expiration or lease is not an integer: claimable may differ from the server's comparison
}

// claimable reports whether Acquire's condition (with NoTakeover's when
// strict) holds for the record at now.
func (st stored) claimable(now time.Time, strict bool) bool {
	if strict {
		return st.hasExpiration && st.rec.ExpiresAt.Unix() < now.Unix() || st.released
	}
	return st.hasExpiration && st.rec.ExpiresAt.Unix() < now.Unix() ||
		st.rec.Status == driver.StatusInProgress && st.hasLease && st.rec.LeaseUntil.UnixMilli() < now.UnixMilli()
}

// decode reads a record from an item written by this store or by Powertools
// for AWS Lambda. A problem with the stored result is returned with the rest
// of the record decoded.
func (s *Store) decode(item map[string]types.AttributeValue) (stored, error) {
	a := s.attrs
	var st stored
	var errs []error
	st.rec.ID = stringAttr(item[s.idAttr()])
	st.rec.Status = driver.Status(stringAttr(item[a.Status]))
	st.rec.Validation = stringAttr(item[a.Validation])
	st.rec.Owner = stringAttr(item[a.Owner])
	st.released = s.isReleased(item)
	if v, ok := item[a.Expiration]; ok {
		n, err := numberAttr(v)
		if err != nil {
			errs = append(errs, fmt.Errorf("attribute %s: %w", a.Expiration, err))
		}
		st.rec.ExpiresAt, st.hasExpiration = time.Unix(n, 0), true
		st.inexact = !isInteger(v)
	}
	if v, ok := item[a.LeaseExpiry]; ok {
		n, err := numberAttr(v)
		if err != nil {
			errs = append(errs, fmt.Errorf("attribute %s: %w", a.LeaseExpiry, err))
		}
		st.rec.LeaseUntil, st.hasLease = time.UnixMilli(n), true
		st.inexact = st.inexact || !isInteger(v)
	}
	if v, ok := item[a.Quarantined]; ok {
		n, err := numberAttr(v)
		if err != nil {
			errs = append(errs, fmt.Errorf("attribute %s: %w", a.Quarantined, err))
		}
		st.rec.Quarantined = time.UnixMilli(n)
	}
	if v, ok := item[a.StrictLease]; ok {
		n, err := numberAttr(v)
		if err != nil {
			errs = append(errs, fmt.Errorf("attribute %s: %w", a.StrictLease, err))
		}
		st.rec.StrictLease = time.UnixMilli(n)
	}
	data, err := s.decodeData(item)
	if err != nil {
		errs = append(errs, fmt.Errorf("attribute %s: %w", a.Data, err))
	}
	st.rec.Data = data
	return st, errors.Join(errs...)
}

func stringAttr(v types.AttributeValue) string {
	if s, ok := v.(*types.AttributeValueMemberS); ok {
		return s.Value
	}
	return ""
}

// isInteger reports whether v is a number that reads exactly as an int64.
func isInteger(v types.AttributeValue) bool {
	n, ok := v.(*types.AttributeValueMemberN)
	if !ok {
		return false
	}
	_, err := strconv.ParseInt(n.Value, 10, 64)
	return err == nil
}

func numberAttr(v types.AttributeValue) (int64, error) {
	n, ok := v.(*types.AttributeValueMemberN)
	if !ok {
		return 0, fmt.Errorf("want a number, have %T", v)
	}
	if i, err := strconv.ParseInt(n.Value, 10, 64); err == nil {
		return i, nil
	}
	f, err := strconv.ParseFloat(n.Value, 64)
	if err != nil {
		return 0, fmt.Errorf("number %q: %w", n.Value, err)
	}
	return int64(f), nil
}

// decodeData returns the stored result as JSON, read in the store's data
// format (see [DataFormat]). A record marked with a format of the other
// encoding, or a value the format cannot have written, is an error naming
// both formats: a record written in the other format is never decoded as if
// it were in this one.
func (s *Store) decodeData(item map[string]types.AttributeValue) ([]byte, error) {
	a := s.attrs
	if b, ok := item[a.DataOmitted].(*types.AttributeValueMemberBOOL); ok && b.Value {
		return nil, nil
	}
	v, ok := item[a.Data]
	if !ok {
		return nil, nil
	}
	if m, ok := item[a.DataFormat]; ok {
		mark, isS := m.(*types.AttributeValueMemberS)
		if !isS {
			return nil, fmt.Errorf("attribute %s: want a string, have %s", a.DataFormat, attrType(m))
		}
		have, known := markedFormat(mark.Value)
		if !known {
			return nil, fmt.Errorf("attribute %s: unknown data format %q", a.DataFormat, mark.Value)
		}
		if have.native() != s.format.native() {
			return nil, &FormatError{Have: have, Want: s.format, Detail: fmt.Sprintf("marked %s %q", a.DataFormat, mark.Value)}
		}
	}
	enc := stringAttr(item[a.DataEncoding])
	if s.format == DataPowertoolsTypeScript {
		if enc != "" {
			return nil, &FormatError{Have: DataJSON, Want: s.format, Detail: fmt.Sprintf("%s is %q", a.DataEncoding, enc)}
		}
		data, err := nativeJSON(v)
		return driver.PlainForm(data), err // no result is sealed in this format (ValidateSealed)
	}
	switch enc {
	case "":
	case encodingGzip:
		var z []byte
		switch v := v.(type) {
		case *types.AttributeValueMemberB:
			z = v.Value
		case *types.AttributeValueMemberS:
			var err error
			if z, err = base64.StdEncoding.DecodeString(v.Value); err != nil {
				return nil, fmt.Errorf("gzip result in base64: %w", err)
			}
		default:
			return nil, fmt.Errorf("gzip result of type %T", v)
		}
		return gunzip(z)
	default:
		return nil, fmt.Errorf("unknown encoding %q", enc)
	}
	switch v := v.(type) {
	case *types.AttributeValueMemberB:
		// A result that is not valid UTF-8, stored as written.
		return v.Value, nil
	case *types.AttributeValueMemberS:
		if !json.Valid([]byte(v.Value)) && !driver.IsSealed([]byte(v.Value)) {
			// A sealed result is not JSON text either (see
			// driver.SealedPrefix): the guard opens it.
			return nil, &FormatError{Have: DataPowertoolsTypeScript, Want: s.format, Detail: "a string that is not JSON text"}
		}
		return []byte(v.Value), nil
	default:
		return nil, &FormatError{Have: DataPowertoolsTypeScript, Want: s.format, Detail: "a value of type " + attrType(v)}
	}
}

// nativeJSON converts a value in DynamoDB's native types to JSON.
func nativeJSON(v types.AttributeValue) ([]byte, error) {
	var buf bytes.Buffer
	if err := writeJSON(&buf, v); err != nil {
		return nil, err
	}
	if !json.Valid(buf.Bytes()) {
		return nil, errors.New("stored value does not convert to valid JSON")
	}
	return buf.Bytes(), nil
}

// attrType names the DynamoDB type of v as DynamoDB spells it.
func attrType(v types.AttributeValue) string {
	switch v.(type) {
	case *types.AttributeValueMemberS:
		return "S"
	case *types.AttributeValueMemberN:
		return "N"
	case *types.AttributeValueMemberB:
		return "B"
	case *types.AttributeValueMemberBOOL:
		return "BOOL"
	case *types.AttributeValueMemberNULL:
		return "NULL"
	case *types.AttributeValueMemberM:
		return "M"
	case *types.AttributeValueMemberL:
		return "L"
	case *types.AttributeValueMemberSS:
		return "SS"
	case *types.AttributeValueMemberNS:
		return "NS"
	case *types.AttributeValueMemberBS:
		return "BS"
	}
	return fmt.Sprintf("%T", v)
}

// encodeData is the stored form of a result that is stored plain (not
// compressed): S holding its JSON text, or, in [DataPowertoolsTypeScript],
// its value in DynamoDB's native types.
func (s *Store) encodeData(data []byte) (types.AttributeValue, error) {
	if s.format == DataPowertoolsTypeScript {
		return nativeValue(data)
	}
	if !utf8.Valid(data) {
		if s.format == DataPowertoolsPython {
			return nil, errors.New("the result is not valid UTF-8, which Powertools for Python cannot read")
		}
		return &types.AttributeValueMemberB{Value: data}, nil
	}
	return attrS(string(data)), nil
}

// maxNesting is the deepest an attribute's value may nest maps and lists
// in DynamoDB: 32 levels counting the attribute itself, so 31 maps or lists
// around a value (DynamoDB refuses the whole write with a ValidationException
// beyond it).
const maxNesting = 31

// jsonDepth is how deep data nests objects and arrays, read as JSON text
// (strings skipped), whether or not it is valid.
func jsonDepth(data []byte) int {
	depth, deepest, inString := 0, 0, false
	for i := 0; i < len(data); i++ {
		c := data[i]
		switch {
		case inString && c == '\\':
			i++
		case c == '"':
			inString = !inString
		case inString:
		case c == '{' || c == '[':
			depth++
			deepest = max(deepest, depth)
		case c == '}' || c == ']':
			depth--
		}
	}
	return deepest
}

// nativeValue converts a JSON document to DynamoDB's native types, as the
// AWS SDK for JavaScript's marshall does: objects to M, arrays to L,
// strings to S, numbers to N (as written), true and false to BOOL, null to
// NULL.
func nativeValue(data []byte) (types.AttributeValue, error) {
	if d := jsonDepth(data); d > maxNesting {
		return nil, fmt.Errorf("the result nests %d objects and arrays deep; DynamoDB stores at most %d", d, maxNesting)
	}
	if json.Valid(data) {
		// Valid JSON is converted as it is read, without the decoder's
		// values in between; the decoder below reports what is not.
		// Its error is not final: an object may name a member twice, and
		// the decoder keeps the later value only (a number DynamoDB cannot
		// store in the earlier one does not fail the result).
		r := nativeReader{data: data}
		if v, err := r.value(); err == nil {
			return v, nil
		}
	}
	dec := json.NewDecoder(bytes.NewReader(data))
	dec.UseNumber()
	var x any
	if err := dec.Decode(&x); err != nil {
		return nil, fmt.Errorf("the result is not JSON: %w", err)
	}
	if _, err := dec.Token(); err != io.EOF {
		return nil, errors.New("the result is not one JSON value")
	}
	return toNative(x)
}

// nativeReader converts a valid JSON document to DynamoDB's native types as
// decoding it with UseNumber and converting the result (toNative) does: the
// same values, a later member of an object named twice replacing the
// earlier, a string's invalid UTF-8 replaced as the decoder replaces it.
type nativeReader struct {
	data []byte
	i    int
}

func (r *nativeReader) space() {
	for r.i < len(r.data) {
		switch r.data[r.i] {
		case ' ', '\t', '\n', '\r':
			r.i++
		default:
			return
		}
	}
}

func (r *nativeReader) value() (types.AttributeValue, error) {
	r.space()
	switch c := r.data[r.i]; c {
	case '{':
		r.i++
		m := map[string]types.AttributeValue{}
		for {
			r.space()
			if r.data[r.i] == '}' {
				r.i++
				return &types.AttributeValueMemberM{Value: m}, nil
			}
			if r.data[r.i] == ',' {
				r.i++
				r.space()
			}
			k := r.string()
			r.space()
			r.i++ // ':'
			v, err := r.value()
			if err != nil {
				return nil, err
			}
			m[k] = v
		}
	case '[':
		r.i++
		l := []types.AttributeValue{}
		for {
			r.space()
			if r.data[r.i] == ']' {
				r.i++
				return &types.AttributeValueMemberL{Value: l}, nil
			}
			if r.data[r.i] == ',' {
				r.i++
			}
			v, err := r.value()
			if err != nil {
				return nil, err
			}
			l = append(l, v)
		}
	case '"':
		return attrS(r.string()), nil
	case 't':
		r.i += 4
		return &types.AttributeValueMemberBOOL{Value: true}, nil
	case 'f':
		r.i += 5
		return &types.AttributeValueMemberBOOL{Value: false}, nil
	case 'n':
		r.i += 4
		return &types.AttributeValueMemberNULL{Value: true}, nil
	}
	start := r.i
	for r.i < len(r.data) && strings.IndexByte("+-.0123456789eE", r.data[r.i]) >= 0 {
		r.i++
	}
	n := string(r.data[start:r.i])
	if err := nativeNumber(n); err != nil {
		return nil, err
	}
	return &types.AttributeValueMemberN{Value: n}, nil
}

// string reads the string at r.i: as written when it has no escape and is
// valid UTF-8, else as json.Unmarshal decodes it.
func (r *nativeReader) string() string {
	start := r.i
	r.i++
	plain := true
	for r.data[r.i] != '"' {
		if r.data[r.i] == '\\' {
			plain = false
			r.i++
		}
		r.i++
	}
	r.i++
	raw := r.data[start:r.i]
	if inner := raw[1 : len(raw)-1]; plain && utf8.Valid(inner) {
		return string(inner)
	}
	var s string
	_ = json.Unmarshal(raw, &s) // a valid JSON string always decodes
	return s
}

func toNative(x any) (types.AttributeValue, error) {
	switch x := x.(type) {
	case nil:
		return &types.AttributeValueMemberNULL{Value: true}, nil
	case bool:
		return &types.AttributeValueMemberBOOL{Value: x}, nil
	case string:
		return attrS(x), nil
	case json.Number:
		if err := nativeNumber(string(x)); err != nil {
			return nil, err
		}
		return &types.AttributeValueMemberN{Value: string(x)}, nil
	case []any:
		l := make([]types.AttributeValue, len(x))
		for i, e := range x {
			v, err := toNative(e)
			if err != nil {
				return nil, err
			}
			l[i] = v
		}
		return &types.AttributeValueMemberL{Value: l}, nil
	case map[string]any:
		m := make(map[string]types.AttributeValue, len(x))
		for k, e := range x {
			v, err := toNative(e)
			if err != nil {
				return nil, err
			}
			m[k] = v
		}
		return &types.AttributeValueMemberM{Value: m}, nil
	}
	return nil, fmt.Errorf("unexpected JSON value %T", x) // not reached: Decode makes only the types above
}

// nativeNumber checks a number of a result in DataPowertoolsTypeScript:
// one DynamoDB stores (dynamoNumber) and Powertools reads back. Its
// unmarshall turns a number beyond JavaScript's safe integers (±2^53−1)
// into a BigInt, which throws for a fraction or an exponent and which
// JSON cannot write: every Powertools delivery of the key would fail. Its
// marshall refuses to write one.
func nativeNumber(n string) error {
	if err := dynamoNumber(n); err != nil {
		return err
	}
	if f, err := strconv.ParseFloat(n, 64); err != nil && !errors.Is(err, strconv.ErrRange) || math.Abs(f) > maxSafeInteger {
		return fmt.Errorf("number %s is beyond JavaScript's safe integers (±2^53−1), which Powertools for TypeScript cannot read back", redact.String(n))
	}
	return nil
}

// maxSafeInteger is JavaScript's Number.MAX_SAFE_INTEGER.
const maxSafeInteger = 1<<53 - 1

// dynamoNumber checks that a JSON number fits DynamoDB's number type: at
// most 38 significant digits, magnitude from 1E-130 to below 1E+126. Its
// errors describe the number (redact.String), never quote it: a result can
// echo the message.
func dynamoNumber(n string) error {
	mant, exp, _ := strings.Cut(strings.ToLower(strings.TrimPrefix(n, "-")), "e")
	whole, frac, _ := strings.Cut(mant, ".")
	digits := strings.TrimLeft(whole+frac, "0")
	if digits == "" {
		return nil // zero, whatever its exponent
	}
	e := 0
	if exp != "" {
		var err error
		if e, err = strconv.Atoi(exp); err != nil {
			return fmt.Errorf("number %s: exponent out of range", redact.String(n))
		}
	}
	// The value is 0.digits × 10^mag.
	mag := e + len(whole) - (len(whole+frac) - len(digits))
	digits = strings.TrimRight(digits, "0")
	if len(digits) > 38 {
		return fmt.Errorf("number %s has %d significant digits, more than the 38 DynamoDB stores", redact.String(n), len(digits))
	}
	if mag > 126 || mag < -129 {
		return fmt.Errorf("number %s is outside the range DynamoDB stores (1E-130 to 9.9…9E+125)", redact.String(n))
	}
	return nil
}

// writeJSON writes a native DynamoDB value as JSON: numbers as written,
// binary as base64 strings, sets as arrays, map keys sorted.
func writeJSON(buf *bytes.Buffer, v types.AttributeValue) error {
	str := func(s string) {
		if plainASCII(s) { // as json.Marshal writes it, without its allocation
			buf.WriteByte('"')
			buf.WriteString(s)
			buf.WriteByte('"')
			return
		}
		b, _ := json.Marshal(s) // a string always marshals
		buf.Write(b)
	}
	list := func(n int, elem func(int) error) error {
		buf.WriteByte('[')
		for i := range n {
			if i > 0 {
				buf.WriteByte(',')
			}
			if err := elem(i); err != nil {
				return err
			}
		}
		buf.WriteByte(']')
		return nil
	}
	switch v := v.(type) {
	case *types.AttributeValueMemberS:
		str(v.Value)
	case *types.AttributeValueMemberN:
		buf.WriteString(v.Value)
	case *types.AttributeValueMemberBOOL:
		buf.WriteString(strconv.FormatBool(v.Value))
	case *types.AttributeValueMemberNULL:
		buf.WriteString("null")
	case *types.AttributeValueMemberB:
		str(base64.StdEncoding.EncodeToString(v.Value))
	case *types.AttributeValueMemberSS:
		return list(len(v.Value), func(i int) error { str(v.Value[i]); return nil })
	case *types.AttributeValueMemberNS:
		return list(len(v.Value), func(i int) error { buf.WriteString(v.Value[i]); return nil })
	case *types.AttributeValueMemberBS:
		return list(len(v.Value), func(i int) error { str(base64.StdEncoding.EncodeToString(v.Value[i])); return nil })
	case *types.AttributeValueMemberL:
		return list(len(v.Value), func(i int) error { return writeJSON(buf, v.Value[i]) })
	case *types.AttributeValueMemberM:
		keys := make([]string, 0, len(v.Value))
		for k := range v.Value {
			keys = append(keys, k)
		}
		slices.Sort(keys)
		buf.WriteByte('{')
		for i, k := range keys {
			if i > 0 {
				buf.WriteByte(',')
			}
			str(k)
			buf.WriteByte(':')
			if err := writeJSON(buf, v.Value[k]); err != nil {
				return err
			}
		}
		buf.WriteByte('}')
	default:
		return fmt.Errorf("stored value of type %T", v)
	}
	return nil
}

// plainASCII reports whether json.Marshal writes s as it is, between
// quotes: printable ASCII without '"', '\' or the characters it escapes
// for HTML ('<', '>', '&').
func plainASCII(s string) bool {
	for i := 0; i < len(s); i++ {
		switch c := s[i]; {
		case c < 0x20 || c > 0x7e, c == '"', c == '\\', c == '<', c == '>', c == '&':
			return false
		}
	}
	return true
}

func gunzip(z []byte) ([]byte, error) {
	out, err := inflate.Gunzip(z, maxInflated)
	if err != nil {
		return nil, fmt.Errorf("gzip result: %w", err)
	}
	return out, nil
}

// numberSize is the most a number attribute of an epoch time takes.
const numberSize = 21

// completedSize is the size of a completed record without its result, by
// DynamoDB's rules (attribute names plus values).
func (s *Store) completedSize(rec driver.Record) int {
	a := s.attrs
	n := 0
	for k, v := range s.key(rec.ID) {
		n += len(k) + len(stringAttr(v))
	}
	n += len(a.Status) + len(driver.StatusCompleted) +
		len(a.Expiration) + numberSize +
		len(a.LeaseExpiry) + numberSize +
		len(a.Owner) + len(rec.Owner) +
		len(a.Data) + len(a.DataFormat) + maxMarkLen +
		max(len(a.DataEncoding)+len(encodingGzip), len(a.DataOmitted)+1)
	if rec.Validation != "" {
		n += len(a.Validation) + len(rec.Validation)
	}
	if !rec.StrictLease.IsZero() { // kept by the completion
		n += len(a.StrictLease) + numberSize
	}
	return n
}
