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
	"github.com/aws/jsii-runtime-go"

	"github.com/sqsonce/sqsonce/infra/idempotentconsumer"
)

// IAM names a KMS key in a statement's Resource by its key ARN only: a key
// id, alias name or alias ARN there matches no key, and the principal gets
// AccessDenied (KMS developer guide, "Specifying KMS keys in IAM policy
// statements"). These tests give the construct aliases where it takes an
// awskms.IKey and check that no grant names one.

// kmsStatements returns the template's IAM statements that hold a kms:
// action.
func kmsStatements(t *testing.T, tpl assertions.Template) []map[string]any {
	t.Helper()
	var out []map[string]any
	for _, p := range *tpl.FindResources(jsii.String("AWS::IAM::Policy"), nil) {
		doc, _ := props(t, *p)["PolicyDocument"].(map[string]any)
		sts, _ := doc["Statement"].([]any)
		for _, s := range sts {
			st := s.(map[string]any)
			if strings.Contains(js(st["Action"]), `"kms:`) {
				out = append(out, st)
			}
		}
	}
	return out
}

// noAliasGrant fails t for every kms grant of tpl whose resource names an
// alias.
func noAliasGrant(t *testing.T, tpl assertions.Template) {
	t.Helper()
	for g := range grantSet(t, tpl) {
		if strings.Contains(g, "kms:") && strings.Contains(g, "alias/") {
			t.Errorf("a kms grant names an alias, not a key (IAM matches no key by it): %s", g)
		}
	}
}

// keyGrants is KeyActions on keyArn, as grantSet spells them.
func keyGrants(keyArn any) []string {
	var want []string
	for _, a := range idempotentconsumer.KeyActions() {
		want = append(want, js(keyArn)+" "+a)
	}
	sort.Strings(want)
	return want
}

// TestConstructSealKeyAlias: an awskms.Alias of a key of the app as
// Props.SealKey is granted on the alias's target key, by its ARN, and
// SQSONCE_SEAL_KEY stays the alias's ARN (kmsseal takes an alias).
func TestConstructSealKeyAlias(t *testing.T) {
	_, plain := build(t, "SealAliasNone", idempotentconsumer.Props{}, nil)
	c, tpl := build(t, "SealAlias", idempotentconsumer.Props{}, func(stack awscdk.Stack, p *idempotentconsumer.Props) {
		key := awskms.NewKey(stack, jsii.String("ResultsKey"), nil)
		p.SealKey = awskms.NewAlias(stack, jsii.String("ResultsAlias"), &awskms.AliasProps{
			AliasName: jsii.String("alias/results"), TargetKey: key})
	})
	noAliasGrant(t, tpl)
	keyID, _ := resourceOf(t, tpl, "AWS::KMS::Key", "ResultsKey")
	keyArn := map[string]any{"Fn::GetAtt": []any{keyID, "Arn"}}
	if got, want := minus(grantSet(t, tpl), grantSet(t, plain)), keyGrants(keyArn); !reflect.DeepEqual(got, want) {
		t.Errorf("grants added by the aliased seal key:\n%v\nwant exactly KeyActions on the target key\n%v", got, want)
	}
	if got := minus(grantSet(t, plain), grantSet(t, tpl)); len(got) != 0 {
		t.Errorf("grants the aliased seal key removed: %v", got)
	}
	if env := js(sealEnv(t, tpl)); !strings.Contains(env, ":alias/results") {
		t.Errorf("%s = %s, want the alias's ARN", idempotentconsumer.EnvSealKey, env)
	}
	if c.SealKey == nil {
		t.Error("Consumer.SealKey is nil with an aliased Props.SealKey")
	}
	if s := js(tpl.ToJSON()); strings.Contains(s, `"KmsMasterKeyId"`) || strings.Contains(s, `"KmsKeyArn"`) {
		t.Error("the seal key encrypts a resource: it seals results only")
	}
}

