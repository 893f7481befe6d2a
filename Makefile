# The two commands a newcomer needs: `make run` and `make test`.
.PHONY: run test bench build vet test-python test-typescript

run:
	go run ./cmd/ams serve --dev

test:
	@# The public Standard Webhooks library verifies real deliveries in a test.
	@if command -v npm >/dev/null; then npm ci --silent --no-audit --no-fund --prefix webhook/testdata/standardwebhooks; fi
	go vet ./...
	go test -race -count=1 ./...
	@# Latency bounds, which skip under -race, without it.
	go test -count=1 -run 'TestNoisyNeighbour|TestMultiProcessWakeUp' ./webhook ./e2e
	@# The Python SDK (sdk/python) against a real ams serve it builds; about 30 s.
	@if command -v python3 >/dev/null; then $(MAKE) --no-print-directory test-python; else echo "python3 not found: Python SDK tests skipped"; fi
	@# The TypeScript SDK (sdk/typescript) against real ams serve processes; about 2 min.
	@if command -v npm >/dev/null; then $(MAKE) --no-print-directory test-typescript; else echo "npm not found: TypeScript SDK tests skipped"; fi

test-python:
	python3 -m unittest discover -s sdk/python/tests -t sdk/python

test-typescript:
	npm ci --silent --no-audit --no-fund --prefix sdk/typescript
	npm test --prefix sdk/typescript

build:
	go build -o bin/ams ./cmd/ams

bench:
	bash scripts/bench.sh
