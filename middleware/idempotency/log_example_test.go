package idempotency_test

import (
	"context"
	"log/slog"
	"os"

	"github.com/aws/aws-lambda-go/events"

	"github.com/sqsonce/sqsonce/middleware/idempotency"
	"github.com/sqsonce/sqsonce/middleware/idempotency/memstore"
)

// dropReplayed is a slog handler that drops the guard's replayed lines
// and passes every other record on: a filter by attribute, as a user
// writes one.
type dropReplayed struct{ slog.Handler }

func (h dropReplayed) Handle(ctx context.Context, r slog.Record) error {
	replayed := false
	r.Attrs(func(a slog.Attr) bool {
		replayed = a.Key == "outcome" && a.Value.String() == string(idempotency.OutcomeReplayed)
		return !replayed
	})
	if replayed {
		return nil
	}
	return h.Handler.Handle(ctx, r)
}

// The guard logs each outcome at its level (see Outcome); the logger's
// handler decides which lines to keep: here, at INFO, the duplicate's
// replayed line and not the first delivery's claimed one (DEBUG); a handler
// of one's own, dropReplayed, drops the replayed lines too.
func ExampleOutcome() {
	plain := func(groups []string, a slog.Attr) slog.Attr {
		switch a.Key {
		case slog.TimeKey, "duration", "record_id": // for a stable output
			return slog.Attr{}
		}
		return a
	}
	info := slog.New(slog.NewTextHandler(os.Stdout, &slog.HandlerOptions{Level: slog.LevelInfo, ReplaceAttr: plain}))
	quiet := slog.New(dropReplayed{slog.NewTextHandler(os.Stdout, &slog.HandlerOptions{Level: slog.LevelInfo, ReplaceAttr: plain})})
	for _, logger := range []*slog.Logger{info, quiet} {
		g, err := idempotency.New(idempotency.Config{Store: memstore.New(), Namespace: "orders", Logger: logger})
		if err != nil {
			panic(err)
		}
		h := idempotency.Wrap(g, idempotency.BodyField("idempotency_key"),
			func(context.Context, events.SQSMessage) (string, error) { return "done", nil })
		for _, id := range []string{"m-1", "m-1"} { // a delivery and the broker's duplicate
			_, _ = h(context.Background(), events.SQSMessage{MessageId: id, Body: `{"idempotency_key":"o-1"}`})
		}
	}
	// Output:
	// level=INFO msg=idempotency outcome=replayed input_id=m-1 ran=false source=store
}
