// Package ptinterop holds the interop tests with Powertools for AWS Lambda
// (TypeScript), run through package internal/testenv/powertools: they share
// one DynamoDB table (moto_server) between sqsonce and Powertools, in both
// directions.
package ptinterop
