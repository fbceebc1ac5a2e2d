package ptinterop_test

import (
	"context"
	"crypto/rand"
	"errors"
	"log/slog"
	"testing"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"github.com/sqsonce/sqsonce/internal/testenv/motoserver"
	ptinterop "github.com/sqsonce/sqsonce/internal/testenv/powertools"
	"github.com/sqsonce/sqsonce/middleware/idempotency"
	"github.com/sqsonce/sqsonce/middleware/idempotency/driver"
	"github.com/sqsonce/sqsonce/middleware/idempotency/dynamostore"
	"github.com/sqsonce/sqsonce/middleware/idempotency/jmespath"
)

// layout is how a table's records are keyed, configured alike on both
// sides. The zero layout is Powertools' default: partition key "id"
// holding the record id. With sortKeyAttr, Powertools gets keyAttr,
// sortKeyAttr and staticPkValue (empty: its default, from the driver's
// AWS_LAMBDA_FUNCTION_NAME), and sqsonce the same through
// dynamostore.WithSortKey, with the function's name.
type layout struct {
	keyAttr, sortKeyAttr, staticPk string
}

// sortKeyLayout is a single-table design's: partition key pk, sort key sk,
// Powertools' default static partition value.
var sortKeyLayout = layout{keyAttr: "pk", sortKeyAttr: "sk"}

// create creates the layout's table.
func (l layout) create(t *testing.T, db *dynamodb.Client) string {
	t.Helper()
	if l.sortKeyAttr == "" {
		return motoserver.NewTable(t, db)
	}
	return motoserver.NewTableWithSortKey(t, db, l.keyAttr, l.sortKeyAttr)
}

// options are sqsonce's store options for the layout.
func (l layout) options() []dynamostore.Option {
	if l.sortKeyAttr == "" {
		return nil
	}
	return []dynamostore.Option{
		dynamostore.WithAttributes(dynamostore.Attributes{ID: l.keyAttr}),
		dynamostore.WithSortKey(dynamostore.SortKey{Attr: l.sortKeyAttr, Partition: l.staticPk, FunctionName: ptinterop.FunctionName}),
	}
}

// request sets Powertools' options for the layout.
func (l layout) request(r *ptinterop.Request) {
	r.KeyAttr, r.SortKeyAttr, r.StaticPkValue = l.keyAttr, l.sortKeyAttr, l.staticPk
}

// key is the primary key of the record id where Powertools' documentation
// and source put it: the partition key holds staticPkValue, by default
// "idempotency#" and AWS_LAMBDA_FUNCTION_NAME, and the sort key the id.
func (l layout) key(id string) map[string]types.AttributeValue {
	if l.sortKeyAttr == "" {
		return map[string]types.AttributeValue{"id": &types.AttributeValueMemberS{Value: id}}
	}
	pk := l.staticPk
	if pk == "" {
		pk = "idempotency#" + ptinterop.FunctionName
	}
	return map[string]types.AttributeValue{
		l.keyAttr:     &types.AttributeValueMemberS{Value: pk},
		l.sortKeyAttr: &types.AttributeValueMemberS{Value: id},
	}
}

// TestSortKey runs the interop matrix on one table with a sort key, both
// sides configured as a Powertools user configures sortKeyAttr: every case
// passes as it does on a table keyed by id alone.
func TestSortKey(t *testing.T) {
	for _, tc := range []struct {
		name string
		run  func(*testing.T, table)
	}{
		{"Completed", testCompleted},
		{"InProgress", testInProgress},
		{"Reclaim", testReclaim},
		{"Validation", testValidation},
		{"RecordIDs", testRecordIDs},
		{"MissingKey", testMissingKey},
		{"PowertoolsLateCompletion", testPowertoolsLateCompletion},
	} {
		t.Run(tc.name, func(t *testing.T) { tc.run(t, newLayoutTable(t, sortKeyLayout)) })
	}
}

