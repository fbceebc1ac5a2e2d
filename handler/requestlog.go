package handler

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"log/slog"
	"os"
	"sync"
	"time"

	"github.com/gowebpki/jcs"
)

// CallRecord is one line of the request log: one provider call.
type CallRecord struct {
	Time        time.Time `json:"time"`         // when the call was made
	RecordID    string    `json:"record_id"`    // the idempotency record id, "{namespace}#{digest}"
	MessageID   string    `json:"message_id"`   // the SQS message whose delivery made the call
	Provider    string    `json:"provider"`     // Provider.Name
	Model       string    `json:"model"`        // the model asked
	RequestHash string    `json:"request_hash"` // SHA-256 of the call's canonical JSON
}

// RequestLog records provider calls, one [CallRecord] per call.
type RequestLog interface {
	Append(ctx context.Context, rec CallRecord) error
}

// LogRequests returns p with every call recorded in log before it is made.
// If the line cannot be written the call is not made, so the log never
// misses a call. The key and message ids come from the [Handler] that makes
// the call. now is the clock; nil means [time.Now].
func LogRequests(p Provider, log RequestLog, now func() time.Time) Provider {
	if now == nil {
		now = time.Now
	}
	return loggedProvider{p: p, log: log, now: now}
}

type loggedProvider struct {
	p   Provider
	log RequestLog
	now func() time.Time
}

func (l loggedProvider) Name() string { return l.p.Name() }

func (l loggedProvider) Complete(ctx context.Context, c Call) (Completion, error) {
	info, _ := ctx.Value(callInfoKey{}).(callInfo)
	hash, err := RequestHash(c)
	if err != nil {
		return Completion{}, err
	}
	rec := CallRecord{
		Time:        l.now().UTC(),
		RecordID:    info.recordID,
		MessageID:   info.messageID,
		Provider:    l.p.Name(),
		Model:       c.Model,
		RequestHash: hash,
	}
	if err := l.log.Append(ctx, rec); err != nil {
		return Completion{}, fmt.Errorf("handler: request log: %w", err)
	}
	return l.p.Complete(ctx, c)
}

// RequestHash is the hex SHA-256 of the canonical JSON (RFC 8785) of c: equal
// calls have equal hashes.
func RequestHash(c Call) (string, error) {
	b, err := json.Marshal(c)
	if err == nil {
		b, err = jcs.Transform(b)
	}
	if err != nil {
		return "", fmt.Errorf("handler: request hash: %w", err)
	}
	sum := sha256.Sum256(b)
	return hex.EncodeToString(sum[:]), nil
}

// callInfo is what the Handler tells the request log about a call.
type callInfo struct{ recordID, messageID string }

type callInfoKey struct{}

// FileLog is a [RequestLog] appended to a local file as JSON lines. Each line
// is written with one write to a file opened with O_APPEND, so several
// processes may share one file without interleaving lines.
type FileLog struct {
	f *os.File
}

var _ RequestLog = (*FileLog)(nil)

// OpenFileLog opens (creating if needed, readable by its owner only: mode
// 0600) the request log file at path. An existing file keeps its mode.
func OpenFileLog(path string) (*FileLog, error) {
	f, err := os.OpenFile(path, os.O_WRONLY|os.O_APPEND|os.O_CREATE, 0o600)
	if err != nil {
		return nil, fmt.Errorf("handler: request log: %w", err)
	}
	return &FileLog{f: f}, nil
}

// Append implements [RequestLog].
func (l *FileLog) Append(_ context.Context, rec CallRecord) error {
	b, err := json.Marshal(rec)
	if err != nil {
		return err
	}
	_, err = l.f.Write(append(b, '\n'))
	return err
}

// Close closes the file.
func (l *FileLog) Close() error { return l.f.Close() }

// SlogLog is a [RequestLog] written as structured log lines, message
// "provider call": inside Lambda a JSON handler on standard output puts them
// in CloudWatch Logs, where they can be counted.
type SlogLog struct {
	Logger *slog.Logger // where the lines go; required
}

var _ RequestLog = SlogLog{}

// Append implements [RequestLog].
func (l SlogLog) Append(ctx context.Context, rec CallRecord) error {
	l.Logger.LogAttrs(ctx, slog.LevelInfo, "provider call",
		slog.String("record_id", rec.RecordID),
		slog.String("message_id", rec.MessageID),
		slog.String("provider", rec.Provider),
		slog.String("model", rec.Model),
		slog.String("request_hash", rec.RequestHash),
	)
	return nil
}

// Calls is an in-memory [RequestLog] that also counts: for tests and the
// local runner's summary line. The zero value is ready to use.
type Calls struct {
	mu   sync.Mutex
	recs []CallRecord
}

var _ RequestLog = (*Calls)(nil)

// Append implements [RequestLog].
func (c *Calls) Append(_ context.Context, rec CallRecord) error {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.recs = append(c.recs, rec)
	return nil
}

// Records returns the calls logged so far, in order.
func (c *Calls) Records() []CallRecord {
	c.mu.Lock()
	defer c.mu.Unlock()
	return append([]CallRecord(nil), c.recs...)
}

// Len returns the number of calls logged so far.
func (c *Calls) Len() int {
	c.mu.Lock()
	defer c.mu.Unlock()
	return len(c.recs)
}

// Tee is a [RequestLog] that appends to each of its logs in turn, stopping at
// the first error.
type Tee []RequestLog

// Append implements [RequestLog].
func (t Tee) Append(ctx context.Context, rec CallRecord) error {
	for _, l := range t {
		if err := l.Append(ctx, rec); err != nil {
			return err
		}
	}
	return nil
}
