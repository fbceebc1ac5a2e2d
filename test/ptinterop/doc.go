// Package ptinterop holds the interop tests with Powertools for AWS Lambda
// (TypeScript), run through package internal/testenv/powertools: they share
// one DynamoDB table (moto_server) between sqsonce and Powertools, in both
// directions, on a table keyed by id and, with the same cases, on a table
// with a sort key (Powertools' sortKeyAttr, sqsonce's dynamostore.WithSortKey).
package ptinterop
