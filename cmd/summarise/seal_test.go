package main

import (
	"bytes"
	"context"
	"io"
	"log/slog"
	"os"
	"strings"
	"testing"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/kms"

	"github.com/sqsonce/sqsonce/internal/testenv/motoserver"
	"github.com/sqsonce/sqsonce/middleware/idempotency/driver"
	"github.com/sqsonce/sqsonce/middleware/idempotency/memstore"
)

// completions keeps the result of every completion.
type completions struct {
	*memstore.Store
	data [][]byte
}

func (s *completions) Complete(ctx context.Context, rec driver.Record) ([]byte, error) {
	s.data = append(s.data, rec.Data)
	return s.Store.Complete(ctx, rec)
}

// TestSealKey: with SQSONCE_SEAL_KEY (a key on moto's KMS) the app seals
// the summaries it stores, and a duplicate replays the summary without a
// second provider call; a key KMS refuses fails the start, naming the
// variable.
func TestSealKey(t *testing.T) {
	for k, v := range map[string]string{"AWS_ACCESS_KEY_ID": "test", "AWS_SECRET_ACCESS_KEY": "test", "AWS_REGION": motoserver.Region,
		"AWS_CONFIG_FILE": os.DevNull, "AWS_SHARED_CREDENTIALS_FILE": os.DevNull, "AWS_EC2_METADATA_DISABLED": "true",
		"AWS_ENDPOINT_URL_KMS": moto.Endpoint(t)} {
		t.Setenv(k, v)
	}
	t.Setenv("AWS_PROFILE", "")
	key, err := kms.NewFromConfig(moto.Config(t)).CreateKey(t.Context(), &kms.CreateKeyInput{Description: aws.String(t.Name())})
	if err != nil {
		t.Fatalf("moto KMS CreateKey: %v", err)
	}
	c, err := loadConfig(localEnv(map[string]string{envSealKey: aws.ToString(key.KeyMetadata.Arn)}), "", "")
	if err != nil {
		t.Fatal(err)
	}
	store := &completions{Store: memstore.New()}
	c.testStore = store
	a, err := build(t.Context(), c, outputs{Logger: slog.New(slog.NewTextHandler(io.Discard, nil)), Metrics: io.Discard})
	if err != nil {
		t.Fatal(err)
	}
	defer a.close()
	ev := loadFixture(t, "duplicate-delivery.json")
	resp, err := a.handle(t.Context(), ev)
	if err != nil || len(failed(resp)) != 0 {
		t.Fatalf("%v, failed %v", err, failed(resp))
	}
	if n := a.calls.Len(); n != 1 {
		t.Errorf("provider calls %d, want 1 (the duplicate replays)", n)
	}
	if len(store.data) != 1 || !driver.IsSealed(store.data[0]) || bytes.Contains(store.data[0], []byte("summary")) {
		t.Errorf("completions %q, want one, sealed", store.data)
	}

	c.SealKey = "arn:aws:kms:" + motoserver.Region + ":123456789012:key/00000000-0000-0000-0000-000000000000"
	if a, err := build(t.Context(), c, outputs{Logger: slog.New(slog.NewTextHandler(io.Discard, nil)), Metrics: io.Discard}); err == nil || !strings.Contains(err.Error(), envSealKey) {
		if a != nil {
			a.close()
		}
		t.Errorf("an unknown key: %v, want an error naming %s", err, envSealKey)
	}
}
