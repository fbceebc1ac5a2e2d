// Package kmsenv lets [lambdaenv.Load] seal the function's results: with
// SQSONCE_SEAL_KEY (the construct's Props.SealKey: a KMS key's ARN), a
// function's main imports it for its side effect,
//
//	import _ "github.com/sqsonce/sqsonce/middleware/lambdaenv/kmsenv"
//
// and Config.Sealer is a kmsseal.Sealer under that key, with its default
// data key cache. Without the import Load fails; it never leaves results
// unsealed. It is a module of its own so that only a function that seals
// requires the KMS client.
//
// The KMS client takes the function's AWS configuration (AWS_ENDPOINT_URL_KMS
// overrides its endpoint, for local runs). Open asks KMS for the first data
// key and decrypts it, so that a key the function may not use fails Load,
// at start-up, rather than the first result's completion or replay.
package kmsenv

import (
	"context"
	"errors"
	"fmt"

	"github.com/aws/aws-sdk-go-v2/config"
	"github.com/aws/aws-sdk-go-v2/service/kms"

	"github.com/sqsonce/sqsonce/middleware/idempotency/driver"
	"github.com/sqsonce/sqsonce/middleware/idempotency/kmsseal"
	"github.com/sqsonce/sqsonce/middleware/lambdaenv"
	"github.com/sqsonce/sqsonce/middleware/lambdaenv/envvars"
)

func init() { lambdaenv.RegisterSealer(Open) }

// Open returns the sealer of the KMS key s.SealKey, on a client of the
// process's AWS configuration, after New's checks (the data key of its
// GenerateDataKey the sealer keeps for the first results). lambdaenv calls it when
// SQSONCE_SEAL_KEY is set. Its errors name the variable.
func Open(ctx context.Context, s envvars.Settings) (driver.Sealer, error) {
	cfg, err := config.LoadDefaultConfig(ctx)
	if err != nil {
		return nil, fmt.Errorf("lambdaenv: %s: AWS configuration: %w", envvars.EnvSealKey, err)
	}
	return New(ctx, kms.NewFromConfig(cfg), s.SealKey)
}

// New returns the sealer of the KMS key keyID on client, after one
// GenerateDataKey and one Decrypt of the data key it gave, both within
// lambdaenv.OpenTimeout: a key the caller may not use for either fails
// here, and so does a KMS that does not answer. (Without kms:Decrypt a
// function would seal its own results and fail every duplicate another
// process delivers, ErrUnsealed, for good.)
func New(ctx context.Context, client kmsseal.KMS, keyID string) (*kmsseal.Sealer, error) {
	s, err := kmsseal.New(client, keyID)
	if err != nil {
		return nil, fmt.Errorf("lambdaenv: %s: %w", envvars.EnvSealKey, err)
	}
	check, cancel := context.WithTimeout(ctx, lambdaenv.OpenTimeout)
	defer cancel()
	// timedOut says the check's deadline, not the caller's, ended a call.
	timedOut := func() bool { return errors.Is(check.Err(), context.DeadlineExceeded) && ctx.Err() == nil }
	const checkID = "lambdaenv-check"
	sealed, err := s.Seal(check, checkID, []byte("{}"))
	if err != nil && timedOut() {
		return nil, fmt.Errorf("lambdaenv: %s: KMS did not answer within %v (kms:GenerateDataKey)", envvars.EnvSealKey, lambdaenv.OpenTimeout)
	}
	if err != nil {
		return nil, fmt.Errorf("lambdaenv: %s: the key does not give a data key (kms:GenerateDataKey): %w", envvars.EnvSealKey, err)
	}
	// A sealer without a cache opens it as another process would.
	other, err := kmsseal.New(client, keyID, kmsseal.WithoutCache())
	if err == nil {
		_, err = other.Open(check, checkID, sealed)
	}
	if err != nil && timedOut() {
		return nil, fmt.Errorf("lambdaenv: %s: KMS did not answer within %v (kms:Decrypt)", envvars.EnvSealKey, lambdaenv.OpenTimeout)
	}
	if err != nil {
		return nil, fmt.Errorf("lambdaenv: %s: the key does not open a sealed result (kms:Decrypt): %w", envvars.EnvSealKey, err)
	}
	return s, nil
}
