package idempotentconsumer_test

import (
	"reflect"
	"sort"
	"strings"
	"testing"

	"github.com/aws/aws-cdk-go/awscdk/v2"
	"github.com/aws/aws-cdk-go/awscdk/v2/assertions"
	"github.com/aws/aws-cdk-go/awscdk/v2/awsdynamodb"
	"github.com/aws/aws-cdk-go/awscdk/v2/awskms"
	"github.com/aws/aws-cdk-go/awscdk/v2/awslambda"
	"github.com/aws/jsii-runtime-go"

	"github.com/sqsonce/sqsonce/infra/idempotentconsumer"
)

// keyProperty is, for each resource type the construct makes that can be
// encrypted with a customer-managed key, the property that names the key.
var keyProperty = map[string][]string{
	"AWS::DynamoDB::Table":  {"SSESpecification", "KMSMasterKeyId"},
	"AWS::SQS::Queue":       {"KmsMasterKeyId"},
	"AWS::Logs::LogGroup":   {"KmsKeyId"},
	"AWS::Lambda::Function": {"KmsKeyArn"},
}

// unencrypted are the construct's other resource types: none holds data
// a key could encrypt.
var unencrypted = map[string]bool{
	"AWS::IAM::Role": true, "AWS::IAM::Policy": true, "AWS::SQS::QueuePolicy": true,
	"AWS::Lambda::EventSourceMapping": true, "AWS::CloudWatch::Alarm": true, "AWS::KMS::Key": true,
	"AWS::KMS::Alias": true,
}

// namesKey checks that every encryptable resource of tpl names keyArn, and
// that tpl holds no resource type the test has not classified.
func namesKey(t *testing.T, tpl assertions.Template, keyArn any) {
	t.Helper()
	want := js(keyArn)
	seen := map[string]int{}
	res, _ := (*tpl.ToJSON())["Resources"].(map[string]any)
	for id, r := range res {
		typ, _ := r.(map[string]any)["Type"].(string)
		path, ok := keyProperty[typ]
		if !ok {
			if !unencrypted[typ] {
				t.Errorf("%s: resource type %s is neither encrypted with the key nor known to hold no data", id, typ)
			}
			continue
		}
		seen[typ]++
		var v any = props(t, r.(map[string]any))
		for _, k := range path {
			m, _ := v.(map[string]any)
			v = m[k]
		}
		if got := js(v); got != want {
			t.Errorf("%s (%s) %s = %s, want the key %s", id, typ, strings.Join(path, "."), got, want)
		}
	}
	for typ := range keyProperty {
		if seen[typ] == 0 {
			t.Errorf("no %s in the template", typ)
		}
	}
	if seen["AWS::SQS::Queue"] != 2 {
		t.Errorf("%d queues, want 2", seen["AWS::SQS::Queue"])
	}
}

// grantSet flattens the template's IAM policies to "resource action" lines.
func grantSet(t *testing.T, tpl assertions.Template) map[string]bool {
	t.Helper()
	out := map[string]bool{}
	for _, p := range *tpl.FindResources(jsii.String("AWS::IAM::Policy"), nil) {
		doc, _ := props(t, *p)["PolicyDocument"].(map[string]any)
		sts, _ := doc["Statement"].([]any)
		for _, s := range sts {
			st := s.(map[string]any)
			var actions, resources []any
			for k, dst := range map[string]*[]any{"Action": &actions, "Resource": &resources} {
				if l, ok := st[k].([]any); ok {
					*dst = l
				} else {
					*dst = []any{st[k]}
				}
			}
			for _, r := range resources {
				for _, a := range actions {
					out[js(r)+" "+a.(string)] = true
				}
			}
		}
	}
	return out
}

func minus(a, b map[string]bool) []string {
	var out []string
	for k := range a {
		if !b[k] {
			out = append(out, k)
		}
	}
	sort.Strings(out)
	return out
}

