package dynamostore

import (
	"context"
	"crypto/rand"
	"errors"
	"fmt"
	"log/slog"
	"strings"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"
	"github.com/aws/smithy-go"

	"github.com/sqsonce/sqsonce/internal/inflate"
	"github.com/sqsonce/sqsonce/middleware/failure"
	"github.com/sqsonce/sqsonce/middleware/idempotency"
	"github.com/sqsonce/sqsonce/middleware/idempotency/driver"
)

// API is the part of *dynamodb.Client the store calls. Tests can pass a
// fake; production code passes the client.
type API interface {
	PutItem(ctx context.Context, params *dynamodb.PutItemInput, optFns ...func(*dynamodb.Options)) (*dynamodb.PutItemOutput, error)
	GetItem(ctx context.Context, params *dynamodb.GetItemInput, optFns ...func(*dynamodb.Options)) (*dynamodb.GetItemOutput, error)
	UpdateItem(ctx context.Context, params *dynamodb.UpdateItemInput, optFns ...func(*dynamodb.Options)) (*dynamodb.UpdateItemOutput, error)
	TransactWriteItems(ctx context.Context, params *dynamodb.TransactWriteItemsInput, optFns ...func(*dynamodb.Options)) (*dynamodb.TransactWriteItemsOutput, error)
}

var _ API = (*dynamodb.Client)(nil)

// Store is a [driver.Store] on a DynamoDB table. It is safe for
// concurrent use; create one with [New] at start-up and share it.
type Store struct {
	api   API
	table string
	options
	req requests
}

// requests are the parts of the store's requests that do not change from
// one call to the next, built once by New: the SDK only reads them, so
// concurrent calls share them. A caller that adds to a map clones it first.
type requests struct {
	table                       *string
	newCond, claimCond          *string // newCond: newCondition
	strictClaimCond             *string
	newNames, claimNames        map[string]string
	strictNames                 map[string]string
	fenceCond, retryCond        *string
	completeNames               map[string]string
	setOmitted, setNone         *string // completion update expressions, by placement
	setGzip, setPlain           *string
	fenced                      [4]fencedUpdate // the same, under fenceCondition: by placement, as placement.kind
	inProgress, completed, mark types.AttributeValue
	gzip, omitted               types.AttributeValue
}

// fencedUpdate is a completion's update expression and names under
// fenceCondition, which holds only on the record as this store's claim wrote
// it (a PutItem that replaced the whole item), its lease extended or
// quarantined since: every attribute of a result is absent, and only the
// quarantine mark is removed.
type fencedUpdate struct {
	set   *string
	names map[string]string
}

// kind indexes requests.fenced.
func (p placement) kind() int {
	switch {
	case p.omitted:
		return 0
	case p.value == nil:
		return 1
	case p.encoding != "":
		return 2
	}
	return 3
}

func newRequests(table string, o *options) requests {
	a := o.attrs
	set := "SET #st = :completed, #exp = :exp"
	fenced := func(expr string, names ...string) fencedUpdate {
		m := map[string]string{"#st": a.Status, "#exp": a.Expiration, "#own": a.Owner, "#quar": a.Quarantined}
		for i := 0; i < len(names); i += 2 {
			m[names[i]] = names[i+1]
		}
		return fencedUpdate{set: aws.String(set + expr + " REMOVE #quar"), names: m}
	}
	return requests{
		fenced: [4]fencedUpdate{
			fenced(", #omit = :omit", "#omit", a.DataOmitted),
			fenced(""),
			fenced(", #data = :data, #enc = :enc, #fmt = :fmt", "#data", a.Data, "#enc", a.DataEncoding, "#fmt", a.DataFormat),
			fenced(", #data = :data, #fmt = :fmt", "#data", a.Data, "#fmt", a.DataFormat),
		},
		table:           aws.String(table),
		newCond:         aws.String(newCondition),
		newNames:        map[string]string{"#id": a.ID},
		claimCond:       aws.String(claimCondition),
		strictClaimCond: aws.String(strictClaimCondition),
		claimNames:      map[string]string{"#id": a.ID, "#exp": a.Expiration, "#st": a.Status, "#lease": a.LeaseExpiry},
		strictNames:     map[string]string{"#id": a.ID, "#exp": a.Expiration, "#call": a.ReleaseCall, "#st": a.Status},
		fenceCond:       aws.String(fenceCondition),
		retryCond:       aws.String(retryCondition),
		completeNames: map[string]string{
			"#st": a.Status, "#exp": a.Expiration, "#own": a.Owner,
			"#data": a.Data, "#enc": a.DataEncoding, "#omit": a.DataOmitted, "#fmt": a.DataFormat,
			"#quar": a.Quarantined,
		},
		setOmitted: aws.String(set + ", #omit = :omit REMOVE #data, #enc, #fmt, #quar"),
		setNone:    aws.String(set + " REMOVE #data, #enc, #omit, #fmt, #quar"),
		setGzip:    aws.String(set + ", #data = :data, #enc = :enc, #fmt = :fmt REMOVE #omit, #quar"),
		setPlain:   aws.String(set + ", #data = :data, #fmt = :fmt REMOVE #enc, #omit, #quar"),
		inProgress: attrS(string(driver.StatusInProgress)),
		completed:  attrS(string(driver.StatusCompleted)),
		mark:       attrS(o.format.mark()),
		gzip:       attrS(encodingGzip),
		omitted:    &types.AttributeValueMemberBOOL{Value: true},
	}
}

