# sqsonce: `make demo` runs the summarise job locally; `make test` runs every test.
SHELL := /bin/bash
GO    ?= go

TOOLS               := $(CURDIR)/.tools
STATICCHECK_VERSION := v0.8.2
RIE_VERSION         := v0.0.0-20261030222936-bef5c4ba774d
STATICCHECK         := $(TOOLS)/staticcheck
RIE                 := $(TOOLS)/aws-lambda-rie
GOFILES              = $(shell find . \( -path ./infra/node_modules -o -path ./.tools -o -path ./build \) -prune -o -name '*.go' -print)

# The function is built for Lambda's provided.al2023 runtime on Graviton.
LAMBDA_GOOS   := linux
LAMBDA_GOARCH := arm64
EVENT         ?= events/duplicate-delivery.json

.PHONY: all test test-go test-infra lint fmt vet staticcheck bench fuzz chaos build demo invoke synth diff deploy tools clean

all: test

## test: lint, every Go test with the race detector (moto_server and the
## Lambda Runtime Interface Emulator are started by the tests), and infra's
## CDK synth tests with cfn-lint.
test: lint test-go test-infra

test-go: $(RIE)
	SQSONCE_RIE=$(RIE) $(GO) test -race -count=1 -timeout 20m ./...

test-infra:
	$(MAKE) -C infra test

lint: fmt vet staticcheck

fmt:
	@out="$$(gofmt -l $(GOFILES))"; if [ -n "$$out" ]; then echo "gofmt -l reports:"; echo "$$out"; exit 1; fi

vet:
	$(GO) vet ./...
	cd infra && $(GO) vet ./...

staticcheck: $(STATICCHECK)
	$(STATICCHECK) ./...
	cd infra && $(STATICCHECK) ./...

## bench: the decorator's overhead per record (BenchmarkBare vs BenchmarkIdempotent).
bench:
	$(GO) test -run '^$$' -bench . -benchmem -count=1 ./middleware/...

## fuzz: key extraction and canonicalisation, for FUZZTIME (default 30s).
FUZZTIME ?= 30s
fuzz:
	$(GO) test -run '^$$' -fuzz FuzzBodyFields -fuzztime $(FUZZTIME) ./middleware/idempotency/

## chaos: the chaos test's long runs on moto_server, 300 keys and 4 worker
## processes each: the process and store fault profiles with pacing on, then
## the all and lambda (visibility 6x the deadline) profiles with pacing off
## and on, same seed. Prints the table; fails on any broken promise.
## CHAOS_FLAGS adds flags, e.g. CHAOS_FLAGS='-seed 7'. The short profile runs
## in `make test` (internal/chaos).
CHAOS_FLAGS ?=
chaos:
	$(GO) run ./internal/chaos/cmd/chaos -profiles process,store,all:off,all:on,lambda:off,lambda:on -keys 300 -workers 4 $(CHAOS_FLAGS)

## build: build/bootstrap.zip, the function for provided.al2023 on arm64.
build:
	@mkdir -p build
	CGO_ENABLED=0 GOOS=$(LAMBDA_GOOS) GOARCH=$(LAMBDA_GOARCH) $(GO) build -tags lambda.norpc -trimpath -ldflags='-s -w' -o build/bootstrap ./cmd/summarise
	$(GO) run ./internal/cmd/mkzip -o build/bootstrap.zip build/bootstrap
	@ls -l build/bootstrap.zip

## demo: the summarise job on the bundled events, in memory with the stub
## provider: a duplicated delivery makes one provider call.
demo:
	$(GO) run ./cmd/summarise -event events/duplicate-delivery.json -repeat 2
	$(GO) run ./cmd/summarise -event events/producer-resend.json
	$(GO) run ./cmd/summarise -event events/mixed-batch.json

## invoke: run the function binary under the Lambda Runtime Interface
## Emulator with EVENT (default events/duplicate-delivery.json), no Docker.
invoke: $(RIE)
	@mkdir -p build/host
	CGO_ENABLED=0 $(GO) build -tags lambda.norpc -o build/host/bootstrap ./cmd/summarise
	RIE=$(RIE) ./scripts/invoke.sh build/host/bootstrap $(EVENT)

synth diff deploy: build
	$(MAKE) -C infra $@

tools: $(STATICCHECK) $(RIE)

$(STATICCHECK):
	GOBIN=$(TOOLS) $(GO) install honnef.co/go/tools/cmd/staticcheck@$(STATICCHECK_VERSION)

$(RIE):
	GOBIN=$(TOOLS) $(GO) install github.com/aws/aws-lambda-runtime-interface-emulator/cmd/aws-lambda-rie@$(RIE_VERSION)

clean:
	rm -rf build
