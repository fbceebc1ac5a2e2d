package dynamosink_test

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"testing"

	"github.com/aws/aws-lambda-go/events"
	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"github.com/sqsonce/sqsonce/handler"
	"github.com/sqsonce/sqsonce/handler/dynamosink"
	"github.com/sqsonce/sqsonce/internal/testenv/motoserver"
	"github.com/sqsonce/sqsonce/middleware/idempotency"
	"github.com/sqsonce/sqsonce/middleware/idempotency/driver"
	"github.com/sqsonce/sqsonce/middleware/idempotency/dynamostore"
)

var moto = motoserver.New()

func TestMain(m *testing.M) { os.Exit(moto.Run(m)) }

const body = `{"idempotency_key":"k-1","document":{"id":"4471","version":"9"},"model":"m","prompt_version":"v1","request_id":"r-1"}`

type setup struct {
	db        *dynamodb.Client
	records   string
	summaries string
	calls     *handler.Calls
	g         *idempotency.Guard
	handle    func(context.Context, events.SQSMessage) (handler.Summary, error)
}

func newSetup(t *testing.T, summaries string) *setup {
	t.Helper()
	s := &setup{db: moto.DynamoDB(t), calls: &handler.Calls{}}
	s.records = motoserver.NewTable(t, s.db)
	s.summaries = summaries
	if s.summaries == "" {
		s.summaries = motoserver.NewTable(t, s.db)
	}
	store, err := dynamostore.New(s.db, s.records)
	if err != nil {
		t.Fatal(err)
	}
	g, err := idempotency.New(idempotency.Config{Store: store, Namespace: "summarise"})
	if err != nil {
		t.Fatal(err)
	}
	sink, err := dynamosink.New(s.summaries)
	if err != nil {
		t.Fatal(err)
	}
	key := handler.Key()
	h, err := handler.New(handler.Config{
		Documents: handler.Dir(filepath.Join("..", "..", "samples", "documents")),
		Provider:  handler.LogRequests(handler.Stub{}, s.calls, nil),
		Sink:      sink,
		RecordID: func(m events.SQSMessage) string {
			k, _ := idempotency.Select(key, m)
			id, _ := g.ID(k)
			return id
		},
	})
	if err != nil {
		t.Fatal(err)
	}
	s.g, s.handle = g, idempotency.Wrap(g, key, h.Handle, idempotency.WithPayload(idempotency.SelectorFunc(handler.WorkKey)))
	return s
}

func (s *setup) get(t *testing.T, table, id string) map[string]types.AttributeValue {
	t.Helper()
	out, err := s.db.GetItem(t.Context(), &dynamodb.GetItemInput{TableName: aws.String(table),
		Key: map[string]types.AttributeValue{"id": &types.AttributeValueMemberS{Value: id}}, ConsistentRead: aws.Bool(true)})
	if err != nil {
		t.Fatal(err)
	}
	return out.Item
}

func str(item map[string]types.AttributeValue, name string) string {
	if v, ok := item[name].(*types.AttributeValueMemberS); ok {
		return v.Value
	}
	if v, ok := item[name].(*types.AttributeValueMemberN); ok {
		return v.Value
	}
	return ""
}

func TestSummaryCommitsWithRecord(t *testing.T) {
	s := newSetup(t, "")
	first, err := s.handle(t.Context(), events.SQSMessage{MessageId: "m-1", Body: body})
	if err != nil {
		t.Fatal(err)
	}
	second, err := s.handle(t.Context(), events.SQSMessage{MessageId: "m-2", Body: body})
	if err != nil {
		t.Fatal(err)
	}
	if s.calls.Len() != 1 || !first.CreatedAt.Equal(second.CreatedAt) || first.Summary != second.Summary {
		t.Fatalf("calls %d; results %+v, %+v", s.calls.Len(), first, second)
	}
	item := s.get(t, s.summaries, first.ID)
	if str(item, "summary") != first.Summary || str(item, "document_id") != "4471" || str(item, "message_id") != "m-1" ||
		str(item, "output_tokens") == "" || str(item, "model") != "m" {
		t.Errorf("summary item = %v", item)
	}
	if rec := s.get(t, s.records, first.ID); str(rec, driver.AttrStatus) != string(driver.StatusCompleted) {
		t.Errorf("record = %v, want COMPLETED", rec)
	}
}

// TestFailedTransactionWritesNeither points the sink at a table that does
// not exist: the transaction fails, so neither the summary nor the
// completion is written and the delivery fails.
func TestFailedTransactionWritesNeither(t *testing.T) {
	s := newSetup(t, "no-such-table")
	sum, err := s.handle(t.Context(), events.SQSMessage{MessageId: "m-1", Body: body})
	if err == nil {
		t.Fatalf("delivery acknowledged (%+v) though the summary was not written", sum)
	}
	var se *idempotency.StoreError
	if !errors.As(err, &se) {
		t.Errorf("error %v, want a *StoreError", err)
	}
	key, _ := idempotency.Select(handler.Key(), events.SQSMessage{Body: body})
	id, _ := s.g.ID(key)
	if rec := s.get(t, s.records, id); str(rec, driver.AttrStatus) == string(driver.StatusCompleted) {
		t.Errorf("record completed without its summary: %v", rec)
	}
}

func TestSaveOutsideGuard(t *testing.T) {
	sink, _ := dynamosink.New("t")
	if err := sink.Save(t.Context(), handler.Summary{ID: "x"}); !errors.Is(err, idempotency.ErrNotClaimed) {
		t.Errorf("Save outside the guard: %v, want ErrNotClaimed", err)
	}
	if err := sink.Save(t.Context(), handler.Summary{}); err == nil {
		t.Error("Save without id accepted")
	}
	if _, err := dynamosink.New(""); err == nil {
		t.Error("New without table accepted")
	}
}