// TestConstructEncryptionKey: with Props.EncryptionKey every encryptable
// resource names the key, and the IAM differs from the default template's
// by exactly KeyActions on the key.
func TestConstructEncryptionKey(t *testing.T) {
	_, plain := build(t, "KeyNone", idempotentconsumer.Props{}, nil)
	var key awskms.Key
	c, tpl := build(t, "KeyGiven", idempotentconsumer.Props{}, func(stack awscdk.Stack, p *idempotentconsumer.Props) {
		key = awskms.NewKey(stack, jsii.String("UserKey"), nil)
		p.EncryptionKey = key
	})
	if c.EncryptionKey == nil {
		t.Fatal("Consumer.EncryptionKey is nil with Props.EncryptionKey")
	}
	keyID, _ := resourceOf(t, tpl, "AWS::KMS::Key", "UserKey")
	keyArn := map[string]any{"Fn::GetAtt": []any{keyID, "Arn"}}
	namesKey(t, tpl, keyArn)
	check(t, "table type", func() {
		tpl.HasResourceProperties(jsii.String("AWS::DynamoDB::Table"), map[string]any{
			"SSESpecification": map[string]any{"SSEEnabled": true, "SSEType": "KMS", "KMSMasterKeyId": keyArn},
		})
	})

	gotKey, gotPlain := grantSet(t, tpl), grantSet(t, plain)
	var want []string
	for _, a := range idempotentconsumer.KeyActions() {
		want = append(want, js(keyArn)+" "+a)
	}
	sort.Strings(want)
	if got := minus(gotKey, gotPlain); !reflect.DeepEqual(got, want) {
		t.Errorf("grants added by the key:\n%v\nwant exactly\n%v", got, want)
	}
	if got := minus(gotPlain, gotKey); len(got) != 0 {
		t.Errorf("grants the key removed: %v", got)
	}
	if got, want := idempotentconsumer.KeyActions(), []string{"kms:Decrypt", "kms:GenerateDataKey"}; !reflect.DeepEqual(got, want) {
		t.Errorf("KeyActions %v, want %v", got, want)
	}

	// CloudWatch Logs may use the key, for this account's log groups.
	_, k := resourceOf(t, tpl, "AWS::KMS::Key", "UserKey")
	policy := js(props(t, k)["KeyPolicy"])
	for _, s := range []string{`"Sid":"CloudWatchLogs"`, `"Service":{"Fn::Join":["",["logs.",{"Ref":"AWS::Region"},".",{"Ref":"AWS::URLSuffix"}]]}`, `"kms:EncryptionContext:aws:logs:arn"`, `:log-group:*"`} {
		if !strings.Contains(policy, s) {
			t.Errorf("key policy %s lacks %s", policy, s)
		}
	}
}

// TestConstructCreateEncryptionKey: the construct's own key, rotated and
// retained, encrypts everything.
func TestConstructCreateEncryptionKey(t *testing.T) {
	c, tpl := build(t, "KeyCreated", idempotentconsumer.Props{CreateEncryptionKey: true}, nil)
	if c.EncryptionKey == nil {
		t.Fatal("Consumer.EncryptionKey is nil with CreateEncryptionKey")
	}
	keyID, k := resourceOf(t, tpl, "AWS::KMS::Key", "ConsumerKey")
	if got := js(props(t, k)["EnableKeyRotation"]); got != "true" {
		t.Errorf("EnableKeyRotation %s, want true", got)
	}
	if k["DeletionPolicy"] != "Retain" {
		t.Errorf("DeletionPolicy %v, want Retain", k["DeletionPolicy"])
	}
	namesKey(t, tpl, map[string]any{"Fn::GetAtt": []any{keyID, "Arn"}})
}

