package sqsdlq_test

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"unicode/utf8"

	"github.com/aws/aws-lambda-go/events"
	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/sqs"

	"github.com/sqsonce/sqsonce/middleware/batch"
	"github.com/sqsonce/sqsonce/middleware/batch/sqsdlq"
)

// strictSQS is fakeSQS that refuses a SendMessage as SQS does: more than
// ten attributes, a size (body, attribute names, types and values) above
// maxSize, or a string value with a character SQS does not take.
type strictSQS struct {
	fakeSQS
	maxSize int
}

func sqsTakes(s string) bool {
	if !utf8.ValidString(s) {
		return false
	}
	for _, r := range s {
		if !(r == 0x9 || r == 0xA || r == 0xD || 0x20 <= r && r <= 0xD7FF || 0xE000 <= r && r <= 0xFFFD || 0x10000 <= r && r <= 0x10FFFF) {
			return false
		}
	}
	return true
}

func (f *strictSQS) SendMessage(ctx context.Context, in *sqs.SendMessageInput, opts ...func(*sqs.Options)) (*sqs.SendMessageOutput, error) {
	if len(in.MessageAttributes) > 10 {
		return nil, fmt.Errorf("InvalidParameterValue: %d message attributes", len(in.MessageAttributes))
	}
	size := len(aws.ToString(in.MessageBody))
	for name, a := range in.MessageAttributes {
		size += len(name) + len(aws.ToString(a.DataType)) + len(aws.ToString(a.StringValue)) + len(a.BinaryValue)
		if !sqsTakes(aws.ToString(a.StringValue)) {
			return nil, fmt.Errorf("InvalidParameterValue: attribute %s has invalid characters", name)
		}
	}
	if size > f.maxSize {
		return nil, fmt.Errorf("InvalidParameterValue: message of %d bytes, must be shorter than %d", size, f.maxSize)
	}
	return f.fakeSQS.SendMessage(ctx, in, opts...)
}

// TestReasonCharacters: a record's error message with characters SQS
// refuses in an attribute value (control characters, bytes that are not
// UTF-8, U+FFFE) is sent with U+FFFD in their place: before, SendMessage
// failed on it at every delivery and the message was never moved.
func TestReasonCharacters(t *testing.T) {
	f := &strictSQS{maxSize: sqsdlq.MaxSize}
	m := newMover(t, f, sqsdlq.WithDeadLetterQueue(srcARN, dlqARN))
	mv := move("m1", srcARN, nil)
	mv.Reason = "decode: invalid byte \x00 at 3, \xff\xfe, escape \x1b[31m, \ufffe, tab\tok é"
	mv.ErrorType = "*x.Err[\x01]"
	if errs := m.MoveToDeadLetter(t.Context(), []batch.DeadLetterMove{mv}); errs != nil {
		t.Fatalf("move failed: %v", errs)
	}
	if len(f.sends) != 1 || len(f.deletes) != 1 {
		t.Fatalf("%d sends, %d deletes, want 1 each", len(f.sends), len(f.deletes))
	}
	got := aws.ToString(f.sends[0].MessageAttributes[sqsdlq.AttrReason].StringValue)
	want := "decode: invalid byte \ufffd at 3, \ufffd\ufffd, escape \ufffd[31m, \ufffd, tab\tok é"
	if got != want {
		t.Errorf("reason = %q, want %q", got, want)
	}
	if got := aws.ToString(f.sends[0].MessageAttributes[sqsdlq.AttrErrorType].StringValue); got != "*x.Err[\ufffd]" {
		t.Errorf("error type = %q", got)
	}
}

// TestSizeNearLimit: a message within 256 KiB as received, its body and
// attributes near the limit, is moved with the reason attributes that fit
// (shorter ones when the reason does not), its own intact: before, the
// reasons took it over SQS's size, SendMessage failed at every delivery,
// and the message was never moved.
func TestSizeNearLimit(t *testing.T) {
	own := map[string]events.SQSMessageAttribute{"tenant": {DataType: "String", StringValue: aws.String("t-1")}}
	ownSize := len("tenant") + len("String") + len("t-1")
	for _, room := range []int{0, 1, 60, 200, 2000} {
		t.Run(fmt.Sprint("room ", room), func(t *testing.T) {
			f := &strictSQS{maxSize: sqsdlq.MaxSize}
			m := newMover(t, f, sqsdlq.WithDeadLetterQueue(srcARN, dlqARN))
			mv := move("m1", srcARN, own)
			mv.Message.Body = strings.Repeat("b", sqsdlq.MaxSize-ownSize-room)
			mv.Reason = strings.Repeat("r", 500)
			if errs := m.MoveToDeadLetter(t.Context(), []batch.DeadLetterMove{mv}); errs != nil {
				t.Fatalf("move failed: %v", errs)
			}
			sent := f.sends[0]
			if aws.ToString(sent.MessageBody) != mv.Message.Body || aws.ToString(sent.MessageAttributes["tenant"].StringValue) != "t-1" {
				t.Error("the body or the message's own attribute changed")
			}
			_, hasReason := sent.MessageAttributes[sqsdlq.AttrReason]
			_, hasType := sent.MessageAttributes[sqsdlq.AttrErrorType] // 45 bytes
			if hasReason != (room >= 1000) || hasType != (room >= 45) {
				t.Errorf("room %d: reason sent %v, error type sent %v", room, hasReason, hasType)
			}
		})
	}
	// A message larger than MaxSize as received (its queue takes more) is
	// sent as it came, without reasons.
	f := &strictSQS{maxSize: 1 << 20}
	m := newMover(t, f, sqsdlq.WithDeadLetterQueue(srcARN, dlqARN))
	mv := move("m2", srcARN, nil)
	mv.Message.Body = strings.Repeat("b", sqsdlq.MaxSize+1)
	if errs := m.MoveToDeadLetter(t.Context(), []batch.DeadLetterMove{mv}); errs != nil {
		t.Fatalf("move failed: %v", errs)
	}
	if n := len(f.sends[0].MessageAttributes); n != 0 {
		t.Errorf("%d reason attributes on a message above MaxSize, want none", n)
	}
}
