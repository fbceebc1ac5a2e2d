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

// The condition of a quarantine: the lapsed claim found, unchanged (its
// owner and expiry, not released), and not quarantined yet. quarantineOwner
// replaces it for a claim without an owner (written by Powertools). The
// lease that lapsed is the one Record.LeaseEnd reads: a strict claim's
// strict lease, on a record whose lease is at its expiry (:lease), else
// the lease.
const (
	quarantineLapsed = "((#lease < :now_ms AND (attribute_not_exists(#slease) OR #lease < :lease)) OR " +
		"(#lease >= :lease AND #slease < :now_ms))"
	quarantineCondition = "#st = :inprogress AND #own = :me AND #exp = :exp AND " + quarantineLapsed + " AND " +
		"attribute_not_exists(#quar) AND attribute_not_exists(#call)"
	quarantineNoOwner = "#st = :inprogress AND attribute_not_exists(#own) AND #exp = :exp AND " + quarantineLapsed + " AND " +
		"attribute_not_exists(#quar) AND attribute_not_exists(#call)"
)

// Quarantine implements [driver.Store.Quarantine] with one
// conditional UpdateItem that sets the quarantined attribute
// ([Attributes].Quarantined) to now in epoch milliseconds and the lease to
// the record's expiry, keeping a strict claim's strict lease
// ([Attributes].StrictLease), and returns the record as updated (ALL_NEW). When
// the condition fails, the record as it was (ALL_OLD) is returned with an
// error wrapping [driver.ErrLeaseLost]; none for a claim released in place.
func (s *Store) Quarantine(ctx context.Context, found driver.Record, now time.Time) (driver.Record, error) {
	if found.ID == "" {
		return driver.Record{}, storeError("quarantine", "", errors.New("dynamostore: empty id"))
	}
	a := s.attrs
	in := &dynamodb.UpdateItemInput{
		TableName:           aws.String(s.table),
		Key:                 s.key(found.ID),
		ConditionExpression: aws.String(quarantineCondition),
		UpdateExpression:    aws.String("SET #quar = :now_ms, #lease = :lease"),
		ExpressionAttributeNames: map[string]string{
			"#st": a.Status, "#own": a.Owner, "#exp": a.Expiration, "#lease": a.LeaseExpiry,
			"#quar": a.Quarantined, "#call": a.ReleaseCall, "#slease": a.StrictLease,
		},
		ExpressionAttributeValues: map[string]types.AttributeValue{
			":inprogress": attrS(string(driver.StatusInProgress)),
			":me":         attrS(found.Owner),
			":exp":        attrN(found.ExpiresAt.Unix()),
			":now_ms":     attrN(now.UnixMilli()),
			":lease":      attrN(found.ExpiresAt.Unix() * 1000),
		},
		ReturnValues:                        types.ReturnValueAllNew,
		ReturnValuesOnConditionCheckFailure: types.ReturnValuesOnConditionCheckFailureAllOld,
	}
	if found.Owner == "" {
		in.ConditionExpression = aws.String(quarantineNoOwner)
		delete(in.ExpressionAttributeValues, ":me")
	}
	out, err := s.api.UpdateItem(ctx, in)
	var ccf *types.ConditionalCheckFailedException
	switch {
	case err == nil:
		st, err := s.decode(out.Attributes)
		if err != nil && st.rec.ID == "" {
			return driver.Record{}, storeError("quarantine", found.ID, fmt.Errorf("dynamostore: read quarantined record: %w", err))
		}
		return st.rec, nil
	case errors.As(err, &ccf):
		if len(ccf.Item) == 0 {
			return driver.Record{}, s.leaseLost("quarantine", found.ID, found.Owner, nil)
		}
		st, _ := s.decode(ccf.Item) // what matters is status, owner and mark, not the result
		if st.released {
			// A released claim is no record to a claim: return none, not
			// the release mark (in progress, without an owner).
			return driver.Record{}, s.leaseLost("quarantine", found.ID, found.Owner, ccf.Item)
		}
		if !st.rec.Quarantined.IsZero() {
			return st.rec, storeError("quarantine", found.ID, fmt.Errorf("dynamostore: the record is quarantined already: %w", driver.ErrLeaseLost))
		}
		return st.rec, s.leaseLost("quarantine", found.ID, found.Owner, ccf.Item)
	default:
		return driver.Record{}, storeError("quarantine", found.ID, err)
	}
}
