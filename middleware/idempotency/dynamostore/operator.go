package dynamostore

import (
	"bytes"
	"context"
	"crypto/rand"
	"errors"
	"fmt"
	"maps"
	"strings"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"github.com/sqsonce/sqsonce/middleware/idempotency/driver"
)

// The writes of an operator's tool (cmd/sqsonce-ops): a release and a
// completion fenced on the record as the tool inspected it, not on an owner
// token, so that a claim without an owner (written by Powertools, which
// has none) can be released or resolved too.

// inspectedFence is the condition that the INPROGRESS record found, as
// Inspect returned it, is unchanged: the same owner (or none), expiry,
// lease end, strict lease (or none) and quarantine mark (or none), and not
// released. It adds the names and values it uses to names and values;
// ":inprogress" is the caller's.
func (s *Store) inspectedFence(found driver.Record, names map[string]string, values map[string]types.AttributeValue) string {
	a := s.attrs
	names["#st"], names["#own"], names["#exp"], names["#lease"], names["#quar"], names["#call"], names["#slease"] =
		a.Status, a.Owner, a.Expiration, a.LeaseExpiry, a.Quarantined, a.ReleaseCall, a.StrictLease
	values[":inprogress"] = attrS(string(driver.StatusInProgress))
	parts := []string{"#st = :inprogress", "attribute_not_exists(#call)"}
	same := func(name, value string, v types.AttributeValue, set bool) {
		if !set {
			parts = append(parts, "attribute_not_exists("+name+")")
			return
		}
		parts = append(parts, name+" = "+value)
		values[value] = v
	}
	same("#own", ":found_own", attrS(found.Owner), found.Owner != "")
	same("#exp", ":found_exp", attrN(found.ExpiresAt.Unix()), !found.ExpiresAt.IsZero())
	same("#lease", ":found_lease", attrN(found.LeaseUntil.UnixMilli()), !found.LeaseUntil.IsZero())
	same("#slease", ":found_slease", attrN(found.StrictLease.UnixMilli()), !found.StrictLease.IsZero())
	same("#quar", ":found_quar", attrN(found.Quarantined.UnixMilli()), !found.Quarantined.IsZero())
	return strings.Join(parts, " AND ")
}

// ReleaseInspected releases the INPROGRESS record found, as [Store.Inspect]
// returned it, for an operator: one UpdateItem that releases it as
// [Store.Release] does, fenced on the record being unchanged since it was
// read (status, owner or none, expiry, lease end, strict lease, quarantine
// mark) instead of on an owner token. A record that changed, or is gone, is left alone
// and the error wraps [driver.ErrLeaseLost]. A retry of the request
// by the SDK, after a first attempt whose response was lost, succeeds.
func (s *Store) ReleaseInspected(ctx context.Context, found driver.Record) error {
	if found.ID == "" {
		return storeError("release", "", errors.New("dynamostore: empty id"))
	}
	names := map[string]string{}
	values := map[string]types.AttributeValue{":ended": attrN(0), ":call": attrS(rand.Text())}
	cond := "(" + s.inspectedFence(found, names, values) + ") OR #call = :call"
	_, err := s.api.UpdateItem(ctx, &dynamodb.UpdateItemInput{
		TableName:                           aws.String(s.table),
		Key:                                 s.key(found.ID),
		ConditionExpression:                 aws.String(cond),
		UpdateExpression:                    aws.String("SET #lease = :ended, #call = :call REMOVE #own, #quar"),
		ExpressionAttributeNames:            names,
		ExpressionAttributeValues:           values,
		ReturnValuesOnConditionCheckFailure: types.ReturnValuesOnConditionCheckFailureAllOld,
	})
	var ccf *types.ConditionalCheckFailedException
	switch {
	case err == nil:
		return nil
	case errors.As(err, &ccf):
		return s.changed("release", found, ccf.Item)
	}
	return storeError("release", found.ID, err)
}

