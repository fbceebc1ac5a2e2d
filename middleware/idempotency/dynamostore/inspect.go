package dynamostore

import (
	"context"
	"errors"
	"fmt"
	"iter"
	"strings"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"github.com/sqsonce/sqsonce/middleware/idempotency/driver"
)

// ListAPI is the part of *dynamodb.Client that [Store.List] calls besides
// [API]: Scan on a table whose partition key is the record id, Query on one
// with a sort key ([WithSortKey]).
type ListAPI interface {
	Scan(ctx context.Context, params *dynamodb.ScanInput, optFns ...func(*dynamodb.Options)) (*dynamodb.ScanOutput, error)
	Query(ctx context.Context, params *dynamodb.QueryInput, optFns ...func(*dynamodb.Options)) (*dynamodb.QueryOutput, error)
}

var (
	_ ListAPI          = (*dynamodb.Client)(nil)
	_ driver.Inspector = (*Store)(nil)
)

// ErrReleased is wrapped, with [driver.ErrNotFound], by the error of
// [Store.Inspect] for a claim that a worker or an operator released: the
// store keeps the item, marked, until it expires, and every claim treats
// it as no record (the next delivery runs the operation). The other
// stores delete a released claim, so they report plain ErrNotFound.
var ErrReleased = errors.New("dynamostore: the claim was released")

// Inspect implements [driver.Inspector.Inspect] with one consistent
// GetItem. A released claim is no record, and its error wraps
// [ErrReleased] too. A record whose result is not in
// the store's data format is returned without its result and with an error
// wrapping a [*FormatError].
func (s *Store) Inspect(ctx context.Context, id string) (driver.StoredRecord, error) {
	if id == "" {
		return driver.StoredRecord{}, storeError("inspect", "", errors.New("dynamostore: empty id"))
	}
	out, err := s.api.GetItem(ctx, &dynamodb.GetItemInput{
		TableName:      aws.String(s.table),
		Key:            s.key(id),
		ConsistentRead: aws.Bool(true),
	})
	if err != nil {
		return driver.StoredRecord{}, storeError("inspect", id, err)
	}
	if len(out.Item) == 0 {
		return driver.StoredRecord{}, storeError("inspect", id, driver.ErrNotFound)
	}
	if s.isReleased(out.Item) {
		return driver.StoredRecord{}, storeError("inspect", id, fmt.Errorf("%w: %w", driver.ErrNotFound, ErrReleased))
	}
	return s.inspected(out.Item)
}

// List implements [driver.Inspector.List] with a consistent Scan of
// the table, or with [WithSortKey] a consistent Query of the store's
// partition, page by page, filtered on the server by status and id prefix.
// Released claims are left out. The store's [API] must also implement
// [ListAPI] (a *dynamodb.Client does).
func (s *Store) List(ctx context.Context, opts driver.ListOptions) iter.Seq2[driver.StoredRecord, error] {
	return func(yield func(driver.StoredRecord, error) bool) {
		api, ok := s.api.(ListAPI)
		if !ok {
			yield(driver.StoredRecord{}, storeError("list", "", fmt.Errorf("dynamostore: the API (%T) has no Scan and Query (see ListAPI)", s.api)))
			return
		}
		a := s.attrs
		// Not a released claim (see isReleased).
		names := map[string]string{"#call": a.ReleaseCall, "#st": a.Status}
		values := map[string]types.AttributeValue{":inprogress": s.req.inProgress}
		filter := []string{"(attribute_not_exists(#call) OR #st <> :inprogress)"}
		if opts.Status != "" {
			values[":st"] = attrS(string(opts.Status))
			filter = append(filter, "#st = :st")
		}
		var keyCond string
		if s.sortKeySet {
			names["#pk"], values[":pk"] = a.ID, attrS(s.sortKey.Partition)
			keyCond = "#pk = :pk"
			if opts.Prefix != "" {
				names["#sk"], values[":prefix"] = s.sortKey.Attr, attrS(opts.Prefix)
				keyCond += " AND begins_with(#sk, :prefix)"
			}
		} else if opts.Prefix != "" {
			names["#id"], values[":prefix"] = a.ID, attrS(opts.Prefix)
			filter = append(filter, "begins_with(#id, :prefix)")
		}
		if len(values) == 0 {
			values = nil
		}
		var start map[string]types.AttributeValue
		for {
			var (
				items []map[string]types.AttributeValue
				last  map[string]types.AttributeValue
				err   error
			)
			if s.sortKeySet {
				var out *dynamodb.QueryOutput
				out, err = api.Query(ctx, &dynamodb.QueryInput{
					TableName:                 aws.String(s.table),
					KeyConditionExpression:    aws.String(keyCond),
					FilterExpression:          aws.String(strings.Join(filter, " AND ")),
					ExpressionAttributeNames:  names,
					ExpressionAttributeValues: values,
					ConsistentRead:            aws.Bool(true),
					ExclusiveStartKey:         start,
				})
				if err == nil {
					items, last = out.Items, out.LastEvaluatedKey
				}
			} else {
				var out *dynamodb.ScanOutput
				out, err = api.Scan(ctx, &dynamodb.ScanInput{
					TableName:                 aws.String(s.table),
					FilterExpression:          aws.String(strings.Join(filter, " AND ")),
					ExpressionAttributeNames:  names,
					ExpressionAttributeValues: values,
					ConsistentRead:            aws.Bool(true),
					ExclusiveStartKey:         start,
				})
				if err == nil {
					items, last = out.Items, out.LastEvaluatedKey
				}
			}
			if err != nil {
				yield(driver.StoredRecord{}, storeError("list", "", err))
				return
			}
			for _, item := range items {
				rec, err := s.inspected(item)
				if rec.ID == "" {
					continue // not a record of this store
				}
				if !yield(rec, err) {
					return
				}
			}
			if len(last) == 0 {
				return
			}
			start = last
		}
	}
}

// inspected decodes item, as the store's other reads do, with how its
// result is stored.
func (s *Store) inspected(item map[string]types.AttributeValue) (driver.StoredRecord, error) {
	a := s.attrs
	st, err := s.decode(item)
	out := driver.StoredRecord{Record: st.rec}
	out.Encoding = stringAttr(item[a.DataEncoding])
	out.DataMark = stringAttr(item[a.DataFormat])
	if b, ok := item[a.DataOmitted].(*types.AttributeValueMemberBOOL); ok && b.Value {
		out.Omitted = true
	}
	if v, ok := item[a.Data]; ok {
		out.Size = attrSize(v)
	}
	if err != nil {
		return out, storeError("inspect", out.ID, fmt.Errorf("dynamostore: %w", err))
	}
	return out, nil
}

// attrSize is the size of a stored value: the bytes of a string or binary,
// and for the other types the length of its JSON.
func attrSize(v types.AttributeValue) int {
	switch v := v.(type) {
	case *types.AttributeValueMemberS:
		return len(v.Value)
	case *types.AttributeValueMemberB:
		return len(v.Value)
	}
	b, err := nativeJSON(v)
	if err != nil {
		return 0
	}
	return len(b)
}
