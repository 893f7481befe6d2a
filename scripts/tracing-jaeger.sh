#!/usr/bin/env bash
# Tracing against real OTLP receivers (issue 32, point 7; docs/operations.md,
# "Tracing"): runs the tracing package's tests, whose OTLP/HTTP receiver
# decodes with the protocol's own protobufs, then builds Jaeger all-in-one
# (github.com/jaegertracing/jaeger/cmd/jaeger, from the Go module proxy, in
# a throwaway module: its go.mod has replace directives, so go install
# pkg@version refuses it) and runs TestSpansReachJaeger against it: a
# request with a traceparent, its turn, engine and tool call, store
# transactions and the webhook deliveries of its events must come back from
# Jaeger's query API as one trace, parent to child.
#
# The Jaeger build is heavy (a collector with every storage backend: a
# 120 MB binary, about 17 minutes on 2 shared cores with go build -p 1):
# it is kept in $JAEGER_DIR (default ~/.cache/ams-jaeger) and reused.
#
# Usage: bash scripts/tracing-jaeger.sh
#   JAEGER_VERSION=v1.76.0   the module version to build
#   AMS_TEST_JAEGER=/path    use that jaeger binary instead of building one
set -euo pipefail
cd "$(dirname "$0")/.."

version="${JAEGER_VERSION:-v1.76.0}"
dir="${JAEGER_DIR:-$HOME/.cache/ams-jaeger}/$version"
bin="${AMS_TEST_JAEGER:-$dir/jaeger}"

go test -count=1 -run 'TestSpansReachOTLPReceiver|TestOffAllocatesNothing' ./tracing/

if [ ! -x "$bin" ]; then
  echo "building Jaeger $version into $dir (several minutes)..." >&2
  mkdir -p "$dir/mod"
  (
    cd "$dir/mod"
    [ -f go.mod ] || go mod init amsjaeger >/dev/null 2>&1
    go get -tool "github.com/jaegertracing/jaeger/cmd/jaeger@$version"
    go build -o "$bin" github.com/jaegertracing/jaeger/cmd/jaeger
  )
fi
AMS_TEST_JAEGER="$bin" go test -count=1 -v -run TestSpansReachJaeger ./tracing/
