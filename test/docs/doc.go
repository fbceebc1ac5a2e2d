// Package docs holds no code: its tests check the README and the manual in
// docs/ against the code. Every Go snippet compiles (go vet, in a module of
// its own that replaces this one with the checkout); every relative link
// and anchor resolves; every shell command the README shows runs in a
// test, or the README says why it cannot run here.
//
// A ```go block is a whole file. A ```go fragment block is part of one:
// declarations, or statements the test puts in a function, with the
// imports its package names need and the names its page declares in
// testdata/stubs (a page's stub file is named after the page). The info
// string may map a package name to another import path, as
// ```go fragment lambda=github.com/aws/aws-sdk-go-v2/service/lambda.
package docs