// TestConstructSealKeyAliasAttributes: an alias imported with its target
// key (Alias_FromAliasAttributes) is granted on that key.
func TestConstructSealKeyAliasAttributes(t *testing.T) {
	const arn = "arn:aws:kms:eu-west-1:111122223333:key/1234abcd-12ab-34cd-56ef-1234567890ab"
	_, tpl := build(t, "SealAliasAttrs", idempotentconsumer.Props{}, func(stack awscdk.Stack, p *idempotentconsumer.Props) {
		p.SealKey = awskms.Alias_FromAliasAttributes(stack, jsii.String("ResultsAlias"), &awskms.AliasAttributes{
			AliasName:      jsii.String("alias/results"),
			AliasTargetKey: awskms.Key_FromKeyArn(stack, jsii.String("ResultsKey"), jsii.String(arn)),
		})
	})
	noAliasGrant(t, tpl)
	var got []string
	for g := range grantSet(t, tpl) {
		if strings.Contains(g, "kms:") {
			got = append(got, g)
		}
	}
	sort.Strings(got)
	if want := keyGrants(arn); !reflect.DeepEqual(got, want) {
		t.Errorf("kms grants %v, want exactly %v", got, want)
	}
}

// wantAliasCondition checks that the template's one kms statement grants
// exactly KeyActions on the keys of keyPattern's account and Region that
// carry alias (kms:ResourceAliases), under sid.
func wantAliasCondition(t *testing.T, tpl assertions.Template, sid string, keyPattern any, alias string) {
	t.Helper()
	sts := kmsStatements(t, tpl)
	if len(sts) != 1 {
		t.Fatalf("kms statements %s, want one", js(sts))
	}
	st := sts[0]
	actions, _ := st["Action"].([]any)
	var gotActions []string
	for _, a := range actions {
		gotActions = append(gotActions, a.(string))
	}
	sort.Strings(gotActions)
	if want := idempotentconsumer.KeyActions(); !reflect.DeepEqual(gotActions, want) {
		t.Errorf("actions %v, want %v", gotActions, want)
	}
	if got, want := js(st["Resource"]), js(keyPattern); got != want {
		t.Errorf("Resource %s, want the account's and Region's keys %s", got, want)
	}
	want := map[string]any{"ForAnyValue:StringEquals": map[string]any{"kms:ResourceAliases": alias}}
	if got := js(st["Condition"]); got != js(want) {
		t.Errorf("Condition %s, want %s", got, js(want))
	}
	if sid != "" && st["Sid"] != sid {
		t.Errorf("Sid %v, want %s", st["Sid"], sid)
	}
}

// TestConstructSealKeyImportedAlias: an alias imported by name, whose key
// the app does not know, is granted on the keys of its account and Region
// that carry it (kms:ResourceAliases), as the CDK's own grant on such an
// alias does; so is a key "ARN" that names an alias.
func TestConstructSealKeyImportedAlias(t *testing.T) {
	_, tpl := build(t, "SealAliasImported", idempotentconsumer.Props{}, func(stack awscdk.Stack, p *idempotentconsumer.Props) {
		p.SealKey = awskms.Alias_FromAliasName(stack, jsii.String("ResultsAlias"), jsii.String("alias/results"))
	})
	noAliasGrant(t, tpl)
	keys := map[string]any{"Fn::Join": []any{"", []any{
		"arn:", map[string]any{"Ref": "AWS::Partition"}, ":kms:", map[string]any{"Ref": "AWS::Region"}, ":",
		map[string]any{"Ref": "AWS::AccountId"}, ":key/*",
	}}}
	wantAliasCondition(t, tpl, "SealResults", keys, "alias/results")
	if env := js(sealEnv(t, tpl)); !strings.Contains(env, ":alias/results") {
		t.Errorf("%s = %s, want the alias's ARN", idempotentconsumer.EnvSealKey, env)
	}

	const aliasArn = "arn:aws:kms:eu-west-1:111122223333:alias/results"
	_, tpl = build(t, "SealAliasArn", idempotentconsumer.Props{}, func(stack awscdk.Stack, p *idempotentconsumer.Props) {
		p.SealKey = awskms.Key_FromKeyArn(stack, jsii.String("ResultsKey"), jsii.String(aliasArn))
	})
	noAliasGrant(t, tpl)
	wantAliasCondition(t, tpl, "SealResults", "arn:aws:kms:eu-west-1:111122223333:key/*", "alias/results")
	if got := js(sealEnv(t, tpl)); got != js(aliasArn) {
		t.Errorf("%s = %s, want %s", idempotentconsumer.EnvSealKey, got, aliasArn)
	}
}

