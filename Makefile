# The two commands a newcomer needs: `make run` and `make test`.
.PHONY: run test bench build vet

run:
	go run ./cmd/ams serve --dev

test:
	go vet ./...
	go test -race -count=1 ./...

build:
	go build -o bin/ams ./cmd/ams

bench:
	bash scripts/bench.sh
