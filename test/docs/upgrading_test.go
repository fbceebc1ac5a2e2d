package docs_test

import (
	"strings"
	"testing"

	"github.com/sqsonce/sqsonce/middleware/lambdaenv/envvars"
)

// TestUpgradingNamesVariablesNowApplied: the variables a function
// configured by lambdaenv applies since this release, and a function of
// v0.9.0 ignored (its lambdaenv built the guard with the native format,
// dynamostore in its default data format and redisstore.New with no
// prefix; only sqsonce-ops read them), are named where docs/upgrading.md
// says what an upgrade must do. Set on a function, each changes the record
// ids, Redis keys or data format it reads: records the previous release
// wrote for messages still in flight are not found (the message runs
// again) or do not decode (it fails until the record expires), which is
// the step docs/upgrading.md must give before the deploy.
func TestUpgradingNamesVariablesNowApplied(t *testing.T) {
	page := read(t, "docs/upgrading.md")
	_, actions, ok := strings.Cut(page, "What needs an action:")
	if !ok {
		t.Fatal(`docs/upgrading.md has no "What needs an action:" list`)
	}
	for _, v := range []string{envvars.EnvFormat, envvars.EnvDataFormat, envvars.EnvRedisKeyPrefix} {
		if !strings.Contains(actions, "`"+v+"`") {
			t.Errorf("docs/upgrading.md's actions do not name %s, which a function applies since this release and ignored before: "+
				"set on a function, its ids, keys or data format change across the upgrade", v)
		}
	}
}
