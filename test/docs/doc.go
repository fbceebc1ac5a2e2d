// Package docs holds no code: its tests check the README, the manual in
// docs/ and infra/README.md against the code. Every Go snippet of the
// README and the manual compiles (go vet, in a module of its own that
// replaces this one with the checkout); every relative link and anchor of
// the three resolves; every shell command they show runs in a test, or the
// page says why it cannot run here, and none hides in a block with no
// language; what they say `make test` and `make bench` run is what the
// Makefile runs.
//
// A ```go block is a whole file. A ```go fragment block is part of one:
// declarations, or statements the test puts in a function, with the
// imports its package names need and the names its page declares in
// testdata/stubs (a page's stub file is named after the page). The info
// string may map a package name to another import path, as
// ```go fragment lambda=github.com/aws/aws-sdk-go-v2/service/lambda.
package docs
