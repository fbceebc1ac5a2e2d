package lambdaenv_test

import (
	"context"
	"fmt"
	"net"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/aws/aws-lambda-go/events"
	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"github.com/sqsonce/sqsonce/internal/testenv/motoserver"
	"github.com/sqsonce/sqsonce/internal/testenv/redisserver"
	"github.com/sqsonce/sqsonce/middleware/idempotency"
	"github.com/sqsonce/sqsonce/middleware/idempotency/driver"
	"github.com/sqsonce/sqsonce/middleware/idempotency/dynamostore"
	"github.com/sqsonce/sqsonce/middleware/idempotency/redisstore"
	"github.com/sqsonce/sqsonce/middleware/lambdaenv"
	"github.com/sqsonce/sqsonce/middleware/lambdaenv/envvars"
)

// loadErr runs Load with vars (and moto as AWS) set for the call only,
// and returns its error; a Function it built is closed.
func loadErr(t *testing.T, vars map[string]string) (err error) {
	t.Helper()
	t.Run("", func(t *testing.T) {
		setenv(t, vars)
		env, lerr := lambdaenv.Load(t.Context())
		if lerr == nil {
			_ = env.Close()
		}
		err = lerr
	})
	return err
}

// wantRefused fails the test unless err names each of names and none of
// notNamed.
func wantRefused(t *testing.T, what string, err error, names []string, notNamed ...string) {
	t.Helper()
	if err == nil {
		t.Errorf("%s: Load accepted it", what)
		return
	}
	for _, n := range names {
		if !strings.Contains(err.Error(), n) {
			t.Errorf("%s: Load = %q, want an error naming %s", what, err, n)
		}
	}
	for _, n := range notNamed {
		if strings.Contains(err.Error(), n) {
			t.Errorf("%s: Load = %q names %s, which is not at fault", what, err, n)
		}
	}
}

// base is a DynamoDB function's environment, with a table on moto.
func base(t *testing.T) map[string]string {
	return map[string]string{envvars.EnvNamespace: "orders", envvars.EnvTable: motoserver.NewTable(t, moto.DynamoDB(t))}
}

// with is m with more variables.
func with(m map[string]string, kv ...string) map[string]string {
	out := map[string]string{}
	for k, v := range m {
		out[k] = v
	}
	for i := 0; i+1 < len(kv); i += 2 {
		out[kv[i]] = kv[i+1]
	}
	return out
}

// TestLoadFormats: SQSONCE_FORMAT and SQSONCE_DATA_FORMAT, which
// sqsonce-ops reads as the function's, are the function's too: the
// guard's Format (so that both compute one record id) and the store's
// data format. The guard's refusals are Load's, naming the variables.
func TestLoadFormats(t *testing.T) {
	db := moto.DynamoDB(t)
	table := motoserver.NewTable(t, db)
	setenv(t, map[string]string{envvars.EnvNamespace: "orders", envvars.EnvTable: table,
		envvars.EnvFormat: envvars.FormatPowertoolsPython, envvars.EnvDataFormat: envvars.DataPowertoolsTypeScript})
	env, err := lambdaenv.Load(t.Context())
	if err != nil {
		t.Fatal(err)
	}
	if env.Config.Format != idempotency.FormatPowertoolsPython {
		t.Errorf("%s=%s: Config.Format %v", envvars.EnvFormat, envvars.FormatPowertoolsPython, env.Config.Format)
	}
	g, err := idempotency.New(env.Config)
	if err != nil {
		t.Fatal(err)
	}
	type receipt struct {
		ChargeID string `json:"charge_id"`
	}
	if _, err := idempotency.Do(t.Context(), g, idempotency.Raw([]byte(`"o-1"`)), func(context.Context) (receipt, error) {
		return receipt{"ch_1"}, nil
	}); err != nil {
		t.Fatal(err)
	}
	scan, err := db.Scan(t.Context(), &dynamodb.ScanInput{TableName: aws.String(table)})
	if err != nil || len(scan.Items) != 1 {
		t.Fatalf("scan: %v, %d items", err, len(scan.Items))
	}
	if _, ok := scan.Items[0][driver.AttrData].(*types.AttributeValueMemberM); !ok {
		t.Errorf("%s=%s: the result is stored as %T, want a map (Powertools TypeScript's native types)",
			envvars.EnvDataFormat, envvars.DataPowertoolsTypeScript, scan.Items[0][driver.AttrData])
	}
	// The record id is Powertools Python's: a guard of that format finds it.
	pt, err := idempotency.New(idempotency.Config{Store: env.Config.Store, Namespace: "orders", Format: idempotency.FormatPowertoolsPython})
	if err != nil {
		t.Fatal(err)
	}
	id, err := pt.ID(idempotency.Raw([]byte(`"o-1"`)))
	if err != nil {
		t.Fatal(err)
	}
	if rec, err := env.Store.Inspect(t.Context(), id); err != nil || rec.Status != driver.StatusCompleted {
		t.Errorf("the Powertools Python id %s: %+v, %v", id, rec, err)
	}

	seal := "arn:aws:kms:" + motoserver.Region + ":123456789012:key/00000000-0000-0000-0000-000000000000"
	b := base(t)
	for _, tc := range []struct {
		vars  map[string]string
		names []string
	}{
		{with(b, envvars.EnvFormat, "md5"), []string{envvars.EnvFormat}},
		{with(b, envvars.EnvDataFormat, "xml"), []string{envvars.EnvDataFormat}},
		{with(b, envvars.EnvFormat, envvars.FormatPowertoolsTypeScript, envvars.EnvTenancy, envvars.TenancyMessageGroup), []string{envvars.EnvFormat, envvars.EnvTenancy}},
		{with(b, envvars.EnvFormat, envvars.FormatPowertoolsPython, envvars.EnvSealKey, seal), []string{envvars.EnvFormat, envvars.EnvSealKey}},
		{with(b, envvars.EnvDataFormat, envvars.DataPowertoolsPython, envvars.EnvSealKey, seal), []string{envvars.EnvDataFormat, envvars.EnvSealKey}},
	} {
		wantRefused(t, fmt.Sprint(tc.vars), loadErr(t, tc.vars), tc.names)
	}
}

