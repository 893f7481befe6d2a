# The two commands a newcomer needs: `make run` and `make test`.
.PHONY: run test bench build vet test-go test-deps go-test test-latency test-python test-typescript screenshots

run:
	go run ./cmd/ams serve --dev

# make test runs every suite, even after one fails, prints how long each
# took, and fails at the end naming the suites that failed. go vet and the
# SDKs' suites run in the background beside the Go tests (the SDKs' mostly
# wait: on their servers, the TypeScript one on rate-limit windows), their
# output printed whole at the end; the npm packages they and the Go tests
# use are installed first.
test:
	@bash scripts/run-suites.sh \
		"npm packages:$(MAKE) --no-print-directory test-deps" \
		"&go vet:go vet ./..." \
		"&Python SDK:$(MAKE) --no-print-directory test-python" \
		"&TypeScript SDK:$(MAKE) --no-print-directory test-typescript" \
		"go test -race:$(MAKE) --no-print-directory go-test"

# The Go tests alone, their npm packages installed first.
test-go: test-deps
	@$(MAKE) --no-print-directory go-test

# The npm packages the tests use: the public Standard Webhooks library
# verifies real deliveries in a test; Redocly and Spectral lint
# openapi/openapi.json in another (openapi/lint_test.go); the reference MCP
# server (server-everything) serves the MCP integrations' tests (Go and
# both SDKs); the official MCP TypeScript SDK is a client of /mcp
# (oauth/mcp_sdk_test.go).
test-deps:
	@if command -v npm >/dev/null; then \
		npm ci --silent --no-audit --no-fund --prefix webhook/testdata/standardwebhooks && \
		npm ci --silent --no-audit --no-fund --prefix openapi/testdata/lint && \
		npm ci --silent --no-audit --no-fund --prefix mcp/testdata/everything && \
		npm ci --silent --no-audit --no-fund --prefix oauth/testdata/mcpsdk; fi

# go test of every package (or of PKGS). -timeout: each package has 30
# minutes, not go test's 10: under -race on a loaded machine the longest
# packages (e2e, http: 2-3 minutes quiet) could pass 10. -p 4: four
# packages at once on two cores, because many tests spend their time
# waiting (on child processes, servers, timers), which a package beside
# them fills (issue 27, CI time).
# -race instruments our code and every dependency except SQLite's C library
# and the libc it runs on, which modernc.org translated from C to Go
# (RACE_EXEMPT): the detector has nothing of ours to find in them, as with
# a cgo SQLite, and instrumenting every memory access of the translated C
# made each SQLite statement about 6 times as costly (the SQLite storage
# suite: 115 s of CPU with them instrumented, 19 s without).
PKGS ?= ./...
GO_TEST_P ?= 4
RACE_EXEMPT = modernc.org/sqlite/lib modernc.org/libc/...
go-test:
	go test -race $(foreach p,$(RACE_EXEMPT),-gcflags=$(p)=-race=false) -count=1 -timeout 30m -p $(GO_TEST_P) $(PKGS)

# The Python SDK (sdk/python) against a real ams serve it builds; about 30 s.
test-python:
	@if ! command -v python3 >/dev/null; then echo "python3 not found: Python SDK tests skipped"; exit 0; fi; \
	python3 -m unittest discover -s sdk/python/tests -t sdk/python

# The TypeScript SDK (sdk/typescript) against real ams serve processes; about 2 min.
test-typescript:
	@if ! command -v npm >/dev/null; then echo "npm not found: TypeScript SDK tests skipped"; exit 0; fi; \
	npm ci --silent --no-audit --no-fund --prefix sdk/typescript && npm test --prefix sdk/typescript

# Refreshes docs/screenshots/ from the browser tests (headless Chromium).
screenshots:
	AMS_SCREENSHOT_DIR=$(CURDIR)/docs/screenshots AMS_REQUIRE_BROWSER_TESTS=1 go test -count=1 ./e2e/browser

build:
	go build -o bin/ams ./cmd/ams

bench:
	bash scripts/bench.sh