var _ driver.Store = (*Store)(nil)

// New returns a Store on table, calling DynamoDB through api (normally a
// *dynamodb.Client built once by the caller). It reports every problem of
// its arguments at once.
func New(api API, table string, opts ...Option) (*Store, error) {
	o := options{compressAbove: DefaultCompressAbove, itemLimit: DefaultItemLimit}
	for _, opt := range opts {
		opt(&o)
	}
	var errs []error
	if api == nil {
		errs = append(errs, errors.New("dynamostore: API is nil"))
	}
	if table == "" {
		errs = append(errs, errors.New("dynamostore: table name is empty"))
	}
	if err := o.validate(); err != nil {
		errs = append(errs, err)
	}
	if err := errors.Join(errs...); err != nil {
		return nil, err
	}
	return &Store{api: api, table: table, options: o, req: newRequests(table, &o)}, nil
}

// The condition of a claim's first attempt: no record. It is the first
// clause of both claim conditions; the server evaluates it at a fraction of
// their cost (moto: a fifth less CPU per PutItem).
const newCondition = "attribute_not_exists(#id)"

// The condition of a claim: no record, an expired one, or a lapsed lease.
const claimCondition = "attribute_not_exists(#id) OR #exp < :now OR (#st = :inprogress AND #lease < :now_ms)"

// The condition of a strict claim: no record, an expired one, or a claim
// released by Release (still in progress: a Powertools worker's completion
// of the released claim leaves the mark on a COMPLETED record); never a
// lapsed lease.
const strictClaimCondition = "attribute_not_exists(#id) OR #exp < :now OR (attribute_exists(#call) AND #st = :inprogress)"

// The condition of a fenced write: still in progress, and ours.
const fenceCondition = "#st = :inprogress AND #own = :me"

// The condition of a completion retried without its result after the server
// refused the item's size: as fenceCondition, or already completed by us
// without a result, for emulators (moto) that apply part of an update they
// refuse. Only our own completion can leave our owner on a completed record.
const retryCondition = "#own = :me AND (#st = :inprogress OR (#st = :completed AND attribute_not_exists(#data)))"

func storeError(op, id string, err error) error {
	return &idempotency.StoreError{Op: op, ID: id, Err: err}
}

// key is the primary key of the record id: the id as partition key, or
// with a sort key, the partition value and the id as sort key.
func (s *Store) key(id string) map[string]types.AttributeValue {
	return s.keyWith(id, 0)
}

// keyWith is key in a map with room for more attributes.
func (s *Store) keyWith(id string, more int) map[string]types.AttributeValue {
	if s.sortKeySet {
		m := make(map[string]types.AttributeValue, 2+more)
		m[s.attrs.ID], m[s.sortKey.Attr] = attrS(s.sortKey.Partition), attrS(id)
		return m
	}
	m := make(map[string]types.AttributeValue, 1+more)
	m[s.attrs.ID] = attrS(id)
	return m
}

// idAttr is the attribute that holds the record id.
func (s *Store) idAttr() string {
	if s.sortKeySet {
		return s.sortKey.Attr
	}
	return s.attrs.ID
}

