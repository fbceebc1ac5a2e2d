// Package importcheck holds a test that a program importing only the
// idempotency core and dynamostore compiles no Redis or PostgreSQL code: it
// builds a tiny module outside the repository that depends on this one and
// lists its dependencies with go list -deps.
package importcheck