// TestConstructTableKey: a Props.Table encrypted with a customer-managed
// key gets KeyActions on that key, and only then.
func TestConstructTableKey(t *testing.T) {
	const arn = "arn:aws:kms:eu-west-1:111122223333:key/1234abcd-12ab-34cd-56ef-1234567890ab"
	_, tpl := build(t, "KeyTable", idempotentconsumer.Props{}, func(stack awscdk.Stack, p *idempotentconsumer.Props) {
		p.Table = awsdynamodb.Table_FromTableAttributes(stack, jsii.String("Shared"), &awsdynamodb.TableAttributes{
			TableName:     jsii.String("shared-idempotency"),
			EncryptionKey: awskms.Key_FromKeyArn(stack, jsii.String("SharedKey"), jsii.String(arn)),
		})
	})
	var got []string
	for g := range grantSet(t, tpl) {
		if strings.Contains(g, "kms:") {
			got = append(got, g)
		}
	}
	sort.Strings(got)
	var want []string
	for _, a := range idempotentconsumer.KeyActions() {
		want = append(want, js(arn)+" "+a)
	}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("kms grants %v, want exactly %v", got, want)
	}
}

func TestEncryptionKeyRefusals(t *testing.T) {
	_, err := idempotentconsumer.Props{Namespace: "orders", CreateEncryptionKey: true,
		EncryptionKey: awskms.Key_FromKeyArn(awscdk.NewStack(nil, nil, nil), jsii.String("K"), jsii.String("arn:aws:kms:eu-west-1:111122223333:key/x"))}.Plan()
	if err == nil || !strings.Contains(err.Error(), "CreateEncryptionKey") {
		t.Errorf("Plan with both keys: %v, want a refusal", err)
	}
}

// TestGrantItemsTableKey: GrantItems on a table encrypted with its own
// customer-managed key grants KeyActions on that key too.
func TestGrantItemsTableKey(t *testing.T) {
	const arn = "arn:aws:kms:eu-west-1:111122223333:key/abcd1234-12ab-34cd-56ef-1234567890ab"
	app := awscdk.NewApp(&awscdk.AppProps{Outdir: jsii.String(t.TempDir())})
	stack := awscdk.NewStack(app, jsii.String("KeyGrantItems"), nil)
	c, err := idempotentconsumer.New(stack, "Consumer", idempotentconsumer.Props{
		Namespace: "orders", Code: awslambda.Code_FromAsset(jsii.String(zipPath), nil),
	})
	if err != nil {
		t.Fatal(err)
	}
	c.GrantItems(awsdynamodb.Table_FromTableAttributes(stack, jsii.String("Summaries"), &awsdynamodb.TableAttributes{
		TableName:     jsii.String("summaries"),
		EncryptionKey: awskms.Key_FromKeyArn(stack, jsii.String("SummariesKey"), jsii.String(arn)),
	}))
	var tpl assertions.Template
	check(t, "synth", func() { tpl = assertions.Template_FromStack(stack, nil) })
	if tpl == nil {
		t.FailNow()
	}
	var got []string
	for g := range grantSet(t, tpl) {
		if strings.Contains(g, "kms:") {
			got = append(got, g)
		}
	}
	sort.Strings(got)
	var want []string
	for _, a := range idempotentconsumer.KeyActions() {
		want = append(want, js(arn)+" "+a)
	}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("kms grants %v, want exactly %v", got, want)
	}
}

// sealEnv is the function's SQSONCE_SEAL_KEY in tpl, nil when unset.
func sealEnv(t *testing.T, tpl assertions.Template) any {
	t.Helper()
	_, fn := resourceOf(t, tpl, "AWS::Lambda::Function", "ConsumerFunction")
	vars, _ := props(t, fn)["Environment"].(map[string]any)["Variables"].(map[string]any)
	return vars[idempotentconsumer.EnvSealKey]
}