// Acquire implements [driver.Store.Acquire] with one PutItem conditional
// on no record, which returns the existing record when the condition fails;
// a record the claim may take (expired, a lapsed lease, a released claim)
// costs a second PutItem under the full claim condition, which decides.
// Only when the server leaves the existing record out of a failure (some
// emulators do) does Acquire read it, with one consistent GetItem. With
// [driver.NoTakeover] the condition takes over no lapsed lease: no
// record, an expired one, or a claim released by Release.
func (s *Store) Acquire(ctx context.Context, rec driver.Record, now time.Time, mode driver.ClaimMode) (driver.Record, bool, error) {
	strict := mode == driver.NoTakeover
	if rec.ID == "" {
		return driver.Record{}, false, storeError("acquire", "", errors.New("dynamostore: empty key"))
	}
	if rec.Owner == "" {
		return driver.Record{}, false, storeError("acquire", rec.ID,
			errors.New("dynamostore: record has no owner: its Complete and Release could not be fenced"))
	}
	item, nowS, nowMs := s.claimItem(rec, now)
	// The first attempt claims only a key with no record: the condition a
	// new key needs, and the lightest for the server to evaluate. When the
	// record it returns is one the claim condition could take (expired, a
	// lapsed lease, a released claim), or cannot be read here, a second
	// PutItem under the claim condition decides, as one call would have.
	first := &dynamodb.PutItemInput{
		TableName:                           s.req.table,
		Item:                                item,
		ConditionExpression:                 s.req.newCond,
		ExpressionAttributeNames:            s.req.newNames,
		ReturnValuesOnConditionCheckFailure: types.ReturnValuesOnConditionCheckFailureAllOld,
	}
	_, err := s.api.PutItem(ctx, first)
	if err == nil {
		return driver.Record{}, false, nil
	}
	existing, err := s.existing(ctx, rec.ID, err)
	if err != nil {
		return driver.Record{}, false, err
	}
	var found map[string]types.AttributeValue // the record the claim may take, as first found
	if len(existing) > 0 {
		// A number that is not an integer (the server compares it exactly)
		// or does not read as one leaves the decision to the server. Only
		// a result that does not read is an error here, as it is after the
		// claim condition.
		st, err := s.decode(existing)
		decides := !st.inexact && !st.claimable(now, strict)
		switch {
		case decides && err != nil:
			return driver.Record{}, false, storeError("acquire", rec.ID, fmt.Errorf("dynamostore: read existing record: %w", err))
		case err == nil && ownClaim(st.rec, rec):
			return driver.Record{}, false, nil
		case decides:
			return st.rec, true, nil
		}
		found = existing
	}
	in := &dynamodb.PutItemInput{
		TableName:                           s.req.table,
		Item:                                item,
		ConditionExpression:                 s.req.claimCond,
		ExpressionAttributeNames:            s.req.claimNames,
		ReturnValues:                        types.ReturnValueAllOld,
		ReturnValuesOnConditionCheckFailure: types.ReturnValuesOnConditionCheckFailureAllOld,
	}
	if strict {
		in.ConditionExpression, in.ExpressionAttributeNames = s.req.strictClaimCond, s.req.strictNames
		in.ExpressionAttributeValues = map[string]types.AttributeValue{":now": nowS, ":inprogress": s.req.inProgress}
	} else {
		in.ExpressionAttributeValues = map[string]types.AttributeValue{
			":now":        nowS,
			":now_ms":     nowMs,
			":inprogress": s.req.inProgress,
		}
	}
	// A second attempt only when the record that failed the condition was
	// gone, or claimable, by the time it was read.
	for range 2 {
		out, err := s.api.PutItem(ctx, in)
		if err == nil {
			return s.replaced(ctx, rec.ID, out.Attributes), false, nil
		}
		var ccf *types.ConditionalCheckFailedException
		returned := errors.As(err, &ccf) && len(ccf.Item) > 0
		existing, err := s.existing(ctx, rec.ID, err)
		if err != nil {
			return driver.Record{}, false, err
		}
		if len(existing) > 0 {
			st, own, err := s.blocking(existing, rec)
			if own && err == nil && found != nil {
				// The SDK retried this claim, whose first attempt was
				// applied: it replaced the record the first PutItem found,
				// as far as this store can tell.
				return s.replaced(ctx, rec.ID, found), false, nil
			}
			if err != nil || own {
				return driver.Record{}, false, err
			}
			// The server's own verdict on the record it returned; a record
			// read after the failure may have changed since.
			if returned || !st.claimable(now, strict) {
				return st.rec, true, nil
			}
		}
	}
	return driver.Record{}, false, storeError("acquire", rec.ID,
		errors.New("dynamostore: the record changed between the claim and its read, twice; not claimed"))
}