// TestLoadRedisSettings: SQSONCE_REDIS_KEY_PREFIX (and _UNSEPARATED) and
// SQSONCE_REDIS_CLUSTER, which sqsonce-ops reads as the function's, are
// the function's too: the store's keys carry the prefix, and a Cluster
// URL gets a Cluster client (which a server without cluster mode refuses).
func TestLoadRedisSettings(t *testing.T) {
	vars := map[string]string{envvars.EnvNamespace: "orders", envvars.EnvStore: envvars.StoreRedis, envvars.EnvRedisURL: redisS.URL(t),
		envvars.EnvDeadLetter: "off", envvars.EnvPacing: "off"}
	for _, tc := range []struct {
		prefix, unseparated string
		want                string
	}{{"", "", "orders#x"}, {"app", "", "app#orders#x"}, {"app", "off", "app#orders#x"}, {"app", "on", "apporders#x"}} {
		t.Run(tc.prefix+"-"+tc.unseparated, func(t *testing.T) {
			setenv(t, with(vars, envvars.EnvRedisKeyPrefix, tc.prefix, envvars.EnvRedisKeyPrefixUnseparated, tc.unseparated))
			env, err := lambdaenv.Load(t.Context())
			if err != nil {
				t.Fatal(err)
			}
			defer env.Close()
			st, ok := env.Config.Store.(*redisstore.Store)
			if !ok {
				t.Fatalf("Config.Store is %T", env.Config.Store)
			}
			if got := st.RedisKey("orders#x"); got != tc.want {
				t.Errorf("prefix %q, unseparated %q: key %q, want %q", tc.prefix, tc.unseparated, got, tc.want)
			}
		})
	}
	wantRefused(t, "unseparated without a prefix", loadErr(t, with(vars, envvars.EnvRedisKeyPrefixUnseparated, "on")),
		[]string{envvars.EnvRedisKeyPrefixUnseparated, envvars.EnvRedisKeyPrefix})

	wantRefused(t, "a Cluster client on a server without cluster mode", loadErr(t, with(vars, envvars.EnvRedisCluster, "on")), []string{envvars.EnvRedisCluster})

	cluster := redisserver.NewCluster()
	t.Cleanup(func() { _ = cluster.Close() })
	setenv(t, with(vars, envvars.EnvRedisURL, cluster.URL(t), envvars.EnvRedisCluster, "on"))
	env, err := lambdaenv.Load(t.Context())
	if err != nil {
		t.Fatal(err)
	}
	defer env.Close()
	g, err := idempotency.New(env.Config)
	if err != nil {
		t.Fatal(err)
	}
	runs := 0
	for range 2 {
		if _, err := idempotency.Do(t.Context(), g, idempotency.Raw([]byte("o-1")), func(context.Context) (string, error) { runs++; return "ok", nil }); err != nil {
			t.Fatal(err)
		}
	}
	if runs != 1 {
		t.Errorf("on the Cluster: %d runs, want 1", runs)
	}
}

