# The two commands a newcomer needs: `make run` and `make test`.
.PHONY: run test bench build vet test-go test-latency test-python test-typescript screenshots

run:
	go run ./cmd/ams serve --dev

# make test runs every suite, even after one fails, prints how long each
# took, and fails at the end naming the suites that failed. The SDKs'
# suites run in the background beside the Go ones (they mostly wait: on
# their servers, and the TypeScript one on rate-limit windows), their
# output printed whole at the end.
test:
	@bash scripts/run-suites.sh \
		"&Python SDK:$(MAKE) --no-print-directory test-python" \
		"&TypeScript SDK:$(MAKE) --no-print-directory test-typescript" \
		"go vet:go vet ./..." \
		"go test -race:$(MAKE) --no-print-directory test-go"

test-go:
	@# The public Standard Webhooks library verifies real deliveries in a test;
	@# Redocly and Spectral lint openapi/openapi.json in another (openapi/lint_test.go);
	@# the reference MCP server (server-everything) serves the MCP integrations' tests.
	@if command -v npm >/dev/null; then \
		npm ci --silent --no-audit --no-fund --prefix webhook/testdata/standardwebhooks && \
		npm ci --silent --no-audit --no-fund --prefix openapi/testdata/lint && \
		npm ci --silent --no-audit --no-fund --prefix mcp/testdata/everything && \
		npm ci --silent --no-audit --no-fund --prefix oauth/testdata/mcpsdk; fi
	@# -timeout: each package has 30 minutes, not go test's 10: under -race on a
	@# loaded machine sqlite and http (about 3 minutes quiet) can pass 10.
	go test -race -count=1 -timeout 30m ./...

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
