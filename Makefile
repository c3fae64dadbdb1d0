# Memocart. `make run` starts the whole service on embedded defaults;
# `make test` runs vet, the unit and store tests (SQLite, Postgres, Redis),
# and the end-to-end tests against an in-process Temporal server.

GO ?= go

# Real services the tests use. Override to point elsewhere; the tests fail
# (never skip) when a configured service is unreachable.
MEMOCART_TEST_DATABASE_URL ?= postgres://postgres@127.0.0.1:5432/postgres?sslmode=disable
MEMOCART_TEST_REDIS_URL ?= redis://127.0.0.1:6379/15
export MEMOCART_TEST_DATABASE_URL MEMOCART_TEST_REDIS_URL

# The heavy packages (they link the Temporal server) run as their own step so
# everyday `go test` of the rest stays fast.
HEAVY_PKGS := ./cmd/memocart/devtemporal/... ./cmd/memocart/e2e/...
UNIT_PKGS = $(shell $(GO) list ./... | grep -v -e /cmd/memocart/devtemporal -e /cmd/memocart/e2e)

.PHONY: run build build-prod test vet test-unit test-e2e lint fmt bench clean

run:
	$(GO) run ./cmd/memocart dev

build:
	CGO_ENABLED=0 $(GO) build -o bin/memocart ./cmd/memocart

# The production binary: built without the embedded Temporal server.
build-prod:
	CGO_ENABLED=0 $(GO) build -tags prod -trimpath -o bin/memocart ./cmd/memocart

test: vet test-unit test-e2e

vet:
	@unformatted=$$(gofmt -l $$(git ls-files '*.go' 2>/dev/null || find . -name '*.go')); \
	if [ -n "$$unformatted" ]; then echo "gofmt needed:"; echo "$$unformatted"; exit 1; fi
	$(GO) vet ./...

test-unit:
	$(GO) test -race -count=1 $(UNIT_PKGS)

test-e2e:
	$(GO) test -race -count=1 -timeout 30m $(HEAVY_PKGS)

bench:
	$(GO) test -run '^$$' -bench . -benchmem ./api/... ./models/...

clean:
	rm -rf bin .data
