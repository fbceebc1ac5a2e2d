// Package dynamostore_test holds dynamostore's tests that run on
// moto_server's DynamoDB, and the fake-client tests that share their
// helpers: here, in the test module, so that dynamostore's own go.mod
// requires no module of the test harness (motoserver). Its examples and
// TestValidateSealed stay with the module.
package dynamostore_test

import (
	"os"
	"testing"

	"github.com/aws/aws-sdk-go-v2/service/dynamodb"

	"github.com/sqsonce/sqsonce/internal/testenv/motoserver"
	"github.com/sqsonce/sqsonce/middleware/idempotency"
	"github.com/sqsonce/sqsonce/middleware/idempotency/driver"
	"github.com/sqsonce/sqsonce/middleware/idempotency/dynamostore"
	"github.com/sqsonce/sqsonce/middleware/idempotency/storetest"
)

var moto = motoserver.New()

func TestMain(m *testing.M) { os.Exit(moto.Run(m)) }

// env is a store on a fresh table of the moto server, with a client whose
// requests are counted.
type env struct {
	store *dynamostore.Store
	db    *dynamodb.Client
	table string
	calls *motoserver.Counter
}

func newEnv(t *testing.T, opts ...dynamostore.Option) env {
	t.Helper()
	calls := &motoserver.Counter{}
	db := moto.DynamoDB(t, calls.Option())
	table := motoserver.NewTable(t, db)
	s, err := dynamostore.New(db, table, opts...)
	if err != nil {
		t.Fatal(err)
	}
	calls.Reset()
	return env{store: s, db: db, table: table, calls: calls}
}

func TestConformance(t *testing.T) {
	e := newEnv(t)
	storetest.Run(t, func(t *testing.T) driver.Store { return e.store })
}

// rawID is g's record id of the raw key material.
func rawID(t testing.TB, g *idempotency.Guard, material string) string {
	t.Helper()
	id, err := g.ID(idempotency.Raw([]byte(material)))
	if err != nil {
		t.Fatal(err)
	}
	return id
}
