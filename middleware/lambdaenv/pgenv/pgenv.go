// Package pgenv lets [lambdaenv.Load] open the PostgreSQL store: with
// SQSONCE_STORE=postgres and SQSONCE_POSTGRES_URL (a postgres:// URL or a
// key=value DSN; over a network, sslmode=verify-full), a function's main
// imports it for its side effect:
//
//	import _ "github.com/sqsonce/sqsonce/middleware/lambdaenv/pgenv"
//
// It is a module of its own so that only a function on PostgreSQL requires
// pgx. It creates the store's table if it does not exist
// ((*pgstore.Store).CreateSchema); Function.Close closes the pool.
package pgenv

import (
	"context"
	"errors"
	"fmt"

	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/sqsonce/sqsonce/internal/redact"
	"github.com/sqsonce/sqsonce/middleware/idempotency/driver"
	"github.com/sqsonce/sqsonce/middleware/idempotency/pgstore"
	"github.com/sqsonce/sqsonce/middleware/lambdaenv"
	"github.com/sqsonce/sqsonce/middleware/lambdaenv/envvars"
)

func init() { lambdaenv.RegisterStore(envvars.StorePostgres, Open) }

// Open opens a pool on s.PostgresURL, the PostgreSQL store on it, and its
// table if it does not exist, within lambdaenv.OpenTimeout; lambdaenv
// calls it for SQSONCE_STORE=postgres. Its errors name
// SQSONCE_POSTGRES_URL and never quote the connection string or its
// password.
func Open(ctx context.Context, s envvars.Settings) (driver.Store, func() error, error) {
	pool, err := pgxpool.New(ctx, s.PostgresURL)
	if err != nil {
		return nil, nil, fmt.Errorf("lambdaenv: %s is not a postgres:// URL or DSN (%s)", envvars.EnvPostgresURL, redact.Digest(err.Error()))
	}
	start, cancel := context.WithTimeout(ctx, lambdaenv.OpenTimeout)
	defer cancel()
	st, err := pgstore.New(pool)
	if err == nil {
		err = st.CreateSchema(start)
	}
	if err != nil {
		pool.Close()
		if errors.Is(start.Err(), context.DeadlineExceeded) && ctx.Err() == nil {
			return nil, nil, fmt.Errorf("lambdaenv: %s: the server did not answer within %v", envvars.EnvPostgresURL, lambdaenv.OpenTimeout)
		}
		return nil, nil, fmt.Errorf("lambdaenv: %s: %w", envvars.EnvPostgresURL, redact.ConnError(s.PostgresURL, err))
	}
	return st, func() error { pool.Close(); return nil }, nil
}
