package main

import (
	"context"
	"encoding/json"
	"errors"
	"os"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/aws/aws-lambda-go/events"
	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"github.com/sqsonce/sqsonce/internal/testenv/powertools"
	"github.com/sqsonce/sqsonce/middleware/batch"
)

// The bare arm: the floor of any implementation on aws-sdk-go-v2, written
// by hand: for each record, one conditional PutItem that claims the key
// (ALL_OLD on failure), the model, one UpdateItem that completes it; a
// COMPLETED record found by the claim is replayed, any other is a batch item
// failure. No lease, fence, key format, log line or outcome report. Records
// run concurrently, at most batch.DefaultConcurrency at once, as the
// sqsonce side's zero-value batch.Options run them.
func newBareHandler(req powertools.Request, ran func(string)) func(context.Context, events.SQSEvent) (events.SQSEventResponse, error) {
	db := client(req.Endpoint)
	table := aws.String(req.Table)
	model := time.Duration(req.ModelMs) * time.Millisecond
	claimCond := aws.String("attribute_not_exists(id)")
	completeExpr := aws.String("SET #s = :c, #d = :d")
	completeNames := map[string]string{"#s": "status", "#d": "data"}
	expires := strconv.FormatInt(time.Now().Add(time.Hour).Unix(), 10)
	record := func(ctx context.Context, m events.SQSMessage) error {
		var b struct {
			Key    string          `json:"idempotency_key"`
			Result json.RawMessage `json:"result"`
		}
		if err := json.Unmarshal([]byte(m.Body), &b); err != nil {
			return err
		}
		id := &types.AttributeValueMemberS{Value: req.KeyPrefix + "#" + b.Key}
		_, err := db.PutItem(ctx, &dynamodb.PutItemInput{
			TableName: table,
			Item: map[string]types.AttributeValue{
				"id":         id,
				"status":     &types.AttributeValueMemberS{Value: "INPROGRESS"},
				"expiration": &types.AttributeValueMemberN{Value: expires},
			},
			ConditionExpression:                 claimCond,
			ReturnValuesOnConditionCheckFailure: types.ReturnValuesOnConditionCheckFailureAllOld,
		})
		var cf *types.ConditionalCheckFailedException
		if errors.As(err, &cf) {
			if s, ok := cf.Item["status"].(*types.AttributeValueMemberS); ok && s.Value == "COMPLETED" {
				return nil // replayed: its data is the stored result
			}
			return errors.New("in progress")
		}
		if err != nil {
			return err
		}
		ran(m.MessageId)
		select {
		case <-time.After(model): // the model call
		case <-ctx.Done():
			return ctx.Err()
		}
		_, err = db.UpdateItem(ctx, &dynamodb.UpdateItemInput{
			TableName:                table,
			Key:                      map[string]types.AttributeValue{"id": id},
			UpdateExpression:         completeExpr,
			ExpressionAttributeNames: completeNames,
			ExpressionAttributeValues: map[string]types.AttributeValue{
				":c": &types.AttributeValueMemberS{Value: "COMPLETED"},
				":d": &types.AttributeValueMemberS{Value: string(b.Result)},
			},
		})
		return err
	}
	return func(ctx context.Context, ev events.SQSEvent) (events.SQSEventResponse, error) {
		var (
			resp events.SQSEventResponse
			mu   sync.Mutex
			wg   sync.WaitGroup
			sem  = make(chan struct{}, batch.DefaultConcurrency)
		)
		for _, m := range ev.Records {
			sem <- struct{}{}
			wg.Go(func() {
				defer func() { <-sem }()
				if record(ctx, m) != nil {
					mu.Lock()
					resp.BatchItemFailures = append(resp.BatchItemFailures, events.SQSBatchItemFailure{ItemIdentifier: m.MessageId})
					mu.Unlock()
				}
			})
		}
		wg.Wait()
		return resp, nil
	}
}

// processCPU is the user + system CPU time of process pid so far, from
// /proc/pid/stat (clock ticks of 10 ms).
func processCPU(pid int) (time.Duration, error) {
	b, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/stat")
	if err != nil {
		return 0, err
	}
	// The fields after the command's closing parenthesis: state is the
	// first (field 3), utime and stime are fields 14 and 15.
	s := string(b)
	i := strings.LastIndexByte(s, ')')
	f := strings.Fields(s[i+1:])
	if len(f) < 13 {
		return 0, errors.New("benchpeer: short /proc stat")
	}
	ut, err1 := strconv.ParseInt(f[11], 10, 64)
	st, err2 := strconv.ParseInt(f[12], 10, 64)
	if err := errors.Join(err1, err2); err != nil {
		return 0, err
	}
	return time.Duration(ut+st) * 10 * time.Millisecond, nil
}

// serverPID finds the process that serves on port: the moto_server that
// motoserver.Start launched (its command line names the port).
func serverPID(port string) (int, error) {
	dirs, err := os.ReadDir("/proc")
	if err != nil {
		return 0, err
	}
	self := os.Getpid()
	for _, d := range dirs {
		pid, err := strconv.Atoi(d.Name())
		if err != nil || pid == self {
			continue
		}
		cmd, err := os.ReadFile("/proc/" + d.Name() + "/cmdline")
		if err != nil {
			continue
		}
		args := strings.Split(string(cmd), "\x00")
		if !strings.Contains(string(cmd), "moto") {
			continue
		}
		for _, a := range args {
			if a == port {
				return pid, nil
			}
		}
	}
	return 0, errors.New("benchpeer: no moto_server process found on port " + port)
}
