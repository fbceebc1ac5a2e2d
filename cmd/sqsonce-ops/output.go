package main

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"strings"
	"time"

	"github.com/sqsonce/sqsonce/middleware/idempotency/driver"
	"github.com/sqsonce/sqsonce/middleware/idempotency/dynamostore"
)

// The states of a record at a given time, as inspect and list show them.
const (
	stateAbsent      = "absent"       // no record: the next delivery runs
	stateReleased    = "released"     // a claim released and kept, marked (DynamoDB): the next delivery runs
	stateCompleted   = "completed"    // the next delivery replays the result
	stateInProgress  = "in_progress"  // a live lease: the next delivery is refused as in progress
	stateLeaseLapsed = "lease_lapsed" // stuck: the next delivery takes the key over and runs; in strict mode (a strict claim, or function) quarantines it
	stateQuarantined = "quarantined"  // strict mode stopped the key: an operator decides
	stateExpired     = "expired"      // past its expiry: the next delivery runs
	stateUnknown     = "unknown"      // a status neither INPROGRESS nor COMPLETED
)

// state is what rec means at t.
func state(rec driver.Record, t time.Time) string {
	expired := !rec.ExpiresAt.IsZero() && rec.ExpiresAt.Before(t)
	switch {
	case rec.Status == driver.StatusCompleted && !expired:
		return stateCompleted
	case rec.Status == driver.StatusCompleted, rec.Status == driver.StatusInProgress && expired:
		return stateExpired
	case rec.Status == driver.StatusInProgress && !rec.Quarantined.IsZero():
		return stateQuarantined
	case rec.Status == driver.StatusInProgress && !rec.LeaseEnd().IsZero() && rec.LeaseEnd().Before(t):
		// A claim without a lease end (written by another library) is
		// held until it expires.
		return stateLeaseLapsed
	case rec.Status == driver.StatusInProgress:
		return stateInProgress
	}
	return stateUnknown
}

// recordView is a record as the commands print it. It never holds the
// stored result, only its size: results may hold personal data.
type recordView struct {
	ID          string     `json:"id"`
	State       string     `json:"state"`
	Status      string     `json:"status,omitempty"`
	LeaseUntil  *time.Time `json:"lease_until,omitempty"`
	ExpiresAt   *time.Time `json:"expires_at,omitempty"`
	Owner       string     `json:"owner,omitempty"`
	Quarantined *time.Time `json:"quarantined,omitempty"`
	DataBytes   int        `json:"data_bytes"`
	StoredBytes int        `json:"stored_bytes"`
	DataFormat  string     `json:"data_format,omitempty"`
	Encoding    string     `json:"data_encoding,omitempty"`
	DataOmitted bool       `json:"data_omitted,omitempty"`
	Sealed      bool       `json:"sealed,omitempty"`   // the result is sealed (idempotency.Config.Sealer)
	Opened      bool       `json:"opened,omitempty"`   // sealed, and opened with --seal-key: DataBytes is the result's
	Withheld    bool       `json:"withheld,omitempty"` // the operation ran, its result could not be sealed (driver.WithheldData)
	Validation  bool       `json:"validation"`
	Problem     string     `json:"problem,omitempty"`
}

func timePtr(t time.Time) *time.Time {
	if t.IsZero() {
		return nil
	}
	u := t.UTC()
	return &u
}

// view is rec as printed; err is the problem its read reported.
func view(o *ops, id string, rec driver.StoredRecord, err error, t time.Time) recordView {
	v := recordView{ID: id}
	if errors.Is(err, dynamostore.ErrReleased) {
		v.State = stateReleased
		return v
	}
	if errors.Is(err, driver.ErrNotFound) {
		v.State = stateAbsent
		return v
	}
	v.State = state(rec.Record, t)
	v.Status = string(rec.Status)
	v.LeaseUntil, v.ExpiresAt, v.Quarantined = timePtr(rec.LeaseEnd()), timePtr(rec.ExpiresAt), timePtr(rec.Quarantined)
	v.Owner = rec.Owner
	v.DataBytes, v.StoredBytes = len(rec.Data), rec.Size
	v.DataFormat, v.Encoding, v.DataOmitted = rec.DataMark, rec.Encoding, rec.Omitted
	v.Sealed = driver.IsSealed(rec.Data)
	v.Withheld = driver.IsWithheld(rec.Data)
	v.Validation = rec.Validation != ""
	var problems []string
	if err != nil {
		problems = append(problems, err.Error())
	}
	if v.Sealed && !v.Withheld && o.sealer != nil {
		// Opened to check it opens, as the function would: its size only
		// is shown, never its content.
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		plain, err := driver.OpenData(ctx, o.sealer, id, rec.Data)
		cancel()
		if err != nil {
			problems = append(problems, err.Error())
		} else {
			v.DataBytes, v.Opened = len(plain), true
		}
	}
	if p := namespaceProblem(o, id); p != "" {
		problems = append(problems, p)
	}
	v.Problem = strings.Join(problems, "; ")
	return v
}

