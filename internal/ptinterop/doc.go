// Package ptinterop runs Powertools for AWS Lambda (TypeScript) from Go: the
// pinned npm packages in testdata (package.json and its package-lock.json,
// installed with npm ci by make test) driven by testdata/driver.mjs. Its
// tests share one DynamoDB table (moto_server) between sqsonce and
// Powertools, in both directions; make bench-peer runs the same driver for
// the side-by-side benchmark.
package ptinterop
