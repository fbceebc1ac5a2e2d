package dynamostore

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"github.com/sqsonce/sqsonce/middleware/idempotency/driver"
)

// The condition of an extension: still in progress and ours, not
// quarantined, and not expired (a claim takes over a record whose
// expiration is before now).
const extendCondition = "#st = :inprogress AND #own = :me AND attribute_not_exists(#quar) AND #exp >= :now"

var _ driver.Extender = (*Store)(nil)

// Extend implements [driver.Extender] with one conditional UpdateItem
// that sets the lease (in_progress_expiration, which Powertools reads), or
// a strict claim's strict lease ([Attributes].StrictLease), to rec's.
// Sent again by the SDK after its first attempt was applied, it sets the
// same value under the same condition, and succeeds.
func (s *Store) Extend(ctx context.Context, rec driver.Record, now time.Time) error {
	if rec.ID == "" {
		return storeError("extend", "", errors.New("dynamostore: empty id"))
	}
	if rec.Owner == "" {
		return storeError("extend", rec.ID, fmt.Errorf("dynamostore: no owner to fence the extension with: %w", driver.ErrLeaseLost))
	}
	a := s.attrs
	lease, until := a.LeaseExpiry, rec.LeaseUntil
	if rec.Strict() {
		lease, until = a.StrictLease, rec.StrictLease
	}
	_, err := s.api.UpdateItem(ctx, &dynamodb.UpdateItemInput{
		TableName:           aws.String(s.table),
		Key:                 s.key(rec.ID),
		ConditionExpression: aws.String(extendCondition),
		UpdateExpression:    aws.String("SET #lease = :lease"),
		ExpressionAttributeNames: map[string]string{
			"#st": a.Status, "#own": a.Owner, "#quar": a.Quarantined, "#exp": a.Expiration, "#lease": lease,
		},
		ExpressionAttributeValues: map[string]types.AttributeValue{
			":inprogress": attrS(string(driver.StatusInProgress)),
			":me":         attrS(rec.Owner),
			":now":        attrN(now.Unix()),
			":lease":      attrN(until.UnixMilli()),
		},
		ReturnValuesOnConditionCheckFailure: types.ReturnValuesOnConditionCheckFailureAllOld,
	})
	var ccf *types.ConditionalCheckFailedException
	switch {
	case err == nil:
		return nil
	case errors.As(err, &ccf):
		if len(ccf.Item) > 0 {
			st, _ := s.decode(ccf.Item) // only for the message
			if st.rec.Status == driver.StatusInProgress && st.rec.Owner == rec.Owner {
				why := "the claim is quarantined"
				if st.rec.Quarantined.IsZero() {
					why = "the record expired"
				}
				return storeError("extend", rec.ID, fmt.Errorf("dynamostore: %s: %w", why, driver.ErrLeaseLost))
			}
		}
		return s.leaseLost("extend", rec.ID, rec.Owner, ccf.Item)
	default:
		return storeError("extend", rec.ID, err)
	}
}