// TestLoadRefusesMisspeltNames: a misspelt SQSONCE_ variable fails Load,
// naming it, rather than leaving the default running; a function's own
// SQSONCE_ variables, far from the contract's names, pass.
func TestLoadRefusesMisspeltNames(t *testing.T) {
	b := base(t)
	for _, name := range []string{"SQSONCE_DEADLETTER", "SQSONCE_PACEING", "SQSONCE_KEEPVISIBLE", "SQSONCE_TENNANCY", "SQSONCE_STRCT", "sqsonce_pacing"} {
		wantRefused(t, name, loadErr(t, with(b, name, "off")), []string{name})
	}
	own := with(b, "SQSONCE_SUMMARIES_TABLE", "summaries", "SQSONCE_DOCUMENTS_BUCKET", "docs", "SQSONCE_PROVIDER", "stub",
		"SQSONCE_MODEL", "m", "SQSONCE_DOCUMENTS_PREFIX", "in/", "SQSONCE_REQUEST_LOG", "on", "SQSONCE_CONCURRENCY", "4")
	if err := loadErr(t, own); err != nil {
		t.Errorf("a function's own SQSONCE_ variables: %v", err)
	}
}

// TestLoadRefusesMetricsNamespace: a namespace CloudWatch takes no
// metrics into fails Load, naming the variable.
func TestLoadRefusesMetricsNamespace(t *testing.T) {
	b := base(t)
	for _, ns := range []string{"AWS/Lambda", ":orders", strings.Repeat("n", 256)} {
		wantRefused(t, "namespace "+ns[:min(len(ns), 12)], loadErr(t, with(b, envvars.EnvMetricsNamespace, ns)), []string{envvars.EnvMetricsNamespace})
	}
	if err := loadErr(t, with(b, envvars.EnvMetricsNamespace, "shop")); err != nil {
		t.Errorf("namespace shop: %v", err)
	}
}

// blackHole listens on a local port, accepts connections and never
// answers: a server whose start-up hangs.
func blackHole(t *testing.T) string {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	var (
		mu    sync.Mutex
		conns []net.Conn
	)
	go func() {
		for {
			c, err := l.Accept()
			if err != nil {
				return
			}
			mu.Lock()
			conns = append(conns, c)
			mu.Unlock()
		}
	}()
	t.Cleanup(func() {
		_ = l.Close()
		mu.Lock()
		defer mu.Unlock()
		for _, c := range conns {
			_ = c.Close()
		}
	})
	return l.Addr().String()
}

// TestOpenersTimeOut: a PostgreSQL or Redis server, or a KMS, that accepts
// connections and never answers fails Load within about
// lambdaenv.OpenTimeout, naming the variable, well inside Lambda's 10 s
// init phase.
func TestOpenersTimeOut(t *testing.T) {
	for _, tc := range []struct {
		name string
		vars func(addr string) map[string]string
	}{
		{envvars.EnvPostgresURL, func(addr string) map[string]string {
			return map[string]string{envvars.EnvNamespace: "orders", envvars.EnvStore: envvars.StorePostgres, envvars.EnvPostgresURL: "postgres://app@" + addr + "/app?sslmode=disable"}
		}},
		{envvars.EnvRedisURL, func(addr string) map[string]string {
			return map[string]string{envvars.EnvNamespace: "orders", envvars.EnvStore: envvars.StoreRedis, envvars.EnvRedisURL: "redis://" + addr + "/0"}
		}},
		{envvars.EnvSealKey, func(addr string) map[string]string {
			return with(base(t), "AWS_ENDPOINT_URL_KMS", "http://"+addr, envvars.EnvSealKey, "arn:aws:kms:"+motoserver.Region+":123456789012:key/00000000-0000-0000-0000-000000000000")
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			setenv(t, tc.vars(blackHole(t)))
			done := make(chan error, 1)
			start := time.Now()
			go func() {
				env, err := lambdaenv.Load(t.Context())
				if err == nil {
					_ = env.Close()
				}
				done <- err
			}()
			select {
			case err := <-done:
				took := time.Since(start)
				wantRefused(t, tc.name+" of a server that never answers", err, []string{tc.name})
				if took > lambdaenv.OpenTimeout+2*time.Second {
					t.Errorf("Load took %v, want about %v", took, lambdaenv.OpenTimeout)
				}
			case <-time.After(9 * time.Second):
				t.Errorf("Load still waits after 9 s for a server that never answers (%s); Lambda's init phase is 10 s", tc.name)
			}
		})
	}
}

