package dynamostore_test

import (
	"context"
	"crypto/rand"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"github.com/sqsonce/sqsonce/internal/testenv/motoserver"
	"github.com/sqsonce/sqsonce/middleware/idempotency/driver"
	"github.com/sqsonce/sqsonce/middleware/idempotency/dynamostore"
)

// TestDataFormatMarked: every result the store writes is marked with its
// data format, so a record completed in one format and read by a store of
// another encoding fails with a *FormatError naming both, even when the
// value could have been written by either (S "123" is the string "123" in
// TypeScript's native types and the number 123 as JSON text). The two JSON
// text formats read each other's records; a record without the mark is read
// as configured.
func TestDataFormatMarked(t *testing.T) {
	ctx := context.Background()
	e := newEnv(t)
	stores := map[dynamostore.DataFormat]*dynamostore.Store{}
	for _, f := range []dynamostore.DataFormat{dynamostore.DataJSON, dynamostore.DataPowertoolsPython, dynamostore.DataPowertoolsTypeScript} {
		st, err := dynamostore.New(e.db, e.table, dynamostore.WithDataFormat(f))
		if err != nil {
			t.Fatal(err)
		}
		stores[f] = st
	}
	summaries := motoserver.NewTable(t, e.db)
	marks := map[dynamostore.DataFormat]string{
		dynamostore.DataJSON:                 "json",
		dynamostore.DataPowertoolsPython:     "powertools-python",
		dynamostore.DataPowertoolsTypeScript: "powertools-typescript",
	}

	// write completes a record of result in format w, with an attached
	// write when tx is set (the transaction path), and checks its mark.
	write := func(t *testing.T, w dynamostore.DataFormat, result string, tx bool) string {
		t.Helper()
		key := "mark#" + rand.Text()
		rec := claim(key, time.Now(), time.Minute)
		if _, loaded, err := stores[w].Acquire(ctx, rec, time.Now(), driver.Takeover); err != nil || loaded {
			t.Fatalf("Acquire: loaded=%v err=%v", loaded, err)
		}
		done := completed(rec, result)
		if tx {
			done.Attached = []any{summaryPut(summaries, rand.Text(), 1)}
		}
		if _, err := stores[w].Complete(ctx, done); err != nil {
			t.Fatal(err)
		}
		if got := stringOf(e.raw(t, e.table, key)["data_format"]); got != marks[w] {
			t.Fatalf("data_format = %q, want %q", got, marks[w])
		}
		return key
	}

	mismatches := []struct {
		writer, reader dynamostore.DataFormat
		result         string
	}{
		{dynamostore.DataPowertoolsTypeScript, dynamostore.DataJSON, `"123"`},
		{dynamostore.DataPowertoolsTypeScript, dynamostore.DataPowertoolsPython, `"123"`},
		{dynamostore.DataJSON, dynamostore.DataPowertoolsTypeScript, `{"document_id":"d1"}`},
		{dynamostore.DataPowertoolsPython, dynamostore.DataPowertoolsTypeScript, `{"document_id":"d1"}`},
		{dynamostore.DataJSON, dynamostore.DataPowertoolsTypeScript, `"123"`},
	}
	for _, tc := range mismatches {
		for _, tx := range []bool{false, true} {
			name := tc.writer.String() + " read by " + tc.reader.String() + " " + tc.result
			if tx {
				name += " transaction"
			}
			t.Run("refused/"+name, func(t *testing.T) {
				key := write(t, tc.writer, tc.result, tx)
				got, _, err := stores[tc.reader].Acquire(ctx, claim(key, time.Now(), time.Minute), time.Now(), driver.Takeover)
				var fe *dynamostore.FormatError
				if !errors.As(err, &fe) {
					t.Fatalf("Acquire = %q, %v; want a *FormatError", got.Data, err)
				}
				if fe.Have != tc.writer || fe.Want != tc.reader {
					t.Errorf("FormatError Have %v, Want %v; want %v, %v", fe.Have, fe.Want, tc.writer, tc.reader)
				}
				msg := err.Error()
				for _, w := range []string{"native DynamoDB types (Powertools TypeScript)", "JSON text", `data_format "` + marks[tc.writer] + `"`} {
					if !strings.Contains(msg, w) {
						t.Errorf("error %q does not say %q", msg, w)
					}
				}
			})
		}
	}

	compatible := []struct {
		writer, reader dynamostore.DataFormat
	}{
		{dynamostore.DataJSON, dynamostore.DataPowertoolsPython},
		{dynamostore.DataPowertoolsPython, dynamostore.DataJSON},
		{dynamostore.DataPowertoolsTypeScript, dynamostore.DataPowertoolsTypeScript},
	}
	for _, tc := range compatible {
		for _, result := range []string{`"123"`, `123`, `{"document_id":"d1"}`} {
			t.Run("read/"+tc.writer.String()+" read by "+tc.reader.String()+" "+result, func(t *testing.T) {
				key := write(t, tc.writer, result, false)
				got, loaded, err := stores[tc.reader].Acquire(ctx, claim(key, time.Now(), time.Minute), time.Now(), driver.Takeover)
				if err != nil || !loaded {
					t.Fatalf("Acquire: loaded=%v err=%v", loaded, err)
				}
				if !jsonEqual(got.Data, []byte(result)) {
					t.Errorf("read %s, want %s", got.Data, result)
				}
			})
		}
	}

	// Without the mark (as Powertools writes), S "123" is read as the
	// configured format says: the number 123 as JSON text, the string
	// "123" in native types.
	unmarked := map[dynamostore.DataFormat]string{
		dynamostore.DataJSON:                 `123`,
		dynamostore.DataPowertoolsPython:     `123`,
		dynamostore.DataPowertoolsTypeScript: `"123"`,
	}
	for f, want := range unmarked {
		t.Run("unmarked/"+f.String(), func(t *testing.T) {
			key := "mark#" + rand.Text()
			e.put(t, e.table, map[string]types.AttributeValue{"id": s(key), "status": s("COMPLETED"),
				"expiration": n(time.Now().Add(time.Hour).Unix()), "data": s("123")})
			got, loaded, err := stores[f].Acquire(ctx, claim(key, time.Now(), time.Minute), time.Now(), driver.Takeover)
			if err != nil || !loaded {
				t.Fatalf("Acquire: loaded=%v err=%v", loaded, err)
			}
			if !jsonEqual(got.Data, []byte(want)) {
				t.Errorf("read %s, want %s", got.Data, want)
			}
		})
	}

	// A mark this store does not know is an error, not a guess.
	t.Run("unknown mark", func(t *testing.T) {
		key := "mark#" + rand.Text()
		e.put(t, e.table, map[string]types.AttributeValue{"id": s(key), "status": s("COMPLETED"),
			"expiration": n(time.Now().Add(time.Hour).Unix()), "data": s("123"), "data_format": s("yaml")})
		_, _, err := stores[dynamostore.DataJSON].Acquire(ctx, claim(key, time.Now(), time.Minute), time.Now(), driver.Takeover)
		if err == nil || !strings.Contains(err.Error(), `unknown data format "yaml"`) {
			t.Errorf("Acquire = %v, want an unknown data format error", err)
		}
	})
}