// existing is the record that failed a claim's condition (err): as the
// server returned it, or read with one consistent GetItem from a server that
// leaves it out (some emulators do); none when it is gone. Any other error
// is the claim's.
func (s *Store) existing(ctx context.Context, id string, err error) (map[string]types.AttributeValue, error) {
	var ccf *types.ConditionalCheckFailedException
	if !errors.As(err, &ccf) {
		return nil, storeError("acquire", id, err)
	}
	if len(ccf.Item) > 0 {
		return ccf.Item, nil
	}
	got, err := s.api.GetItem(ctx, &dynamodb.GetItemInput{
		TableName:      s.req.table,
		Key:            s.key(id),
		ConsistentRead: aws.Bool(true),
	})
	if err != nil {
		return nil, storeError("acquire", id, fmt.Errorf("dynamostore: read existing record: %w", err))
	}
	return got.Item, nil
}

// blocking decodes the record that failed the claim rec's condition, and
// reports whether it is that claim itself (see ownClaim).
func (s *Store) blocking(item map[string]types.AttributeValue, rec driver.Record) (stored, bool, error) {
	st, err := s.decode(item)
	if err != nil {
		return stored{}, false, storeError("acquire", rec.ID, fmt.Errorf("dynamostore: read existing record: %w", err))
	}
	return st, ownClaim(st.rec, rec), nil
}

// ownClaim reports whether the record that failed the claim's condition is
// the claim itself: the SDK retries a PutItem whose response was lost (a 5xx,
// a broken connection), and the first attempt may have been applied. Owner
// tokens are random per claim, so no one else's record carries ours.
func ownClaim(existing, rec driver.Record) bool {
	return existing.Status == driver.StatusInProgress && existing.Owner != "" && existing.Owner == rec.Owner
}

// replaced decodes the record a successful claim replaced: none when it
// replaced a released claim. The claim holds whatever that record
// contained, so a problem decoding it is only logged.
func (s *Store) replaced(ctx context.Context, id string, item map[string]types.AttributeValue) driver.Record {
	if len(item) == 0 || s.isReleased(item) {
		return driver.Record{}
	}
	st, err := s.decode(item)
	if err != nil {
		s.logger.LogAttrs(ctx, slog.LevelWarn, "dynamostore: the record replaced by a claim could not be read in full",
			slog.String("id", id), slog.String("error", err.Error()))
	}
	return st.rec
}

// placement is how a result is stored.
type placement struct {
	value    types.AttributeValue // nil when no result is stored
	encoding string               // "" or encodingGzip
	omitted  bool                 // the result did not fit
}

// place decides how rec.Data is stored: plain JSON, compressed, or left out
// when it does not fit in the item even compressed.
func (s *Store) place(ctx context.Context, rec driver.Record) placement {
	p, budget, why := s.fit(rec)
	if p.omitted {
		s.omitted(ctx, rec, budget, why)
	}
	return p
}

// fit is place without its log: the placement of rec.Data, the bytes the
// item has for it, and why a result left out is.
func (s *Store) fit(rec driver.Record) (placement, int, string) {
	if rec.Data == nil {
		return placement{}, 0, ""
	}
	budget := s.budget(rec)
	plainFits := len(rec.Data) <= budget
	if s.format == DataJSON && (len(rec.Data) > s.compressAbove || !plainFits) {
		if z := inflate.Gzip(rec.Data); len(z) < len(rec.Data) && len(z) <= budget {
			return placement{value: &types.AttributeValueMemberB{Value: z}, encoding: encodingGzip}, budget, ""
		}
	}
	if plainFits {
		v, err := s.encodeData(rec.Data)
		if err != nil {
			return placement{omitted: true}, budget, fmt.Sprintf("the result cannot be stored in %v: %v", s.format, err)
		}
		return placement{value: v}, budget, ""
	}
	return placement{omitted: true}, budget, "the result does not fit in the item, even compressed"
}

// budget is the bytes the item of rec's completion has for its result.
func (s *Store) budget(rec driver.Record) int {
	return s.itemLimit - sizeMargin - s.completedSize(rec)
}

