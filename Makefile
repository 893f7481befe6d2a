# The two commands a newcomer needs: `make run` and `make test`.
.PHONY: run test bench build vet

run:
	go run ./cmd/ams serve --dev

test:
	@# The public Standard Webhooks library verifies real deliveries in a test.
	@if command -v npm >/dev/null; then npm ci --silent --no-audit --no-fund --prefix webhook/testdata/standardwebhooks; fi
	go vet ./...
	go test -race -count=1 ./...

build:
	go build -o bin/ams ./cmd/ams

bench:
	bash scripts/bench.sh
