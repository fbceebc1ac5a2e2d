package dynamostore_test

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/sqsonce/sqsonce/internal/testenv/motoserver"
	"github.com/sqsonce/sqsonce/middleware/idempotency/driver"
	"github.com/sqsonce/sqsonce/middleware/idempotency/dynamostore"
)

// TestInspectorSortKey: a store with a sort key lists only its own
// partition's records (its Inspector cases run in TestConformanceSortKey).
func TestInspectorSortKey(t *testing.T) {
	db := moto.DynamoDB(t)
	table := motoserver.NewTableWithSortKey(t, db, "pk", "sk")
	st, err := dynamostore.New(db, table, dynamostore.WithAttributes(dynamostore.Attributes{ID: "pk"}),
		dynamostore.WithSortKey(dynamostore.SortKey{Attr: "sk", FunctionName: "fn"}))
	if err != nil {
		t.Fatal(err)
	}
	// A record of another function, in another partition of the table.
	other, err := dynamostore.New(db, table, dynamostore.WithAttributes(dynamostore.Attributes{ID: "pk"}),
		dynamostore.WithSortKey(dynamostore.SortKey{Attr: "sk", FunctionName: "other"}))
	if err != nil {
		t.Fatal(err)
	}
	now := time.Now()
	rec := claim("elsewhere#1", now, time.Minute)
	if _, _, err := other.Acquire(context.Background(), rec, now, driver.Takeover); err != nil {
		t.Fatal(err)
	}
	for got, err := range st.List(context.Background(), driver.ListOptions{}) {
		if err != nil {
			t.Fatal(err)
		}
		if got.ID == rec.ID {
			t.Errorf("listed a record of another partition: %+v", got)
		}
	}
}

// TestInspectFormat: a record whose result is in another data format is
// shown without its result, with a *FormatError, by Inspect and by List.
func TestInspectFormat(t *testing.T) {
	e := newEnv(t)
	ts, err := dynamostore.New(e.db, e.table, dynamostore.WithDataFormat(dynamostore.DataPowertoolsTypeScript))
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	now := time.Now()
	rec := claim("fmt#1", now, time.Minute)
	if _, _, err := ts.Acquire(ctx, rec, now, driver.Takeover); err != nil {
		t.Fatal(err)
	}
	if _, err := ts.Complete(ctx, completed(rec, `{"a":[1,2]}`)); err != nil {
		t.Fatal(err)
	}
	got, err := ts.Inspect(ctx, rec.ID)
	if err != nil || got.DataMark != "powertools-typescript" || string(got.Data) != `{"a":[1,2]}` {
		t.Fatalf("inspect in its own format: %+v, %v", got, err)
	}
	got, err = e.store.Inspect(ctx, rec.ID)
	var fe *dynamostore.FormatError
	if !errors.As(err, &fe) {
		t.Fatalf("inspect in another format: %v, want a *FormatError", err)
	}
	if got.ID != rec.ID || got.Status != driver.StatusCompleted || got.Owner != rec.Owner || got.Data != nil || got.DataMark != "powertools-typescript" {
		t.Errorf("inspect in another format: %+v", got)
	}
	n := 0
	for got, err := range e.store.List(ctx, driver.ListOptions{Prefix: "fmt#"}) {
		n++
		if !errors.As(err, &fe) || got.ID != rec.ID {
			t.Errorf("list in another format: %+v, %v", got, err)
		}
	}
	if n != 1 {
		t.Errorf("listed %d records, want 1", n)
	}
}

// TestInspectEncoding: a compressed result is reported with its encoding
// and its stored size.
func TestInspectEncoding(t *testing.T) {
	e := newEnv(t, dynamostore.WithCompressAbove(0))
	ctx := context.Background()
	now := time.Now()
	rec := claim("gz#1", now, time.Minute)
	if _, _, err := e.store.Acquire(ctx, rec, now, driver.Takeover); err != nil {
		t.Fatal(err)
	}
	data := `{"text":"` + "aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa" + `"}`
	if _, err := e.store.Complete(ctx, completed(rec, data)); err != nil {
		t.Fatal(err)
	}
	got, err := e.store.Inspect(ctx, rec.ID)
	if err != nil || got.Encoding != "gzip" || got.Size == 0 || got.Size >= len(data) || string(got.Data) != data {
		t.Fatalf("inspect a compressed result: %+v (size %d of %d), %v", got, got.Size, len(data), err)
	}
}

// TestInspectReleased: a released claim, which the store keeps marked, is
// no record to Inspect (driver.ErrNotFound) and says it was released
// (ErrReleased); a record never written is only not found.
func TestInspectReleased(t *testing.T) {
	db := moto.DynamoDB(t)
	st, err := dynamostore.New(db, motoserver.NewTable(t, db))
	if err != nil {
		t.Fatal(err)
	}
	ctx, now := context.Background(), time.Now()
	rec := claim("ns#released", now, time.Minute)
	if _, _, err := st.Acquire(ctx, rec, now, driver.NoTakeover); err != nil {
		t.Fatal(err)
	}
	if err := st.Release(ctx, rec.ID, rec.Owner); err != nil {
		t.Fatal(err)
	}
	if _, err := st.Inspect(ctx, rec.ID); !errors.Is(err, driver.ErrNotFound) || !errors.Is(err, dynamostore.ErrReleased) {
		t.Errorf("Inspect of a released claim: %v; want ErrNotFound and ErrReleased", err)
	}
	if _, err := st.Inspect(ctx, "ns#never"); !errors.Is(err, driver.ErrNotFound) || errors.Is(err, dynamostore.ErrReleased) {
		t.Errorf("Inspect of no record: %v; want ErrNotFound only", err)
	}
}
