# sqsonce: `make demo` runs the summarise job locally; `make test` runs every test;
# `make help` lists every target. Each target has one `## target: text` line,
# which `make help` prints and `make help-check` (part of `make lint`) requires.
SHELL := /bin/bash
GO    ?= go

TOOLS               := $(CURDIR)/.tools
STATICCHECK_VERSION := v0.8.2
RIE_VERSION         := v0.0.0-20261030222936-bef5c4ba774d
STATICCHECK         := $(TOOLS)/staticcheck
RIE                 := $(TOOLS)/aws-lambda-rie
PTDIR               := internal/testenv/powertools/testdata
PTNODE              := $(PTDIR)/node_modules/.package-lock.json
# The Go modules go.work joins (infra's tests run in test-infra; the CDK app
# test/ownfunction/stack in own-function); GO_PKGS is every package of them.
export GOWORK := $(CURDIR)/go.work
.DEFAULT_GOAL := all
GO_MODULES := . middleware/idempotency/dynamostore middleware/idempotency/kmsseal middleware/idempotency/redisstore middleware/idempotency/pgstore middleware/idempotency/storetest/linearize middleware/batch/sqsdlq middleware/batch/sqsvisibility middleware/oteltrace middleware/lambdaenv middleware/lambdaenv/envvars middleware/lambdaenv/kmsenv middleware/lambdaenv/redisenv middleware/lambdaenv/pgenv internal/testenv/esm internal/testenv/motoserver internal/testenv/pgserver handler cmd/summarise cmd/sqsonce-esm cmd/sqsonce-ops events samples test tools
GO_PKGS    := $(foreach m,$(GO_MODULES),./$(m)/...)
GOFILES              = $(shell find . \( -path ./infra/node_modules -o -path ./.tools -o -path ./build \) -prune -o -name '*.go' -print)

# The function is built for Lambda's provided.al2023 runtime on Graviton.
LAMBDA_GOOS   := linux
LAMBDA_GOARCH := arm64
EVENT         ?= events/duplicate-delivery.json
# ENV_VARS: a `sam local invoke --env-vars` file for make invoke, e.g. events/env/stub.json.
ENV_VARS      ?=

.PHONY: vuln all help help-check api test test-go test-infra release-check deploy-local own-function lint fmt vet staticcheck bench bench-peer fuzz chaos verify build ops demo invoke synth diff deploy destroy bootstrap tools clean