// TestLoadRefusesSpacedValues: a value with white space at its start or
// end (a table name pasted with a trailing space) fails Load, naming the
// variable, rather than every record at run time.
func TestLoadRefusesSpacedValues(t *testing.T) {
	b := base(t)
	for name, v := range map[string]string{
		envvars.EnvTable:        b[envvars.EnvTable] + " ",
		envvars.EnvNamespace:    " orders",
		envvars.EnvKey:          "body:order_id\n",
		envvars.EnvExpiresAfter: "1647000s ",
		envvars.EnvPacing:       "off ",
		envvars.EnvStore:        " dynamodb",
	} {
		wantRefused(t, fmt.Sprintf("%s=%q", name, v), loadErr(t, with(b, name, v)), []string{name + " has white space"})
	}
}

// TestLoadSortKeyErrorsNameTheVariable: a sort key on a record attribute,
// a partition key on one, or a partition value DynamoDB refuses fails
// Load naming the variable at fault, not SQSONCE_TABLE.
func TestLoadSortKeyErrorsNameTheVariable(t *testing.T) {
	b := with(base(t), envvars.EnvStaticPartition, "orders")
	// dynamostore's own attributes as well as driver's.
	for _, attr := range []string{driver.AttrStatus, driver.AttrExpiration, dynamostore.AttrDataFormat, dynamostore.AttrReleaseCall, driver.AttrStrictLease} {
		wantRefused(t, "sort key "+attr, loadErr(t, with(b, envvars.EnvSortKey, attr)), []string{envvars.EnvSortKey}, envvars.EnvTable)
		wantRefused(t, "partition key "+attr, loadErr(t, with(b, envvars.EnvSortKey, "sk", envvars.EnvPartitionKey, attr)),
			[]string{envvars.EnvPartitionKey}, envvars.EnvTable)
	}
	wantRefused(t, "a 2049-byte partition value", loadErr(t, with(b, envvars.EnvSortKey, "sk", envvars.EnvStaticPartition, strings.Repeat("p", 2049))),
		[]string{envvars.EnvStaticPartition}, envvars.EnvTable)
	if err := loadErr(t, with(b, envvars.EnvSortKey, "sk", envvars.EnvStaticPartition, strings.Repeat("p", 2048))); err != nil {
		t.Errorf("a 2048-byte partition value: %v", err)
	}
}

// TestLoadRefusesWhatTheGuardRefuses: an expiry shorter than the queue's
// window or than the guard's lease, a namespace holding '#', and a
// minimum remaining time no invocation has fail Load, naming the
// variables, not idempotency.New with the Config's field names.
func TestLoadRefusesWhatTheGuardRefuses(t *testing.T) {
	b := base(t)
	for _, tc := range []struct {
		vars  map[string]string
		names []string
	}{
		{with(b, envvars.EnvExpiresAfter, "1h", envvars.EnvQueueWindow, "2h"), []string{envvars.EnvExpiresAfter, envvars.EnvQueueWindow}},
		{with(b, envvars.EnvExpiresAfter, "10m"), []string{envvars.EnvExpiresAfter}},
		{with(b, envvars.EnvQueueWindow, "400h"), []string{envvars.EnvQueueWindow, envvars.EnvExpiresAfter}},
		{with(b, envvars.EnvNamespace, "orders#eu"), []string{envvars.EnvNamespace}},
		{with(b, envvars.EnvMinRemaining, "15m"), []string{envvars.EnvMinRemaining}},
		{with(b, envvars.EnvMinRemaining, "1h"), []string{envvars.EnvMinRemaining}},
	} {
		wantRefused(t, fmt.Sprint(tc.vars), loadErr(t, tc.vars), tc.names, "Config.")
	}
	// At the limits the guard takes them.
	setenv(t, with(b, envvars.EnvExpiresAfter, "15m", envvars.EnvQueueWindow, "15m", envvars.EnvMinRemaining, "14m59s"))
	env, err := lambdaenv.Load(t.Context())
	if err != nil {
		t.Fatal(err)
	}
	if _, err := idempotency.New(env.Config); err != nil {
		t.Errorf("the guard refuses what Load accepted: %v", err)
	}
}