// namespaceProblem says why id is not a record id of the configured
// namespace, "{namespace}#{digest}", or "". A digest holds no "#" (it is
// hex or base64), so "a#b#{digest}" is of namespace "a#b", not "a".
func namespaceProblem(o *ops, id string) string {
	digest, ok := strings.CutPrefix(id, o.g.namespace+"#")
	if !ok || digest == "" || strings.Contains(digest, "#") {
		return fmt.Sprintf("the id is not in namespace %q (--namespace)", o.g.namespace)
	}
	return ""
}

// when is t for people: UTC, and how far from now.
func when(t *time.Time, at time.Time) string {
	if t == nil {
		return "-"
	}
	d := t.Sub(at).Round(time.Second)
	rel := "in " + d.String()
	if d < 0 {
		rel = (-d).String() + " ago"
	}
	return t.Format(time.RFC3339) + " (" + rel + ")"
}

// printRecord prints v as aligned lines.
func printRecord(w io.Writer, v recordView, at time.Time) {
	line := func(name, value string) { fmt.Fprintf(w, "  %-12s %s\n", name, value) }
	fmt.Fprintf(w, "record %s\n", v.ID)
	line("state", v.State)
	switch v.State {
	case stateReleased:
		line("note", "a claim released by its worker (the operation failed) or an operator, kept marked until it expires; the next delivery runs the operation")
		return
	case stateAbsent:
		// Redis and PostgreSQL delete a released claim.
		line("note", "no record a delivery would find: released (Redis, PostgreSQL), expired, or never written in this namespace, or the wrong key source; "+
			"with the function's key source, the next delivery runs the operation")
		return
	}
	line("status", v.Status)
	if v.Status == string(driver.StatusInProgress) {
		line("lease until", when(v.LeaseUntil, at))
	}
	line("expires", when(v.ExpiresAt, at))
	line("owner", orDash(v.Owner))
	line("quarantined", when(v.Quarantined, at))
	data := fmt.Sprintf("%d bytes of JSON, %d stored", v.DataBytes, v.StoredBytes)
	switch {
	case v.DataOmitted:
		data = "omitted: the result was too large to store"
	case v.Withheld:
		data = "withheld: the operation ran, its result could not be sealed; deliveries fail, the operation is not run again"
	case v.Opened:
		data = fmt.Sprintf("sealed: %d bytes of JSON (opened with --seal-key), %d stored", v.DataBytes, v.StoredBytes)
	case v.Sealed:
		data = fmt.Sprintf("sealed: %d bytes stored, readable only with the guard's Sealer (--seal-key)", v.StoredBytes)
	}
	line("data", data)
	line("data format", orDash(v.DataFormat)+", encoding "+orDash(v.Encoding))
	line("validation", map[bool]string{true: "yes", false: "no"}[v.Validation])
	if v.Problem != "" {
		line("problem", v.Problem)
	}
}

func orDash(s string) string {
	if s == "" {
		return "-"
	}
	return s
}

// printJSON prints v as indented JSON.
func printJSON(w io.Writer, v any) {
	b, _ := json.MarshalIndent(v, "", "  ") // our own types always marshal
	fmt.Fprintln(w, string(b))
}

// jsonValue reports whether s is exactly one JSON value.
func jsonValue(s string) bool {
	dec := json.NewDecoder(strings.NewReader(s))
	var v json.RawMessage
	if err := dec.Decode(&v); err != nil {
		return false
	}
	_, err := dec.Token()
	return err == io.EOF && json.Valid([]byte(s))
}

// jsonString is s as a JSON string.
func jsonString(s string) (string, error) {
	var buf bytes.Buffer
	enc := json.NewEncoder(&buf)
	enc.SetEscapeHTML(false)
	if err := enc.Encode(s); err != nil {
		return "", err
	}
	return strings.TrimSuffix(buf.String(), "\n"), nil
}