func (s *Store) omitted(ctx context.Context, rec driver.Record, budget int, why string) {
	s.logger.LogAttrs(ctx, slog.LevelError, "dynamostore: record completed WITHOUT its result: "+why+
		"; later deliveries of the key get an empty result, the operation is not run again",
		slog.String("record_id", rec.ID), slog.Int("result_bytes", len(rec.Data)), slog.Int("budget_bytes", budget),
		slog.String("table", s.table))
}

// completion is the conditional update that completes rec, stored as p:
// the one builder of both the UpdateItem and the transaction's first item.
// retry selects retryCondition (see there) instead of fenceCondition; full
// removes every attribute of a result the update does not set, where the
// condition does not rule them out (a retry's, an operator's), else only
// the quarantine mark (see fencedUpdate). Its ExpressionAttributeNames are
// the store's own (see requests): clone them to add to them.
func (s *Store) completion(rec driver.Record, p placement, retry, full bool) *types.Update {
	values := make(map[string]types.AttributeValue, 7)
	values[":completed"], values[":exp"], values[":inprogress"], values[":me"] =
		s.req.completed, attrN(rec.ExpiresAt.Unix()), s.req.inProgress, attrS(rec.Owner)
	u := &types.Update{
		TableName:                           s.req.table,
		Key:                                 s.key(rec.ID),
		ConditionExpression:                 s.req.fenceCond,
		ExpressionAttributeNames:            s.req.completeNames,
		ExpressionAttributeValues:           values,
		ReturnValuesOnConditionCheckFailure: types.ReturnValuesOnConditionCheckFailureAllOld,
	}
	if retry {
		u.ConditionExpression = s.req.retryCond
	}
	switch {
	case p.omitted:
		u.UpdateExpression = s.req.setOmitted
		values[":omit"] = s.req.omitted
	case p.value == nil:
		u.UpdateExpression = s.req.setNone
	case p.encoding != "":
		u.UpdateExpression = s.req.setGzip
		values[":data"], values[":enc"], values[":fmt"] = p.value, s.req.gzip, s.req.mark
	default:
		u.UpdateExpression = s.req.setPlain
		values[":data"], values[":fmt"] = p.value, s.req.mark
	}
	if !retry && !full {
		f := s.req.fenced[p.kind()]
		u.UpdateExpression, u.ExpressionAttributeNames = f.set, f.names
	}
	return u
}

// errTooLarge reports that DynamoDB refused a completion for its size.
var errTooLarge = errors.New("dynamostore: item too large")

// Complete implements [driver.Store.Complete] with one conditional
// UpdateItem, or, when rec.Attached holds writes, one TransactWriteItems
// with that update first and the attached writes after it. The result as
// stored is nil when it did not fit in the item (see Large results in the
// package doc).
//
// A completion whose condition fails on the record already COMPLETED under
// rec's own owner is this completion, applied by an earlier attempt whose
// response was lost (the SDK retries such a request), or an operator's
// under the claim's owner: it succeeds, and returns the result as stored
// then, read from the record the failed condition returns (ALL_OLD),
// without another round trip.
func (s *Store) Complete(ctx context.Context, rec driver.Record) ([]byte, error) {
	if rec.ID == "" {
		return nil, storeError("complete", "", errors.New("dynamostore: empty key"))
	}
	writes, err := attachedWrites(rec.Attached)
	if err != nil {
		return nil, storeError("complete", rec.ID, err)
	}
	if rec.Owner == "" {
		return nil, storeError("complete", rec.ID, fmt.Errorf("dynamostore: no owner to fence the completion with: %w", driver.ErrLeaseLost))
	}
	p := s.place(ctx, rec)
	stored, err := s.commit(ctx, rec, p, false, writes)
	if errors.Is(err, errTooLarge) && p.value != nil {
		// Our size estimate fell short (attributes we did not write?): never
		// leave a completed operation unrecorded for lack of space.
		s.omitted(ctx, rec, s.budget(rec), "DynamoDB refused the item's size")
		p = placement{omitted: true}
		stored, err = s.commit(ctx, rec, p, true, writes)
	}
	if errors.Is(err, errTooLarge) {
		return nil, storeError("complete", rec.ID, permanent{err})
	}
	return stored, err
}