// TestConstructSealKey: with Props.SealKey the function's SQSONCE_SEAL_KEY
// is the key's ARN, and the IAM differs from the default template's by
// exactly KeyActions on that key; nothing else is encrypted with it. With
// SealWithEncryptionKey the variable names the encryption key and the IAM
// is the encryption key's, nothing more.
func TestConstructSealKey(t *testing.T) {
	_, plain := build(t, "SealNone", idempotentconsumer.Props{}, nil)
	if v := sealEnv(t, plain); v != nil {
		t.Errorf("without a seal key, %s = %s", idempotentconsumer.EnvSealKey, js(v))
	}
	c, tpl := build(t, "SealGiven", idempotentconsumer.Props{}, func(stack awscdk.Stack, p *idempotentconsumer.Props) {
		p.SealKey = awskms.NewKey(stack, jsii.String("ResultsKey"), nil)
	})
	if c.SealKey == nil || c.EncryptionKey != nil {
		t.Fatalf("Consumer.SealKey %v, EncryptionKey %v; want the seal key only", c.SealKey, c.EncryptionKey)
	}
	keyID, _ := resourceOf(t, tpl, "AWS::KMS::Key", "ResultsKey")
	keyArn := map[string]any{"Fn::GetAtt": []any{keyID, "Arn"}}
	if got := js(sealEnv(t, tpl)); got != js(keyArn) {
		t.Errorf("%s = %s, want the key's ARN %s", idempotentconsumer.EnvSealKey, got, js(keyArn))
	}
	var want []string
	for _, a := range idempotentconsumer.KeyActions() {
		want = append(want, js(keyArn)+" "+a)
	}
	sort.Strings(want)
	gotSeal, gotPlain := grantSet(t, tpl), grantSet(t, plain)
	if got := minus(gotSeal, gotPlain); !reflect.DeepEqual(got, want) {
		t.Errorf("grants added by the seal key:\n%v\nwant exactly\n%v", got, want)
	}
	if got := minus(gotPlain, gotSeal); len(got) != 0 {
		t.Errorf("grants the seal key removed: %v", got)
	}
	if strings.Contains(js(tpl.ToJSON()), `"KmsMasterKeyId"`) || strings.Contains(js(tpl.ToJSON()), `"KmsKeyArn"`) {
		t.Error("the seal key encrypts a resource: it seals results only")
	}

	_, enc := build(t, "EncOnly", idempotentconsumer.Props{CreateEncryptionKey: true}, nil)
	c, both := build(t, "SealEnc", idempotentconsumer.Props{CreateEncryptionKey: true, SealWithEncryptionKey: true}, nil)
	if c.SealKey == nil || c.SealKey != c.EncryptionKey {
		t.Fatalf("SealWithEncryptionKey: Consumer.SealKey %v, want EncryptionKey %v", c.SealKey, c.EncryptionKey)
	}
	encID, _ := resourceOf(t, both, "AWS::KMS::Key", "ConsumerKey")
	if got, want := js(sealEnv(t, both)), js(map[string]any{"Fn::GetAtt": []any{encID, "Arn"}}); got != want {
		t.Errorf("SealWithEncryptionKey: %s = %s, want %s", idempotentconsumer.EnvSealKey, got, want)
	}
	if d := append(minus(grantSet(t, both), grantSet(t, enc)), minus(grantSet(t, enc), grantSet(t, both))...); len(d) != 0 {
		t.Errorf("SealWithEncryptionKey changes the grants of the encryption key: %v", d)
	}
}

func TestSealKeyRefusals(t *testing.T) {
	key := awskms.Key_FromKeyArn(awscdk.NewStack(nil, nil, nil), jsii.String("K"), jsii.String("arn:aws:kms:eu-west-1:111122223333:key/x"))
	for want, p := range map[string]idempotentconsumer.Props{
		"seal with one key":           {Namespace: "orders", CreateEncryptionKey: true, SealKey: key, SealWithEncryptionKey: true},
		"needs Props.EncryptionKey":   {Namespace: "orders", SealWithEncryptionKey: true},
		"which the construct derives": {Namespace: "orders", Environment: map[string]string{idempotentconsumer.EnvSealKey: "alias/x"}},
	} {
		if _, err := p.Plan(); err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("Plan: %v, want a refusal holding %q", err, want)
		}
	}
}