# The Go vulnerability database is the module golang.org/x/vulndb from the Go
# proxy; its cmd/indexdb lays its OSV files out as govulncheck's -db file://
# reads them (index/db.json, index/modules.json, ID/GO-*.json).
VULN_VERSION   := v1.10.0
VULNDB_VERSION ?= latest
VULNDB         := $(CURDIR)/build/vulndb
## vuln: govulncheck (reachable vulnerabilities) on every module and on the built bootstrap, against the vulnerability database taken from the Go proxy; run before a release and after a Go or dependency update.
vuln: export GOTOOLCHAIN = auto
vuln: build
	@set -e; ver=$$($(GO) mod download -json golang.org/x/vulndb@$(VULNDB_VERSION) | sed -n 's/.*"Version": "\(.*\)".*/\1/p'); \
	dir=$$($(GO) mod download -json golang.org/x/vulndb@$$ver | sed -n 's/.*"Dir": "\(.*\)".*/\1/p'); \
	rm -rf $(VULNDB); $(GO) run golang.org/x/vulndb/cmd/indexdb@$$ver -vulns $$dir/data/osv -out $(VULNDB); \
	for m in $$(find . -name go.mod -not -path './infra/node_modules/*' -not -path './.tools/*' -exec dirname {} \;); do \
	  echo "govulncheck $$m"; (cd $$m && $(GO) run golang.org/x/vuln/cmd/govulncheck@$(VULN_VERSION) -db file://$(VULNDB) ./...); done; \
	$(GO) run golang.org/x/vuln/cmd/govulncheck@$(VULN_VERSION) -db file://$(VULNDB) -mode binary build/bootstrap

## all: the default target: the same as test.
all: test

## help: list every target with one line on what it does.
help:
	@awk '/^## [A-Za-z0-9_.-]+:/ { name = $$2; sub(/:$$/, "", name); sub(/^## [^:]*: */, ""); printf "  %-12s %s\n", name, $$0 }' $(firstword $(MAKEFILE_LIST))

## help-check: fail if a .PHONY target has no help line, or a help line names no .PHONY target.
help-check:
	@awk '/^\.PHONY:/ { for (i = 2; i <= NF; i++) phony[$$i] = 1 } \
	     /^## [A-Za-z0-9_.-]+:/ { name = $$2; sub(/:$$/, "", name); doc[name] = 1 } \
	     END { for (p in phony) if (!(p in doc)) { print "Makefile: .PHONY target " p " has no \"## " p ": ...\" help line"; bad = 1 } \
	           for (d in doc) if (!(d in phony)) { print "Makefile: help line for " d ", which is not a .PHONY target"; bad = 1 } \
	           exit bad }' $(firstword $(MAKEFILE_LIST))

# moto_server, redis-server, PostgreSQL and the Lambda Runtime Interface
# Emulator are started by the tests themselves; infra's tests synthesise the
# stack and run cfn-lint on it; deploy-local deploys it to moto_server.
## test: lint, test-go (every Go test with the race detector, against moto_server, redis-server, PostgreSQL and the Lambda RIE), test-infra (CDK synth and cfn-lint), release-check, deploy-local and own-function; ends with the Go tests skipped and what to install for each.
test: lint test-go test-infra release-check deploy-local own-function
	@$(GO) run ./tools/testreport -skipped build/test-go.json

# tools/testreport shows go test -json as plain go test shows it, then the
# skipped tests; build/test-go.json keeps the run.
## test-go: every Go test of every module with the race detector (then the skipped ones), then the memory ceilings and the allocation gate without it (the race detector changes what allocates).
test-go: $(RIE) $(PTNODE)
	@mkdir -p build
	set -o pipefail; SQSONCE_RIE=$(RIE) $(GO) test -json -race -count=1 -timeout 20m $(GO_PKGS) | tee build/test-go.json | $(GO) run ./tools/testreport
	$(GO) test -count=1 -run '^(TestMemoryCeilings|TestAllocationGate|TestAllocationGateCatchesOneMore)$$' ./middleware/idempotency/
	$(GO) test -count=1 -run '^TestNativeCeiling$$' ./middleware/idempotency/dynamostore/
	$(GO) test -count=1 -run '^(TestSim|TestRegress)$$' ./test/sim/ -sim.seeds 300

## test-infra: infra's tests: CDK synth assertions and cfn-lint on the templates.
test-infra:
	$(MAKE) -C infra test

# After test-infra, whose build of infra leaves the CDK for Go in the shared
# build cache (cold, the CDK app's build takes about 9 minutes).
## release-check: the release path (test/release): every module from a module proxy built from the tree, go get from fresh modules outside it with no replace, go list -m all counted per user, and the README's CDK app built against it.
release-check:
	SQSONCE_RELEASE_CDK=1 $(GO) test -count=1 -timeout 30m -v -run '^TestRelease$$' ./test/release/

# The test starts moto_server on loopback and installs the pinned CDK CLI
# (npm) outside the repository; see test/deploy.
## deploy-local: cdk deploy of the stack to moto_server, read back against its template, its code run under the RIE from its own queue, then updated and destroyed.
deploy-local: $(RIE)
	SQSONCE_RIE=$(RIE) $(GO) test -race -count=1 -tags deploylocal -timeout 10m -v ./test/deploy

## own-function: issue 27's acceptance: the README's own function, deployed by a CDK app of its own (test/ownfunction/stack) to moto_server, fed from its queue under the RIE at a 3 s timeout (about a minute).
own-function: $(RIE)
	SQSONCE_RIE=$(RIE) $(GO) test -race -count=1 -tags deploylocal -timeout 10m -v -run '^TestOwnFunction' ./test/ownfunction

## lint: fmt, vet, staticcheck, help-check and api.
lint: fmt vet staticcheck help-check api

## api: fail if the library's exported API changed incompatibly since api/baseline.txt (the last release) and CHANGELOG.md's Unreleased section does not name the change; after a release, `go run ./tools/apigate -record`.
api:
	$(GO) run ./tools/apigate

## fmt: fail if gofmt would change a file.
fmt:
	@out="$$(gofmt -l $(GOFILES))"; if [ -n "$$out" ]; then echo "gofmt -l reports:"; echo "$$out"; exit 1; fi

# -tags deploylocal: the files of make deploy-local's test too; -tags
# sqsonceplanted: the build with the planted defects' sites (make verify),
# checked on PLANTED_PKGS, the packages that import internal/planted (itself
# included): only their files differ under the tag (internal/planted's sites,
# test/sim's planted tests), and what imports them sees the same API.
PLANTED_PKGS = $(shell $(GO) list -tags sqsonceplanted -f '{{.ImportPath}} {{join .Imports " "}} {{join .TestImports " "}} {{join .XTestImports " "}}' $(GO_PKGS) | awk '/ github.com\/sqsonce\/sqsonce\/internal\/planted( |$$)/ {print $$1}')
## vet: go vet, every module and infra, and with the planted defects the packages they touch; fails if a module's go.mod is not tidy on its own (GOWORK=off).
vet:
	$(GO) vet -tags deploylocal $(GO_PKGS)
	@test -n "$(PLANTED_PKGS)" || { echo "vet: no package imports internal/planted"; exit 1; }
	$(GO) vet -tags sqsonceplanted $(PLANTED_PKGS)
	for m in $(GO_MODULES) infra; do (cd $$m && GOWORK=off $(GO) mod tidy -diff) || { echo "vet: $$m/go.mod is not tidy: cd $$m && GOWORK=off go mod tidy"; exit 1; }; done
	cd infra && $(GO) vet ./...

## staticcheck: staticcheck, every module and infra, and with the planted defects the packages they touch.
staticcheck: $(STATICCHECK)
	$(STATICCHECK) -tags deploylocal $(GO_PKGS)
	@test -n "$(PLANTED_PKGS)" || { echo "staticcheck: no package imports internal/planted"; exit 1; }
	$(STATICCHECK) -tags sqsonceplanted $(PLANTED_PKGS)
	cd infra && $(STATICCHECK) ./...

## bench: every benchmark under middleware/, among them the decorator's overhead per record (BenchmarkBare vs BenchmarkIdempotent).
bench:
	$(GO) test -run '^$$' -bench . -benchmem -count=1 ./middleware/...

## bench-peer: one SQS workload through Powertools TS (pinned), sqsonce and the same DynamoDB calls written by hand (the floor), each first in turn (≥3 rounds), on moto behind a 5 ms proxy; prints medians with min–max, sqsonce / Powertools and sqsonce / by hand, moto's own CPU and the machine's load (not in test).
BENCHPEER_FLAGS ?=
bench-peer: $(PTNODE)
	$(GO) run ./tools/benchpeer -driver $(PTDIR) $(BENCHPEER_FLAGS)

# FUZZTIME is how long each fuzzer runs; PROPERTY_CASES how many values the
# record-id property test generates (make test: 600), from PROPERTY_SEED
# (make test: 15; here a new one each run, printed by the test).
# JSONKEY_FUZZ are internal/jsonkey's fuzzers, one per reader; SPELLING_BODIES
# how many bodies the spelling differential generates (make test: 3500), from
# PROPERTY_SEED (make test: 25).
FUZZTIME ?= 30s
PROPERTY_CASES ?= 20000
SPELLING_BODIES ?= 50000
PROPERTY_SEED ?= $(shell date +%s)
JSONKEY_FUZZ := FuzzRules FuzzCheck FuzzIndex FuzzDecode FuzzSelect FuzzWriteCanonical FuzzWritePython FuzzWriteTypeScript FuzzStrings FuzzNumbers FuzzEqual
## fuzz: fuzz key extraction and each JSON reader (Check, Index, Decode, Select, the spellings, strings, numbers, Equal) for FUZZTIME each (default 30s), then the record-id property test on PROPERTY_CASES values (default 20000) and the spelling differential on SPELLING_BODIES bodies (default 50000) from a new PROPERTY_SEED, and jmespath's differential test, long.
fuzz: $(PTNODE)
	$(GO) test -run '^$$' -fuzz FuzzBodyKeys -fuzztime $(FUZZTIME) ./middleware/idempotency/
	for f in $(JSONKEY_FUZZ); do $(GO) test -run '^$$' -fuzz "^$$f\$$" -fuzztime $(FUZZTIME) ./internal/jsonkey/ || exit 1; done
	$(GO) test -count=1 -v -run '^TestRecordIDProperty$$' -timeout 60m ./middleware/idempotency/ -property.cases=$(PROPERTY_CASES) -property.seed=$(PROPERTY_SEED)
	$(GO) test -count=1 -v -run '^TestSpellingDifferential$$' -timeout 60m ./middleware/idempotency/ -spelling.bodies=$(SPELLING_BODIES) -spelling.seed=$(PROPERTY_SEED)
	$(GO) test -count=1 -run '^TestDifferential$$' ./middleware/idempotency/jmespath/ -args -long

# The chaos test's long runs: 300 keys, 4 worker processes each; the process
# and store fault profiles with pacing on, then all and lambda (visibility 6x
# the deadline) with pacing off and on, and concurrent (four invocations at
# once per worker process) with pacing on, same seed; then keepalive
# (operations 2.5-4x the guard's 2 s lease, no deadline: taken-over live
# owners must be 0) with pacing on and off on 100 keys and 3 workers (at 300
# keys and 4 workers moto on a shared machine did not drain in 2 min). Each run's history is
# checked (test/history); -profiles mixed runs the mixed fleet (sqsonce
# default and strict guards and Powertools TS workers on one table). CHAOS_FLAGS adds flags,
# e.g. CHAOS_FLAGS='-seed 7'. The short profiles run in `make test`.
## chaos: the chaos test's long profiles on moto (pacing off vs on); prints the table and each run's history verdict, fails on any broken promise.
CHAOS_FLAGS ?=
chaos: $(PTNODE)
	$(GO) run ./test/chaos/cmd/chaos -profiles process,store,all:off,all:on,lambda:off,lambda:on,concurrent:on -keys 300 -workers 4 $(CHAOS_FLAGS)
	$(GO) run ./test/chaos/cmd/chaos -profiles keepalive:on,keepalive:off -keys 100 -workers 3 $(CHAOS_FLAGS)

# The correctness checks (see docs/verification.md): the history checker's
# and the record model's tests; VERIFY_SEEDS seeds of the deterministic
# simulation (make test: 300), every history checked; each planted defect
# (tag sqsonceplanted) over VERIFY_STREAMS independent seed streams, each
# of which must catch it within VERIFY_BUDGET seeds; the linearizability
# runs on the real stores on a new seed each (make test: the fixed seed 1);
# the mixed fleet's short chaos test (TestShortProfileMixed) and its long
# run with Powertools' faults (sqsonce default and strict guards and
# Powertools TS workers on one table, each history checked). The last line
# states the figures.
VERIFY_SEEDS   ?= 5000
VERIFY_STREAMS ?= 5
VERIFY_BUDGET  ?= 1500
LINEARIZE_OPS  ?= 2000
## verify: the checker's tests, VERIFY_SEEDS (5000) seeds of the simulation, every planted defect caught within VERIFY_BUDGET seeds, the stores' linearizability runs on new seeds (printed), the mixed fleet's short test and long chaos run (sqsonce and Powertools TS on one table); fails on any violation or a defect not caught.
verify: $(PTNODE)
	@mkdir -p build
	$(GO) test -count=1 ./test/history/... ./middleware/idempotency/storetest/linearize/ ./internal/planted/
	set -o pipefail; $(GO) test -count=1 -timeout 60m -v -run '^(TestSim|TestRegress)$$' ./test/sim/ -sim.seeds $(VERIFY_SEEDS) | tee build/verify-sim.log | grep -E '^(sim:|--- FAIL|FAIL|ok)'
	set -o pipefail; $(GO) test -tags sqsonceplanted -count=1 -timeout 60m -v -run '^(TestPlanted|TestPlantedRegress)$$' ./test/sim/ -sim.streams $(VERIFY_STREAMS) -sim.budget $(VERIFY_BUDGET) | tee build/verify-planted.log | grep -E '^(\||planted defects:|--- FAIL|FAIL|ok)'
	set -o pipefail; $(GO) test -count=1 -timeout 30m -v ./test/linearize/ -linearize.ops $(LINEARIZE_OPS) -linearize.seed 0 | tee build/verify-linearize.log | grep -E '(linearize: |: seed [0-9]|--- FAIL|^FAIL|^ok)'
	set -o pipefail; $(GO) test -count=1 -timeout 15m -v -run '^TestShortProfileMixed$$' ./test/chaos/ -chaos.mixed | tee build/verify-mixed.log | grep -E '(finding about Powertools|--- FAIL|^FAIL|^ok)'
	set -o pipefail; $(GO) run ./test/chaos/cmd/chaos -profiles mixed-peer:on -keys 300 -workers 4 | tee build/verify-chaos.log | grep -E '^(chaos:|verdict:|Powertools)'
	@echo "verify: $$(grep -h '^sim:' build/verify-sim.log); chaos (mixed fleet with Powertools TS): $$(grep -h '^chaos:' build/verify-chaos.log | sed 's/^chaos: //'); linearizable: $$(grep -ho 'linearize: [a-z-]*: [0-9]* operations checked' build/verify-linearize.log | grep -v 'linearize: planted' | sed 's/linearize: //; s/ operations checked/ ops/' | paste -sd, - | sed "s/,/, /g"); $$(grep -h '^planted defects:' build/verify-planted.log); $$(grep -ho '[0-9]* configurations' build/verify-sim.log | head -1) drawn by the seeds"

# The tests skipped by mutation are named in docs/verification.md (Mutation
# testing); files matching a MUTATION_EXCLUDE regexp are not mutated.
MUTATION_EXCLUDE ?= /
MUTATION_SKIP    := ^(TestMemoryCeilings|TestRecordIDProperty|TestKeepAliveLiveOwner|TestRecordIDsGoldenPeers|TestPowertoolsPythonDifferential)$$
.PHONY: mutation
## mutation: gremlins' mutation testing of the guard's core package, middleware/idempotency (its sub-packages excluded), with its own tests, two workers at nice 15; prints each mutant and the test efficacy (not in test; long).
mutation:
	GOFLAGS='-count=1 -vet=off -failfast -skip=$(MUTATION_SKIP)' nice -n 15 $(GO) run github.com/go-gremlins/gremlins/cmd/gremlins@v0.6.0 unleash \
	  --workers 2 --timeout-coefficient 3 $(foreach e,$(MUTATION_EXCLUDE),--exclude-files '$(e)') ./middleware/idempotency

## build: build build/bootstrap.zip, the function for provided.al2023 on arm64.
build:
	@mkdir -p build
	CGO_ENABLED=0 GOOS=$(LAMBDA_GOOS) GOARCH=$(LAMBDA_GOARCH) $(GO) build -tags lambda.norpc -trimpath -ldflags='-s -w' -o build/bootstrap ./cmd/summarise
	$(GO) run ./tools/mkzip -o build/bootstrap.zip build/bootstrap
	@ls -l build/bootstrap.zip

## ops: build build/sqsonce-ops, the operator's tool for records (see README, Operating), for this machine.
ops:
	@mkdir -p build
	$(GO) build -trimpath -o build/sqsonce-ops ./cmd/sqsonce-ops

# A duplicated delivery makes one provider call.
## demo: run the summarise job on the bundled events, in memory, with the stub provider.
demo:
	$(GO) run ./cmd/summarise -event events/duplicate-delivery.json -repeat 2
	$(GO) run ./cmd/summarise -event events/producer-resend.json
	$(GO) run ./cmd/summarise -event events/mixed-batch.json

## invoke: run the function binary under the Lambda RIE (no Docker) with EVENT (default events/duplicate-delivery.json) and ENV_VARS (SAM's --env-vars file), twice.
invoke: $(RIE)
	@mkdir -p build/host
	CGO_ENABLED=0 $(GO) build -tags lambda.norpc -o build/host/bootstrap ./cmd/summarise
	$(GO) run ./tools/invoke -rie $(RIE) $(if $(ENV_VARS),-env-vars $(ENV_VARS)) build/host/bootstrap $(EVENT)

## synth: build, then cdk synth into infra/cdk.out.
## diff: build, then cdk diff against the deployed stack (AWS credentials).
## deploy: build, then cdk deploy (AWS credentials, a bootstrapped account).
## destroy: build, then cdk destroy; the tables, the documents bucket and the log group are retained.
## bootstrap: build, then cdk bootstrap (once per account and region, before the first deploy).
synth diff deploy destroy bootstrap: build
	$(MAKE) -C infra $@

## tools: install the pinned staticcheck and Lambda RIE into .tools/.
tools: $(STATICCHECK) $(RIE)

# Powertools for AWS Lambda (TypeScript), exactly as package-lock.json pins
# it, for the interop tests and bench-peer.
$(PTNODE): $(PTDIR)/package.json $(PTDIR)/package-lock.json
	@if command -v npm >/dev/null 2>&1 || [ "$$CI" = true ]; then \
	  cd $(PTDIR) && npm ci --no-audit --no-fund; \
	else echo "warning: npm not found: the Powertools interop tests will be skipped (they fail under CI=true)" >&2; fi

$(STATICCHECK):
	GOBIN=$(TOOLS) $(GO) install honnef.co/go/tools/cmd/staticcheck@$(STATICCHECK_VERSION)

$(RIE):
	GOBIN=$(TOOLS) $(GO) install github.com/aws/aws-lambda-runtime-interface-emulator/cmd/aws-lambda-rie@$(RIE_VERSION)

## clean: remove build/.
clean:
	rm -rf build
