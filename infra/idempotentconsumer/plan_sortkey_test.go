package idempotentconsumer

import (
	"strings"
	"testing"

	"github.com/sqsonce/sqsonce/middleware/idempotency/driver"
)

func TestPlanSortKey(t *testing.T) {
	pl, err := Props{Namespace: "n", SortKey: SortKey{Attribute: "sk", Partition: "orders#idempotency"}}.Plan()
	if err != nil {
		t.Fatal(err)
	}
	if want := (SortKey{Attribute: "sk", PartitionKey: driver.AttrID, Partition: "orders#idempotency"}); pl.SortKey != want {
		t.Errorf("Plan.SortKey = %+v, want %+v (the partition key defaults to driver.AttrID)", pl.SortKey, want)
	}
	if pl, err := (Props{Namespace: "n"}).Plan(); err != nil || pl.SortKey != (SortKey{}) {
		t.Errorf("Plan without a sort key: %+v, %v; want no sort key", pl.SortKey, err)
	}
}

func TestPlanRejectsSortKey(t *testing.T) {
	for _, tc := range []struct {
		name  string
		key   SortKey
		env   map[string]string
		wants []string
	}{
		{"no partition value", SortKey{Attribute: "sk"}, nil, []string{"SortKey.Partition is required with a sort key", "idempotency#{function name}"}},
		{"no sort key attribute", SortKey{PartitionKey: "pk", Partition: "p"}, nil, []string{"SortKey.Attribute, the sort key attribute, is required"}},
		{"the partition key attribute", SortKey{Attribute: "id", Partition: "p"}, nil, []string{`SortKey.Attribute "id" and the partition key attribute "id" cannot be the same`}},
		{"a renamed partition key attribute", SortKey{Attribute: "pk", PartitionKey: "pk", Partition: "p"}, nil, []string{`"pk" and the partition key attribute "pk" cannot be the same`}},
		{"a record attribute", SortKey{Attribute: driver.AttrStatus, Partition: "p"}, nil, []string{`SortKey.Attribute "status" is an attribute of the records`}},
		{"a partition value too long", SortKey{Attribute: "sk", Partition: strings.Repeat("p", 2049)}, nil, []string{"SortKey.Partition is 2049 bytes, above DynamoDB's 2048"}},
		{"its variables set by hand", SortKey{Attribute: "sk", Partition: "p"}, map[string]string{EnvSortKey: "x", EnvStaticPartition: "y", EnvPartitionKey: "z"},
			[]string{"sets SQSONCE_SORT_KEY", "sets SQSONCE_STATIC_PARTITION", "sets SQSONCE_PARTITION_KEY"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			pl, err := Props{Namespace: "n", SortKey: tc.key, Environment: tc.env}.Plan()
			if err == nil {
				t.Fatalf("Plan() = %+v, want an error", pl)
			}
			for _, w := range tc.wants {
				if !strings.Contains(err.Error(), w) {
					t.Errorf("error %q\nwant it to contain %q", err, w)
				}
			}
		})
	}
}
