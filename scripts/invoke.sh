#!/usr/bin/env bash
# invoke.sh BOOTSTRAP EVENT [N]: run the function binary BOOTSTRAP under the
# AWS Lambda Runtime Interface Emulator (no Docker) and invoke it N times
# (default 2) with the SQS event in EVENT. In memory with the stub provider
# unless SQSONCE_* says otherwise (see cmd/summarise's doc).
set -euo pipefail
bootstrap=$1 event=$2 n=${3:-2}
rie=${RIE:-aws-lambda-rie}
port=${PORT:-9080} api=${API_PORT:-9081}
log=$(mktemp) out=$(mktemp)
export SQSONCE_STORE=${SQSONCE_STORE:-memory} SQSONCE_PROVIDER=${SQSONCE_PROVIDER:-stub}
export SQSONCE_DOCUMENTS_DIR=${SQSONCE_DOCUMENTS_DIR:-$PWD/samples/documents}
export SQSONCE_REQUEST_LOG=${SQSONCE_REQUEST_LOG:-$log}
# The emulator's invocation timeout, in seconds: above SQSONCE_MIN_REMAINING
# (default 90s), or no record would start. 300 is the emulator's own default.
export AWS_LAMBDA_FUNCTION_TIMEOUT=${AWS_LAMBDA_FUNCTION_TIMEOUT:-300} LOG_LEVEL=${LOG_LEVEL:-error}

"$rie" --runtime-interface-emulator-address "127.0.0.1:$port" --runtime-api-address "127.0.0.1:$api" "$bootstrap" >"$out" 2>&1 &
pid=$!
trap 'kill $pid 2>/dev/null; wait $pid 2>/dev/null; rm -f "$log" "$out"' EXIT
for _ in $(seq 100); do
  (exec 3<>"/dev/tcp/127.0.0.1/$port") 2>/dev/null && break
  sleep 0.05
done
for _ in $(seq "$n"); do
  curl -sS -X POST "http://127.0.0.1:$port/2015-03-31/functions/function/invocations" --data-binary @"$event"
  echo
done
echo "invocations: $n, provider calls: $(wc -l <"$SQSONCE_REQUEST_LOG" | tr -d ' ')"
