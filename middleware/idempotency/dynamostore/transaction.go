package dynamostore

import (
	"context"
	"errors"
	"fmt"
	"strings"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"github.com/sqsonce/sqsonce/middleware/idempotency"
	"github.com/sqsonce/sqsonce/middleware/idempotency/driver"
)

// MaxTransactItems is DynamoDB's limit of writes in one transaction. The
// record's completion takes one, which leaves MaxTransactItems-1 for
// attached writes.
const MaxTransactItems = 100

// Attach attaches DynamoDB writes to the completion of the operation running
// in ctx: they commit in one TransactWriteItems with the record's completion,
// or not at all. Call it inside the function run by [idempotency.Do] or
// [idempotency.Wrap]; outside, it returns [idempotency.ErrNotClaimed].
//
// Each item must hold exactly one Put, Update, Delete or ConditionCheck, on
// an item other than the idempotency record, with its table name set. At
// most MaxTransactItems-1 writes can be attached to one completion.
func Attach(ctx context.Context, items ...types.TransactWriteItem) error {
	for _, it := range items {
		if err := idempotency.Attach(ctx, it); err != nil {
			return err
		}
	}
	return nil
}

var _ driver.AttachValidator = (*Store)(nil)

// ValidateAttached implements [driver.AttachValidator]: the writes
// must be well-formed DynamoDB transaction items (exactly one of Put,
// Update, Delete or ConditionCheck, naming a table and an item), none on the
// record's own item, and at most [MaxTransactItems] - 1 of them (the
// record's completion is one more). [idempotency.Attach] calls it, so an
// operation learns of a write its completion could not commit when it
// attaches the write, not after its work is done.
func (s *Store) ValidateAttached(id string, writes []any) error {
	ws, err := attachedWrites(writes)
	if err != nil {
		return err
	}
	for i, w := range ws {
		table, key := writeTarget(w)
		if table == s.table && s.isRecordKey(key, id) {
			return fmt.Errorf("dynamostore: attached write %d is on the idempotency record's own item: %w", i, driver.ErrAttachUnsupported)
		}
	}
	return nil
}

// isRecordKey reports whether an item key (or a whole item) is the record
// id's primary key.
func (s *Store) isRecordKey(key map[string]types.AttributeValue, id string) bool {
	for name, want := range s.key(id) {
		v, ok := key[name].(*types.AttributeValueMemberS)
		if !ok || v.Value != stringAttr(want) {
			return false
		}
	}
	return true
}

// writeTarget returns the table and key (or item, for a Put) a write names.
func writeTarget(w types.TransactWriteItem) (string, map[string]types.AttributeValue) {
	switch {
	case w.Put != nil:
		return aws.ToString(w.Put.TableName), w.Put.Item
	case w.Update != nil:
		return aws.ToString(w.Update.TableName), w.Update.Key
	case w.Delete != nil:
		return aws.ToString(w.Delete.TableName), w.Delete.Key
	case w.ConditionCheck != nil:
		return aws.ToString(w.ConditionCheck.TableName), w.ConditionCheck.Key
	}
	return "", nil
}

// attachedWrites converts what a record carries in Attached, refusing what
// DynamoDB would refuse: no transaction may carry a write it cannot commit.
func attachedWrites(attached []any) ([]types.TransactWriteItem, error) {
	if len(attached) == 0 {
		return nil, nil
	}
	if n := len(attached) + 1; n > MaxTransactItems {
		return nil, fmt.Errorf("dynamostore: %d attached writes and the record's completion make %d writes, more than the %d of one DynamoDB transaction: %w",
			len(attached), n, MaxTransactItems, driver.ErrAttachUnsupported)
	}
	writes := make([]types.TransactWriteItem, 0, len(attached))
	for i, w := range attached {
		var item types.TransactWriteItem
		switch w := w.(type) {
		case types.TransactWriteItem:
			item = w
		case *types.TransactWriteItem:
			if w == nil {
				return nil, fmt.Errorf("dynamostore: attached write %d is a nil *types.TransactWriteItem: %w", i, driver.ErrAttachUnsupported)
			}
			item = *w
		default:
			return nil, fmt.Errorf("dynamostore: attached write %d is a %T; want a types.TransactWriteItem (see dynamostore.Attach): %w",
				i, w, driver.ErrAttachUnsupported)
		}
		if err := wellFormed(item); err != nil {
			return nil, fmt.Errorf("dynamostore: attached write %d %v: %w", i, err, driver.ErrAttachUnsupported)
		}
		writes = append(writes, item)
	}
	return writes, nil
}

func wellFormed(w types.TransactWriteItem) error {
	n := 0
	for _, set := range []bool{w.Put != nil, w.Update != nil, w.Delete != nil, w.ConditionCheck != nil} {
		if set {
			n++
		}
	}
	if n != 1 {
		return fmt.Errorf("has %d of Put, Update, Delete and ConditionCheck, want exactly one", n)
	}
	table, key := writeTarget(w)
	switch {
	case table == "":
		return errors.New("names no table")
	case len(key) == 0:
		return errors.New("names no item")
	case w.Update != nil && aws.ToString(w.Update.UpdateExpression) == "":
		return errors.New("is an Update without an UpdateExpression")
	case w.ConditionCheck != nil && aws.ToString(w.ConditionCheck.ConditionExpression) == "":
		return errors.New("is a ConditionCheck without a ConditionExpression")
	}
	return nil
}

// TransactionError reports a completion transaction that DynamoDB cancelled
// for a reason other than a lost lease: an attached write's condition failed
// ([TransactionError.FailedConditions] is not empty; retrying will not help
// until the application's data changes), or a transient conflict or
// throttling (retrying may help). Nothing of the transaction was written and
// the record is still in progress. It never wraps [driver.ErrLeaseLost]:
// a lost lease is reported as that instead.
type TransactionError struct {
	ID string // the record id
	// Reasons are DynamoDB's cancellation reasons, one per write: index 0 is
	// the record's completion, index i+1 is Record.Attached[i].
	Reasons []types.CancellationReason
	Err     error // the SDK's *types.TransactionCanceledException
}

func (e *TransactionError) Error() string {
	var b strings.Builder
	fmt.Fprintf(&b, "dynamostore: transaction completing %s cancelled", e.ID)
	for i, r := range e.Reasons {
		code := aws.ToString(r.Code)
		if code == "" || code == "None" {
			continue
		}
		if i == 0 {
			b.WriteString("; record: ")
		} else {
			fmt.Fprintf(&b, "; attached write %d: ", i-1)
		}
		b.WriteString(code)
		if m := aws.ToString(r.Message); m != "" {
			b.WriteString(" (" + m + ")")
		}
	}
	return b.String()
}

// Unwrap returns the SDK's error.
func (e *TransactionError) Unwrap() error { return e.Err }

// Permanent reports whether retrying the same transaction cannot help: an
// attached write's condition failed, or DynamoDB refused a write as invalid.
// The guard does not retry such a completion (see
// [failure.PermanentError]).
func (e *TransactionError) Permanent() bool {
	for i, r := range e.Reasons {
		if code := aws.ToString(r.Code); i > 0 && (code == "ConditionalCheckFailed" || code == "ValidationError") {
			return true
		}
	}
	return false
}

// FailedConditions returns the indexes, in Record.Attached, of the attached
// writes whose condition failed.
func (e *TransactionError) FailedConditions() []int {
	var idx []int
	for i, r := range e.Reasons {
		if i > 0 && aws.ToString(r.Code) == "ConditionalCheckFailed" {
			idx = append(idx, i-1)
		}
	}
	return idx
}
