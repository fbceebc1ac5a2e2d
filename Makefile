# sqsonce: `make demo` runs the summarise job locally; `make test` runs every test.
SHELL := /bin/bash
GO    ?= go

TOOLS               := $(CURDIR)/.tools
STATICCHECK_VERSION := v0.8.2
RIE_VERSION         := v0.0.0-20261030222936-bef5c4ba774d
STATICCHECK         := $(TOOLS)/staticcheck
RIE                 := $(TOOLS)/aws-lambda-rie
PTDIR               := internal/ptinterop/testdata
PTNODE              := $(PTDIR)/node_modules/.package-lock.json
GOFILES              = $(shell find . \( -path ./infra/node_modules -o -path ./.tools -o -path ./build \) -prune -o -name '*.go' -print)

# The function is built for Lambda's provided.al2023 runtime on Graviton.
LAMBDA_GOOS   := linux
LAMBDA_GOARCH := arm64
EVENT         ?= events/duplicate-delivery.json

.PHONY: all test test-go test-infra lint fmt vet staticcheck bench bench-peer fuzz build demo invoke synth diff deploy tools clean

all: test

## test: lint, every Go test with the race detector (moto_server and the
## Lambda Runtime Interface Emulator are started by the tests), and infra's
## CDK synth tests with cfn-lint.
test: lint test-go test-infra

test-go: $(RIE) $(PTNODE)
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

## bench-peer: one SQS workload through Powertools for AWS Lambda
## (TypeScript, the pinned packages) and through sqsonce, alternately, on one
## moto_server behind a proxy adding 5 ms per DynamoDB call; prints ratios.
## Not part of make test.
BENCHPEER_FLAGS ?=
bench-peer: $(PTNODE)
	$(GO) run ./internal/cmd/benchpeer -driver $(PTDIR) $(BENCHPEER_FLAGS)

## fuzz: key extraction and canonicalisation, for FUZZTIME (default 30s).
FUZZTIME ?= 30s
fuzz:
	$(GO) test -run '^$$' -fuzz FuzzBodyFields -fuzztime $(FUZZTIME) ./middleware/idempotency/

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

clean:
	rm -rf build