// permanent marks an error that retrying the same request cannot cure: the
// guard does not retry a completion that fails with one.
type permanent struct{ err error }

func (p permanent) Error() string   { return p.err.Error() }
func (p permanent) Unwrap() error   { return p.err }
func (p permanent) Permanent() bool { return true }

// The guard reads these errors through failure.PermanentError: a
// rename breaks this build instead of turning retries back on.
var (
	_ failure.PermanentError = permanent{}
	_ failure.PermanentError = (*TransactionError)(nil)
)

// invalid reports whether DynamoDB or the SDK refused a request as
// malformed: sending it again gives the same answer.
func invalid(err error) bool {
	var ae smithy.APIError
	var ip *smithy.InvalidParamsError
	return errors.As(err, &ip) || (errors.As(err, &ae) && ae.ErrorCode() == "ValidationException")
}

// commit sends the completion of rec stored as p: one UpdateItem, or one
// TransactWriteItems with the update first when writes are attached. It
// returns the result as stored.
func (s *Store) commit(ctx context.Context, rec driver.Record, p placement, retry bool, writes []types.TransactWriteItem) ([]byte, error) {
	u := s.completion(rec, p, retry, retry)
	var err error
	if len(writes) == 0 {
		_, err = s.api.UpdateItem(ctx, &dynamodb.UpdateItemInput{
			TableName:                           u.TableName,
			Key:                                 u.Key,
			UpdateExpression:                    u.UpdateExpression,
			ConditionExpression:                 u.ConditionExpression,
			ExpressionAttributeNames:            u.ExpressionAttributeNames,
			ExpressionAttributeValues:           u.ExpressionAttributeValues,
			ReturnValuesOnConditionCheckFailure: u.ReturnValuesOnConditionCheckFailure,
		})
	} else {
		items := make([]types.TransactWriteItem, 0, 1+len(writes))
		items = append(append(items, types.TransactWriteItem{Update: u}), writes...)
		_, err = s.api.TransactWriteItems(ctx, &dynamodb.TransactWriteItemsInput{TransactItems: items})
	}
	switch {
	case err != nil:
		return s.completionFailed(ctx, rec, err)
	case p.omitted:
		return nil, nil
	}
	return rec.Data, nil
}

// completionFailed classifies the error of a completion, whether sent as
// UpdateItem or as a transaction: the one classifier of both.
func (s *Store) completionFailed(ctx context.Context, rec driver.Record, err error) ([]byte, error) {
	var ccf *types.ConditionalCheckFailedException
	var tce *types.TransactionCanceledException
	switch {
	case errors.As(err, &ccf):
		return s.conditionFailed(ctx, rec, ccf.Item)
	case errors.As(err, &tce):
		reasons := tce.CancellationReasons
		if len(reasons) > 0 {
			switch code := aws.ToString(reasons[0].Code); {
			case code == "ConditionalCheckFailed":
				return s.conditionFailed(ctx, rec, reasons[0].Item)
			case code == "ValidationError" && strings.Contains(strings.ToLower(aws.ToString(reasons[0].Message)), "size"):
				return nil, fmt.Errorf("%w: %w", errTooLarge, err)
			}
		}
		return nil, storeError("complete", rec.ID, &TransactionError{ID: rec.ID, Reasons: reasons, Err: tce})
	case tooLarge(err):
		return nil, fmt.Errorf("%w: %w", errTooLarge, err)
	case invalid(err):
		return nil, storeError("complete", rec.ID, permanent{err})
	}
	return nil, storeError("complete", rec.ID, err)
}

// conditionFailed is the outcome of a completion whose condition failed;
// item is the record as the condition saw it. Found COMPLETED under rec's
// own owner, and as this store completes (a result marked with its data
// format, or none), it is this completion, applied by an earlier attempt:
// only this completion writes rec.Owner on a completed record (owner tokens
// are random per claim), and with its attached writes, since they commit
// together or not at all. (A Powertools worker that outlived its lease and
// completed under this claim leaves the owner, but writes its result
// without the mark: that is a double run.) Otherwise, or when the server
// left the record out, the lease was lost.
func (s *Store) conditionFailed(ctx context.Context, rec driver.Record, item map[string]types.AttributeValue) ([]byte, error) {
	if len(item) > 0 {
		st, err := s.decode(item)
		_, marked := item[s.attrs.DataFormat]
		_, data := item[s.attrs.Data]
		if st.rec.Status == driver.StatusCompleted && st.rec.Owner != "" && st.rec.Owner == rec.Owner && (marked || !data) {
			if err != nil {
				return nil, storeError("complete", rec.ID, fmt.Errorf("dynamostore: completed by this owner, but the stored result cannot be read: %w", permanent{err}))
			}
			return st.rec.Data, nil
		}
	}
	return nil, s.leaseLost("complete", rec.ID, rec.Owner, item)
}

