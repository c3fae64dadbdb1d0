# Memocart. `make run` starts the whole service on embedded defaults;
# `make test` runs vet, the lint gates (tidy go.mod, workflowcheck,
# staticcheck), the unit and store tests (SQLite, Postgres, Redis),
# and the end-to-end tests against an in-process Temporal server.

GO ?= go

# Real services the tests use. Override to point elsewhere; the tests fail
# (never skip) when a configured service is unreachable.
MEMOCART_TEST_DATABASE_URL ?= postgres://postgres@127.0.0.1:5432/postgres?sslmode=disable
MEMOCART_TEST_REDIS_URL ?= redis://127.0.0.1:6379/15
export MEMOCART_TEST_DATABASE_URL MEMOCART_TEST_REDIS_URL

# The browser the tracking page's test drives headless (api; Debian's
# chromium package, which .ci/run installs). Its screenshots go to a
# temporary directory, or to MEMOCART_TEST_SCREENSHOTS when set (keep it
# outside the repository).
MEMOCART_TEST_CHROMIUM ?= chromium
export MEMOCART_TEST_CHROMIUM

# The heavy packages link the Temporal server: cmd/memocart (whose tests are
# the end-to-end tests over the real dev stack) and its embedded server. They
# run as their own step so everyday `go test` of the rest stays fast.
HEAVY_PKGS := ./cmd/memocart/...
UNIT_PKGS = $(shell $(GO) list ./... | grep -v '/cmd/memocart')

.PHONY: run build build-prod test vet test-unit test-e2e lint bench loadtest clean cluster cluster-stop cluster-status cluster-test chaos

run:
	$(GO) run ./cmd/memocart dev

build:
	CGO_ENABLED=0 $(GO) build -o bin/memocart ./cmd/memocart

# The production binary: built without the embedded Temporal server.
build-prod:
	CGO_ENABLED=0 $(GO) build -tags prod -trimpath -o bin/memocart ./cmd/memocart

test: vet lint test-unit test-e2e

# The gates besides vet, pinned: workflowcheck flags non-deterministic code
# in workflows, staticcheck the rest, and go.mod must be tidy (every
# requirement the code imports is direct). They are fetched through the
# module proxy the first time and cached after.
WORKFLOWCHECK ?= go.temporal.io/sdk/contrib/tools/workflowcheck@v0.6.0
STATICCHECK ?= honnef.co/go/tools/cmd/staticcheck@v0.8.2
lint:
	$(GO) mod tidy -diff
	$(GO) run $(WORKFLOWCHECK) ./workflows/...
	$(GO) run $(STATICCHECK) ./...

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

# The load figures of docs/benchmarks.md: starts its own dev stack with the
# app data in the Postgres database memocart_loadtest (recreated) on the
# server of LOADTEST_DATABASE_URL, and measures it against pgbench and bare
# Temporal starts there. Not part of `make test`. Pass flags with
# LOADTEST_FLAGS, e.g. LOADTEST_FLAGS='-pairs 1 -orders 1000'.
LOADTEST_DATABASE_URL ?= $(MEMOCART_TEST_DATABASE_URL)
LOADTEST_FLAGS ?=
loadtest: build
	MEMOCART_DATABASE_URL='$(LOADTEST_DATABASE_URL)' bin/memocart loadtest $(LOADTEST_FLAGS)

# The production topology on this machine without Docker (README, "Production
# topology on one machine"): own Postgres and Redis, Temporal's server and UI,
# two api and two worker processes of the prod build. State, data and logs in
# .data/cluster; CLUSTER_FLAGS passes flags (e.g. CLUSTER_FLAGS='-ports 27000').
CLUSTER_FLAGS ?=
cluster: build-prod
	bin/memocart cluster $(CLUSTER_FLAGS) up

# Stopping and reading status use the binary as it is, so a broken build
# cannot keep a running cluster from being stopped.
cluster-stop:
	@test -x bin/memocart || $(MAKE) build-prod
	bin/memocart cluster $(CLUSTER_FLAGS) down

cluster-status:
	@test -x bin/memocart || $(MAKE) build-prod
	bin/memocart cluster $(CLUSTER_FLAGS) status

# Brings a second cluster up on other ports in a temporary directory, takes a
# sandbox order to delivered through it, and stops it. Not part of `make
# test`: it builds the Temporal binaries (cached under the user cache dir).
cluster-test:
	$(GO) test -race -count=1 -tags clustertest -run TestCluster -v -timeout 20m ./cmd/memocart/cluster/

# The chaos test (docs/reliability.md): its own cluster on free ports in a
# temporary directory, 1,000 sandbox orders created and paid while an api, a
# worker, Temporal and Postgres are SIGKILLed, then the invariants as a table;
# exits 1 when one is not 0. Not part of `make test` (it takes minutes).
# CHAOS_FLAGS passes flags, e.g. CHAOS_FLAGS='-orders 100 -load-time 45s'.
CHAOS_FLAGS ?=
chaos: build-prod
	bin/memocart chaos $(CHAOS_FLAGS)

clean:
	rm -rf bin .data