// CompleteInspected completes the INPROGRESS record found, as
// [Store.Inspect] returned it, for an operator: one UpdateItem that sets
// it COMPLETED with done.Data, done.ExpiresAt and done.Owner as its owner
// (found's own, or a new token for a claim that had none), fenced as
// [Store.ReleaseInspected]. Unlike [Store.Complete], it never completes a
// record without its result: a result that does not fit in the item even
// compressed, or that the data format cannot hold, fails with an error and
// nothing is written. Finding the record COMPLETED with done's owner and
// result (the SDK's retry of a request whose first attempt was applied) is
// a success.
func (s *Store) CompleteInspected(ctx context.Context, found, done driver.Record) error {
	if found.ID == "" || done.ID != found.ID {
		return storeError("complete", found.ID, errors.New("dynamostore: the completion names another id than the record found"))
	}
	if done.Owner == "" {
		return storeError("complete", found.ID, errors.New("dynamostore: the completion has no owner"))
	}
	if len(done.Attached) > 0 {
		return storeError("complete", found.ID, fmt.Errorf("dynamostore: an operator's completion takes no attached writes: %w", driver.ErrAttachUnsupported))
	}
	p, budget, why := s.fit(done)
	if p.omitted {
		return storeError("complete", found.ID, fmt.Errorf("dynamostore: the result (%d bytes) cannot be kept in full: %s (%d bytes for it in the item); nothing written",
			len(done.Data), why, budget))
	}
	u := s.completion(done, p, false, true)
	u.ExpressionAttributeNames = maps.Clone(u.ExpressionAttributeNames) // the store's own: inspectedFence adds to it
	// The completion's own update, with the owner set, under the fence.
	u.UpdateExpression = aws.String(strings.Replace(aws.ToString(u.UpdateExpression), "SET ", "SET #own = :me, ", 1))
	u.ConditionExpression = aws.String(s.inspectedFence(found, u.ExpressionAttributeNames, u.ExpressionAttributeValues))
	_, err := s.api.UpdateItem(ctx, &dynamodb.UpdateItemInput{
		TableName:                           u.TableName,
		Key:                                 u.Key,
		UpdateExpression:                    u.UpdateExpression,
		ConditionExpression:                 u.ConditionExpression,
		ExpressionAttributeNames:            u.ExpressionAttributeNames,
		ExpressionAttributeValues:           u.ExpressionAttributeValues,
		ReturnValuesOnConditionCheckFailure: u.ReturnValuesOnConditionCheckFailure,
	})
	var ccf *types.ConditionalCheckFailedException
	switch {
	case err == nil:
		return nil
	case errors.As(err, &ccf):
		if len(ccf.Item) > 0 {
			st, derr := s.decode(ccf.Item)
			if derr == nil && st.rec.Status == driver.StatusCompleted && st.rec.Owner == done.Owner && bytes.Equal(st.rec.Data, done.Data) {
				return nil // this completion, applied by an earlier attempt
			}
		}
		return s.changed("complete", found, ccf.Item)
	case tooLarge(err):
		return storeError("complete", found.ID, fmt.Errorf("dynamostore: DynamoDB refused the item's size; nothing written: %w", err))
	}
	return storeError("complete", found.ID, err)
}

// changed is the error of an operator's write whose fence failed; item is
// the record as the condition saw it, when the server returned it.
func (s *Store) changed(op string, found driver.Record, item map[string]types.AttributeValue) error {
	why := "the record is gone"
	if len(item) > 0 {
		st, _ := s.decode(item) // only for the message
		switch {
		case s.isReleased(item):
			why = "the claim was released"
		case st.rec.Status != driver.StatusInProgress:
			why = fmt.Sprintf("the record is %s", st.rec.Status)
		case st.rec.Owner != found.Owner:
			why = "the lease was taken over by another owner"
		default:
			why = "the record changed since it was inspected (its lease, strict lease, expiry or quarantine mark)"
		}
	}
	return storeError(op, found.ID, fmt.Errorf("dynamostore: %s: %w", why, driver.ErrLeaseLost))
}