// TestConstructSealKeyAliasOfEncryptionKey: a seal key that is an alias of
// the encryption key adds no grant: the encryption key's holds both
// actions.
func TestConstructSealKeyAliasOfEncryptionKey(t *testing.T) {
	_, enc := build(t, "SealAliasEncOnly", idempotentconsumer.Props{}, func(stack awscdk.Stack, p *idempotentconsumer.Props) {
		p.EncryptionKey = awskms.NewKey(stack, jsii.String("UserKey"), nil)
	})
	_, both := build(t, "SealAliasEnc", idempotentconsumer.Props{}, func(stack awscdk.Stack, p *idempotentconsumer.Props) {
		key := awskms.NewKey(stack, jsii.String("UserKey"), nil)
		p.EncryptionKey = key
		p.SealKey = awskms.NewAlias(stack, jsii.String("ResultsAlias"), &awskms.AliasProps{
			AliasName: jsii.String("alias/results"), TargetKey: key})
	})
	noAliasGrant(t, both)
	if d := append(minus(grantSet(t, both), grantSet(t, enc)), minus(grantSet(t, enc), grantSet(t, both))...); len(d) != 0 {
		t.Errorf("an alias of the encryption key as SealKey changes the grants: %v", d)
	}
}

// TestConstructEncryptionKeyAlias: an awskms.Alias of a key of the app as
// Props.EncryptionKey is its target key throughout: every encryptable
// resource names the key's ARN (CloudWatch Logs and Lambda take a key
// ARN), the grant is on the key, and the key's policy lets CloudWatch Logs
// use it.
func TestConstructEncryptionKeyAlias(t *testing.T) {
	_, plain := build(t, "KeyAliasNone", idempotentconsumer.Props{}, nil)
	var key awskms.Key
	c, tpl := build(t, "KeyAlias", idempotentconsumer.Props{}, func(stack awscdk.Stack, p *idempotentconsumer.Props) {
		key = awskms.NewKey(stack, jsii.String("UserKey"), nil)
		p.EncryptionKey = awskms.NewAlias(stack, jsii.String("UserAlias"), &awskms.AliasProps{
			AliasName: jsii.String("alias/consumer"), TargetKey: key})
	})
	noAliasGrant(t, tpl)
	keyID, k := resourceOf(t, tpl, "AWS::KMS::Key", "UserKey")
	keyArn := map[string]any{"Fn::GetAtt": []any{keyID, "Arn"}}
	namesKey(t, tpl, keyArn)
	if got, want := minus(grantSet(t, tpl), grantSet(t, plain)), keyGrants(keyArn); !reflect.DeepEqual(got, want) {
		t.Errorf("grants added by the aliased key:\n%v\nwant exactly\n%v", got, want)
	}
	if c.EncryptionKey == nil || *c.EncryptionKey.KeyArn() != *key.KeyArn() {
		t.Errorf("Consumer.EncryptionKey is not the alias's target key")
	}
	if policy := js(props(t, k)["KeyPolicy"]); !strings.Contains(policy, `"Sid":"CloudWatchLogs"`) {
		t.Errorf("key policy %s lacks the CloudWatchLogs statement", policy)
	}
}