// tooLarge reports whether err is DynamoDB refusing an item for its size.
func tooLarge(err error) bool {
	var ae smithy.APIError
	return errors.As(err, &ae) && ae.ErrorCode() == "ValidationException" &&
		strings.Contains(strings.ToLower(ae.ErrorMessage()), "size")
}

// The condition of a release: as fenceCondition, or already released by
// this very call (its first attempt applied, the response lost).
const releaseCondition = "(#st = :inprogress AND #own = :me) OR #call = :call"

// Release implements [driver.Store.Release] with one UpdateItem,
// conditional on the record being in progress and owned by owner: a
// completed record is never released. The record is not deleted but
// released in place: its lease ends (in_progress_expiration 0, which any
// claim, this store's or Powertools', takes over at once and reports as no
// record), its owner is removed, and a token of this call is set in the
// ReleaseCall attribute. So when the SDK sends the request again after a
// first attempt whose response was lost, the retry finds its own token and
// succeeds; another Release of the key fails with [driver.ErrLeaseLost].
func (s *Store) Release(ctx context.Context, id, owner string) error {
	if id == "" {
		return storeError("release", "", errors.New("dynamostore: empty id"))
	}
	if owner == "" {
		return storeError("release", id, fmt.Errorf("dynamostore: no owner to fence the release with: %w", driver.ErrLeaseLost))
	}
	a := s.attrs
	_, err := s.api.UpdateItem(ctx, &dynamodb.UpdateItemInput{
		TableName:           aws.String(s.table),
		Key:                 s.key(id),
		ConditionExpression: aws.String(releaseCondition),
		UpdateExpression:    aws.String("SET #lease = :ended, #call = :call REMOVE #own, #quar"),
		ExpressionAttributeNames: map[string]string{
			"#st": a.Status, "#own": a.Owner, "#lease": a.LeaseExpiry, "#call": a.ReleaseCall, "#quar": a.Quarantined,
		},
		ExpressionAttributeValues: map[string]types.AttributeValue{
			":inprogress": attrS(string(driver.StatusInProgress)),
			":me":         attrS(owner),
			":ended":      attrN(0),
			":call":       attrS(rand.Text()),
		},
		ReturnValuesOnConditionCheckFailure: types.ReturnValuesOnConditionCheckFailureAllOld,
	})
	var ccf *types.ConditionalCheckFailedException
	switch {
	case err == nil:
		return nil
	case errors.As(err, &ccf):
		return s.leaseLost("release", id, owner, ccf.Item)
	default:
		return storeError("release", id, err)
	}
}

// isReleased reports whether item is a claim released by Release: marked
// so and still in progress. (Powertools' completion, an UpdateItem that
// removes nothing, leaves the mark on the COMPLETED record of a released
// claim a Powertools worker still ran.)
func (s *Store) isReleased(item map[string]types.AttributeValue) bool {
	_, ok := item[s.attrs.ReleaseCall]
	return ok && stringAttr(item[s.attrs.Status]) == string(driver.StatusInProgress)
}

// leaseLost is the error of a fenced write whose condition failed; item is
// the record as the condition saw it, when the server returned it.
func (s *Store) leaseLost(op, id, owner string, item map[string]types.AttributeValue) error {
	why := "the record is gone, or was changed"
	if len(item) > 0 {
		st, _ := s.decode(item) // only for the message
		switch {
		case s.isReleased(item):
			why = "the claim was released"
		case st.rec.Status != driver.StatusInProgress:
			why = fmt.Sprintf("the record is %s", st.rec.Status)
		case st.rec.Owner == "":
			why = "the record has no lease owner (written by another library)"
		case st.rec.Owner != owner:
			why = "the lease was taken over by another owner"
		}
	}
	return storeError(op, id, fmt.Errorf("dynamostore: %s: %w", why, driver.ErrLeaseLost))
}