// TestLoadRefusesIgnoredVariables: a variable of the DynamoDB store with
// another store, and SQSONCE_KEEP_VISIBLE=on with pacing off, fail Load
// naming them, rather than being ignored; SQSONCE_TABLE, which the
// construct always sets, passes with every store.
func TestLoadRefusesIgnoredVariables(t *testing.T) {
	redis := map[string]string{envvars.EnvNamespace: "orders", envvars.EnvStore: envvars.StoreRedis, envvars.EnvRedisURL: redisS.URL(t)}
	pg := map[string]string{envvars.EnvNamespace: "orders", envvars.EnvStore: envvars.StorePostgres, envvars.EnvPostgresURL: pgS.NewDatabase(t)}
	for _, other := range []map[string]string{redis, pg} {
		for _, name := range []string{envvars.EnvSortKey, envvars.EnvPartitionKey, envvars.EnvStaticPartition, envvars.EnvDynamoDBEndpoint, envvars.EnvDataFormat} {
			wantRefused(t, name+" with "+other[envvars.EnvStore], loadErr(t, with(other, name, "x")), []string{name})
		}
		if err := loadErr(t, with(other, envvars.EnvTable, "orders-idempotency")); err != nil {
			t.Errorf("%s with %s: %v", envvars.EnvTable, other[envvars.EnvStore], err)
		}
	}
	for _, name := range []string{envvars.EnvRedisKeyPrefix, envvars.EnvRedisCluster} {
		wantRefused(t, name+" with postgres", loadErr(t, with(pg, name, "on")), []string{name})
	}
	b := base(t)
	wantRefused(t, "keep visible without pacing", loadErr(t, with(b, envvars.EnvPacing, "off", envvars.EnvKeepVisible, "on")),
		[]string{envvars.EnvKeepVisible, envvars.EnvPacing})
	if err := loadErr(t, with(b, envvars.EnvPacing, "off", envvars.EnvKeepVisible, "off")); err != nil {
		t.Errorf("pacing and keep visible off: %v", err)
	}
}

// TestKeySelector: the package doc's main takes SQSONCE_KEY's selector
// with Function.KeySelector: unset, an error naming the variable (not a
// panic in idempotency.Wrap); set, the selector it names.
func TestKeySelector(t *testing.T) {
	b := base(t)
	setenv(t, b)
	env, err := lambdaenv.Load(t.Context())
	if err != nil {
		t.Fatal(err)
	}
	if _, err := env.KeySelector(); err == nil || !strings.Contains(err.Error(), envvars.EnvKey) {
		t.Errorf("%s unset: KeySelector = %v, want an error naming it", envvars.EnvKey, err)
	}
	setenv(t, with(b, envvars.EnvKey, "body:order_id"))
	if env, err = lambdaenv.Load(t.Context()); err != nil {
		t.Fatal(err)
	}
	key, err := env.KeySelector()
	if err != nil {
		t.Fatal(err)
	}
	g, err := idempotency.New(env.Config)
	if err != nil {
		t.Fatal(err)
	}
	runs := 0
	h := idempotency.WrapJSON(g, key, func(ctx context.Context, o order, m events.SQSMessage) (string, error) {
		runs++
		return "ch_" + o.OrderID, nil
	})
	orderID := fmt.Sprintf("o-%d", time.Now().UnixNano())
	for i := range 2 {
		if _, err := h(t.Context(), events.SQSMessage{MessageId: fmt.Sprint("m-", i), Body: `{"order_id":"` + orderID + `"}`}); err != nil {
			t.Fatalf("delivery %d: %v", i, err)
		}
	}
	if runs != 1 {
		t.Errorf("%d runs of one order under %s's selector, want 1", runs, envvars.EnvKey)
	}
}