// TestEncryptionKeyAliasRefusals: an encryption key the app knows only by
// an alias is refused: the log group and the function's environment take
// a key ARN, and a grant names keys only.
func TestEncryptionKeyAliasRefusals(t *testing.T) {
	stack := awscdk.NewStack(nil, nil, nil)
	for name, key := range map[string]awskms.IKey{
		"by name": awskms.Alias_FromAliasName(stack, jsii.String("ByName"), jsii.String("alias/consumer")),
		"by ARN":  awskms.Key_FromKeyArn(stack, jsii.String("ByArn"), jsii.String("arn:aws:kms:eu-west-1:111122223333:alias/consumer")),
	} {
		_, err := idempotentconsumer.Props{Namespace: "orders", EncryptionKey: key}.Plan()
		if err == nil || !strings.Contains(err.Error(), "Props.EncryptionKey") || !strings.Contains(err.Error(), "alias/consumer") ||
			!strings.Contains(err.Error(), "Alias_FromAliasAttributes") {
			t.Errorf("%s: Plan: %v, want a refusal naming the alias and the fix", name, err)
		}
	}
	// An alias with its target known is not refused.
	target := awskms.Key_FromKeyArn(stack, jsii.String("Target"), jsii.String("arn:aws:kms:eu-west-1:111122223333:key/x"))
	known := awskms.Alias_FromAliasAttributes(stack, jsii.String("Known"), &awskms.AliasAttributes{
		AliasName: jsii.String("alias/consumer"), AliasTargetKey: target})
	if _, err := (idempotentconsumer.Props{Namespace: "orders", EncryptionKey: known}).Plan(); err != nil {
		t.Errorf("Plan with an alias of a known key: %v", err)
	}
}

// TestConstructTableKeyAlias: a Props.Table whose key is an alias gets
// KeyActions on the alias's target key, or, for an alias imported by name,
// on the keys that carry it.
func TestConstructTableKeyAlias(t *testing.T) {
	const arn = "arn:aws:kms:eu-west-1:111122223333:key/1234abcd-12ab-34cd-56ef-1234567890ab"
	_, tpl := build(t, "TableKeyAlias", idempotentconsumer.Props{}, func(stack awscdk.Stack, p *idempotentconsumer.Props) {
		p.Table = awsdynamodb.Table_FromTableAttributes(stack, jsii.String("Shared"), &awsdynamodb.TableAttributes{
			TableName: jsii.String("shared-idempotency"),
			EncryptionKey: awskms.Alias_FromAliasAttributes(stack, jsii.String("SharedAlias"), &awskms.AliasAttributes{
				AliasName:      jsii.String("alias/shared"),
				AliasTargetKey: awskms.Key_FromKeyArn(stack, jsii.String("SharedKey"), jsii.String(arn)),
			}),
		})
	})
	noAliasGrant(t, tpl)
	var got []string
	for g := range grantSet(t, tpl) {
		if strings.Contains(g, "kms:") {
			got = append(got, g)
		}
	}
	sort.Strings(got)
	if want := keyGrants(arn); !reflect.DeepEqual(got, want) {
		t.Errorf("kms grants %v, want exactly %v", got, want)
	}

	_, tpl = build(t, "TableKeyAliasImported", idempotentconsumer.Props{}, func(stack awscdk.Stack, p *idempotentconsumer.Props) {
		p.Table = awsdynamodb.Table_FromTableAttributes(stack, jsii.String("Shared"), &awsdynamodb.TableAttributes{
			TableName:     jsii.String("shared-idempotency"),
			EncryptionKey: awskms.Alias_FromAliasName(stack, jsii.String("SharedAlias"), jsii.String("alias/shared")),
		})
	})
	noAliasGrant(t, tpl)
	keys := map[string]any{"Fn::Join": []any{"", []any{
		"arn:", map[string]any{"Ref": "AWS::Partition"}, ":kms:", map[string]any{"Ref": "AWS::Region"}, ":",
		map[string]any{"Ref": "AWS::AccountId"}, ":key/*",
	}}}
	wantAliasCondition(t, tpl, "", keys, "alias/shared")
}