// TestSortKeyStaticPartition: with staticPkValue set on both sides, the
// records are shared at that partition value; a store whose partition
// differs (here Powertools' default against an explicit one) shares
// nothing and runs the key again.
func TestSortKeyStaticPartition(t *testing.T) {
	shared := layout{keyAttr: "pk", sortKeyAttr: "sk", staticPk: "orders#idempotency"}
	tb := newLayoutTable(t, shared)
	key := "k-" + rand.Text()
	rep := powertools(t, tb, nil, message(key, nil, `"from powertools"`))
	if len(rep.Ran) != 1 {
		t.Fatalf("powertools: %+v", rep)
	}
	id := recordID(t, tb, key)
	out, err := tb.db.GetItem(context.Background(), &dynamodb.GetItemInput{
		TableName: aws.String(tb.name), Key: shared.key(id), ConsistentRead: aws.Bool(true),
	})
	if err != nil || out.Item == nil {
		t.Fatalf("no Powertools record at partition %q, sort key %s: %v", shared.staticPk, id, err)
	}

	s := newSqsonce(t, tb)
	again := message(key, nil, `"not this"`)
	if resp := s.run(t, again); len(resp.BatchItemFailures) != 0 || s.didRun(again.MessageId) || !sameJSON(t, s.result(again.MessageId).val, `"from powertools"`) {
		t.Errorf("sqsonce at the same partition: failures %v, ran %v, result %#v; want Powertools' result replayed",
			resp.BatchItemFailures, s.didRun(again.MessageId), s.result(again.MessageId).val)
	}

	// The same table, sqsonce at Powertools' default partition instead.
	elsewhere := tb
	elsewhere.layout = sortKeyLayout
	store, err := dynamostore.New(tb.db, tb.name, append(sortKeyLayout.options(), dynamostore.WithDataFormat(dynamostore.DataPowertoolsTypeScript))...)
	if err != nil {
		t.Fatal(err)
	}
	elsewhere.store = store
	s = newSqsonce(t, elsewhere)
	third := message(key, nil, `"ran again"`)
	if resp := s.run(t, third); len(resp.BatchItemFailures) != 0 || !s.didRun(third.MessageId) {
		t.Errorf("sqsonce at another partition: failures %v, ran %v; want the key run again (nothing shared)", resp.BatchItemFailures, s.didRun(third.MessageId))
	}
}

// TestReleasedClaim: an operation that fails in sqsonce releases its claim
// (in place: its lease ended, no owner); Powertools then claims the key at
// once, runs it, and sqsonce replays Powertools' result. On both layouts.
func TestReleasedClaim(t *testing.T) {
	for _, l := range []struct {
		name string
		l    layout
	}{{"id", layout{}}, {"sort key", sortKeyLayout}} {
		t.Run(l.name, func(t *testing.T) {
			tb := newLayoutTable(t, l.l)
			g, err := idempotency.New(idempotency.Config{
				Store: tb.store, Namespace: keyPrefix, Format: idempotency.FormatPowertoolsTypeScript,
				Logger: slog.New(slog.DiscardHandler),
			})
			if err != nil {
				t.Fatal(err)
			}
			key := "k-" + rand.Text()
			first := message(key, nil, `"unused"`)
			k, err := jmespath.MustCompile(keyJMESPath).Select(first)
			if err != nil {
				t.Fatal(err)
			}
			failure := errors.New("the model call failed")
			if _, err := idempotency.Do(context.Background(), g, k, func(context.Context) (string, error) { return "", failure }); !errors.Is(err, failure) || errors.Is(err, driver.ErrLeaseLost) {
				t.Fatalf("sqsonce: %v, want the operation's error and a released claim", err)
			}
			again := message(key, nil, `"from powertools"`)
			rep := powertools(t, tb, nil, again)
			if len(rep.Ran) != 1 || rep.Events[0].Records[0].Status != "success" {
				t.Fatalf("Powertools did not take the released key: %+v", rep)
			}
			s := newSqsonce(t, tb)
			third := message(key, nil, `"not this"`)
			if resp := s.run(t, third); len(resp.BatchItemFailures) != 0 || s.didRun(third.MessageId) || !sameJSON(t, s.result(third.MessageId).val, `"from powertools"`) {
				t.Errorf("sqsonce after Powertools: failures %v, ran %v, result %#v; want Powertools' result",
					resp.BatchItemFailures, s.didRun(third.MessageId), s.result(third.MessageId).val)
			}
		})
	}
}

// recordID is the record id both sides compute for key.
func recordID(t *testing.T, tb table, key string) string {
	t.Helper()
	g, err := idempotency.New(idempotency.Config{Store: tb.store, Namespace: keyPrefix, Format: idempotency.FormatPowertoolsTypeScript})
	if err != nil {
		t.Fatal(err)
	}
	k, err := jmespath.MustCompile(keyJMESPath).Select(message(key, nil, `1`))
	if err != nil {
		t.Fatal(err)
	}
	id, err := g.ID(k)
	if err != nil {
		t.Fatal(err)
	}
	return id
}
