package chaos

import (
	"bytes"
	"context"
	"errors"
	"slices"
	"testing"
	"time"

	"github.com/sqsonce/sqsonce/middleware/idempotency/driver"
	"github.com/sqsonce/sqsonce/middleware/idempotency/memstore"
	"github.com/sqsonce/sqsonce/test/history"
)

// attachless is memstore with the AttachValidator dynamostore has: it
// takes no attached writes.
type attachless struct{ *memstore.Store }

func (attachless) ValidateAttached(string, []any) error { return driver.ErrAttachUnsupported }

// lossy applies releases and loses their answers.
type lossy struct{ attachless }

func (l lossy) Release(ctx context.Context, id, owner string) error {
	if err := l.attachless.Release(ctx, id, owner); err != nil {
		return err
	}
	return errors.New("connection reset")
}

// TestRecordStore drives the recording store through each answer the
// history tells apart and checks what it recorded: the store's answer (not
// the guard's report), the owners, the found record's owner and result,
// and the delivery from the call's context.
func TestRecordStore(t *testing.T) {
	var buf bytes.Buffer
	hw, err := history.NewWriter(&buf, history.Header{Run: "r", Proc: "w0.0"}, history.WriterOptions{})
	if err != nil {
		t.Fatal(err)
	}
	w := &worker{cfg: WorkerConfig{Name: "w0.0", Reader: history.ReaderSqsonce}, hist: hw}
	s := &recordStore{next: attachless{memstore.New()}, w: w}
	ctx := context.WithValue(context.Background(), deliveryKey{}, &delivery{d: "w0.0/1", key: "k1", payload: "p1"})

	now := time.Now()
	rec := func(owner string, lease time.Duration) driver.Record {
		return driver.Record{ID: "chaos#k1", Status: driver.StatusInProgress, Owner: owner,
			LeaseUntil: now.Add(lease), ExpiresAt: now.Add(time.Hour)}
	}
	if _, _, err := s.Acquire(ctx, rec("o1", time.Second), now, driver.Takeover); err != nil {
		t.Fatal(err)
	}
	if _, _, err := s.Acquire(ctx, rec("o2", time.Second), now, driver.Takeover); err != nil {
		t.Fatal(err)
	}
	if _, _, err := s.Acquire(ctx, rec("o3", 3*time.Second), now.Add(2*time.Second), driver.Takeover); err != nil {
		t.Fatal(err)
	}
	done := func(owner string) driver.Record {
		r := rec(owner, 0)
		r.Status, r.Data = driver.StatusCompleted, []byte(`{"run":"w0.0-3","key":"k1"}`)
		return r
	}
	if _, err := s.Complete(ctx, done("o1")); err == nil {
		t.Error("a completion over another owner's claim succeeded")
	}
	if _, err := s.Complete(ctx, done("o3")); err != nil {
		t.Fatal(err)
	}
	if _, _, err := s.Acquire(ctx, rec("o4", time.Second), now.Add(2*time.Second), driver.Takeover); err != nil {
		t.Fatal(err)
	}
	if err := s.Release(ctx, "chaos#k1", "o4"); err == nil {
		t.Error("a release of a completed record succeeded")
	}
	// A release whose answer is lost after the store applied it is
	// recorded as applied: the record reads back released.
	lost := &recordStore{next: lossy{attachless{memstore.New()}}, w: w}
	if _, _, err := lost.Acquire(ctx, rec("o5", time.Second), now, driver.Takeover); err != nil {
		t.Fatal(err)
	}
	if err := lost.Release(ctx, "chaos#k1", "o5"); err == nil {
		t.Error("the lossy release answered")
	}

	f, err := history.Read(&buf)
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, e := range f.Events {
		if e.D != "w0.0/1" {
			t.Errorf("event %d: delivery %q, want w0.0/1", e.Seq, e.D)
		}
		got = append(got, string(e.Ev)+" "+string(e.Resp)+" "+e.Owner+" prev="+e.Prev+" result="+e.Result+" payload="+e.Payload)
	}
	want := []string{
		"claim claimed o1 prev= result= payload=p1",
		"claim in_progress o2 prev=o1 result= payload=p1",
		"claim taken_over o3 prev=o1 result= payload=p1",
		"complete lease_lost o1 prev= result= payload=",
		"complete ok o3 prev= result=w0.0-3 payload=",
		"claim replayed o4 prev=o3 result=w0.0-3 payload=p1",
		"release lease_lost o4 prev= result= payload=",
		"claim claimed o5 prev= result= payload=p1",
		"release ok o5 prev= result= payload=",
	}
	if !slices.Equal(got, want) {
		t.Errorf("recorded:\n%q\nwant\n%q", got, want)
	}
	if e := f.Events[0]; e.Reader != history.ReaderSqsonce || e.Lease != now.Add(time.Second).UnixMilli() || e.Clock != now.UnixNano() {
		t.Errorf("claim recorded as %+v", e)
	}
}
