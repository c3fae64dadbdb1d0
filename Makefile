# Memocart. `make run` starts the whole service on embedded defaults;
# `make test` runs vet, the lint gates (tidy go.mod, workflowcheck,
# staticcheck), the alert rules' tests (promtool), the unit and store
# tests (SQLite, Postgres, Redis), and the end-to-end tests against an
# in-process Temporal server.
#
# Three modules: the root is the service (cmd/memocart, the binary that
# ships); cmd/devstack is the developer tooling (the embedded dev stack,
# load, cluster and chaos drivers, end-to-end tests), which alone depends on
# the Temporal server. Its binary bin/devstack has every memocart command too.
# api/client is the Go client library of the API, its own module so that
# applications import it without the service's dependencies; api/typescript
# is its TypeScript twin, an npm package (Node 20 and npm).

GO ?= go
DEVSTACK := cmd/devstack
CLIENT := api/client
TS := api/typescript
NPM ?= npm

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

.PHONY: run build devstack ts test vet test-unit test-e2e lint rules bench loadtest clean cluster cluster-stop cluster-status cluster-test chaos payouts

run: devstack
	bin/devstack dev

# The service: the binary the Dockerfile ships.
build:
	CGO_ENABLED=0 $(GO) build -trimpath -o bin/memocart ./cmd/memocart

# The developer tools, built in their own module. go's cache relinks only
# what changed, so this takes seconds after the first build.
devstack:
	$(GO) -C $(DEVSTACK) build -o $(CURDIR)/bin/devstack .

# The gates first (quick, and a failure there is the cheapest to read), then
# the unit and the end-to-end tests at once: the end-to-end tests mostly wait
# on Temporal, so the two share the machine's cores well; each one's output
# is printed whole as it ends (--output-sync).
test: vet lint rules
	$(MAKE) --no-print-directory -j2 --output-sync=target test-unit test-e2e

# The TypeScript client compiled to $(TS)/dist. Its dev dependencies (the
# pinned TypeScript and openapi-typescript; it has no runtime ones) are
# installed by npm ci from the committed lock file, again only when the
# lock or package.json is newer than the last install.
ts: $(TS)/node_modules/.package-lock.json
	$(NPM) --prefix $(TS) run build

$(TS)/node_modules/.package-lock.json: $(TS)/package-lock.json $(TS)/package.json
	$(NPM) --prefix $(TS) ci

# The gates besides vet, pinned: workflowcheck flags non-deterministic code
# in workflows, staticcheck the rest, and each go.mod must be tidy (every
# requirement the code imports is direct). They are fetched through the
# module proxy the first time and cached after.
WORKFLOWCHECK ?= go.temporal.io/sdk/contrib/tools/workflowcheck@v0.6.0
STATICCHECK ?= honnef.co/go/tools/cmd/staticcheck@v0.8.2
lint:
	$(GO) mod tidy -diff
	$(GO) run $(WORKFLOWCHECK) ./workflows/...
	$(GO) run $(STATICCHECK) ./...
	$(GO) -C $(DEVSTACK) mod tidy -diff
	$(GO) -C $(DEVSTACK) run $(STATICCHECK) ./...
	$(GO) -C $(CLIENT) mod tidy -diff
	$(GO) -C $(CLIENT) run $(STATICCHECK) ./...

# The Prometheus rules (docs/monitoring): promtool (Debian's prometheus
# package, which .ci/run installs) checks them and runs their unit tests;
# the Go test holds every alert to its labels, annotations and runbook in
# docs/operators.md, and to a test where it fires and one where it must not.
PROMTOOL ?= promtool
RULES := docs/monitoring/memocart.rules.yml
rules:
	$(PROMTOOL) check rules $(RULES)
	$(PROMTOOL) test rules $(RULES:.yml=.test.yml)
	$(GO) -C $(DEVSTACK) test -count=1 ./monitoring/

vet:
	@unformatted=$$(gofmt -l $$(git ls-files '*.go' 2>/dev/null || find . -name '*.go')); \
	if [ -n "$$unformatted" ]; then echo "gofmt needed:"; echo "$$unformatted"; exit 1; fi
	$(GO) vet ./...
	$(GO) -C $(DEVSTACK) vet ./...
	$(GO) -C $(CLIENT) vet ./...

# The service module: unit and store tests; it never compiles the Temporal
# server. Then the client module's tests, which hold it to api/openapi.json
# and run against fake servers (no service needed), and the TypeScript
# client's unit tests (fake servers too; its schema regenerated and
# compared). Its integration tests run in test-e2e, against the dev stack.
test-unit: ts
	$(GO) test -race -count=1 ./...
	$(GO) -C $(CLIENT) test -race -count=1 ./...
	$(NPM) --prefix $(TS) test

# The tools module: the end-to-end tests over the real dev stack (Temporal
# server, worker, HTTP) and the tools' own tests, the TypeScript client's
# integration tests and quickstart among them (TestClients*).
test-e2e: ts
	$(GO) -C $(DEVSTACK) test -race -count=1 -timeout 30m ./...

bench:
	$(GO) test -run '^$$' -bench . -benchmem ./api/... ./models/...

# The load figures of docs/benchmarks.md: starts its own dev stack with the
# app data in the Postgres database memocart_loadtest (recreated) on the
# server of LOADTEST_DATABASE_URL, and measures it against pgbench and bare
# Temporal starts there. Not part of `make test`. Pass flags with
# LOADTEST_FLAGS, e.g. LOADTEST_FLAGS='-pairs 1 -orders 1000'.
LOADTEST_DATABASE_URL ?= $(MEMOCART_TEST_DATABASE_URL)
LOADTEST_FLAGS ?=
loadtest: devstack
	MEMOCART_DATABASE_URL='$(LOADTEST_DATABASE_URL)' bin/devstack loadtest $(LOADTEST_FLAGS)

# The production topology on this machine without Docker (docs/production.md):
# own Postgres and Redis, Temporal's server and UI, two api and two worker
# processes of bin/memocart. State, data and logs in .data/cluster;
# CLUSTER_FLAGS passes flags (e.g. CLUSTER_FLAGS='-ports 27000').
CLUSTER_FLAGS ?=
cluster: build devstack
	bin/devstack cluster $(CLUSTER_FLAGS) up

# Stopping and reading status use the binaries as they are, so a broken
# build cannot keep a running cluster from being stopped.
cluster-stop:
	@test -x bin/devstack || $(MAKE) devstack
	bin/devstack cluster $(CLUSTER_FLAGS) down

cluster-status:
	@test -x bin/devstack || $(MAKE) devstack
	bin/devstack cluster $(CLUSTER_FLAGS) status

# Brings a second cluster up on other ports in a temporary directory, takes a
# sandbox order to delivered through it, and stops it; then one more with
# live mode on the providers' test servers, whose 5 refunds approved at once
# must each be paid once (the payouts driver). Not part of `make test`: it
# builds the Temporal binaries (cached under the user cache dir).
cluster-test:
	$(GO) -C $(DEVSTACK) test -race -count=1 -tags clustertest -run TestCluster -v -timeout 20m ./cluster/
	$(GO) -C $(DEVSTACK) test -race -count=1 -tags clustertest -run TestClusterPayouts -v -timeout 20m .

# The chaos test (docs/reliability.md): its own cluster on free ports in a
# temporary directory, 1,000 orders (a share live on the providers' test
# servers, with refunds to pay) created and paid while an api, a worker,
# Temporal and Postgres are SIGKILLed, then the invariants as a table; exits
# 1 when one is not 0. Not part of `make test` (it takes minutes).
# CHAOS_FLAGS passes flags, e.g. CHAOS_FLAGS='-orders 100 -load-time 45s'.
CHAOS_FLAGS ?=
chaos: build devstack
	bin/devstack chaos $(CHAOS_FLAGS)

# The 50-refunds-at-once figure of docs/benchmarks.md: its own cluster (as
# chaos), live mode on the providers' test servers, 50 refunds approved at
# once; prints the time until all are sent and exits 1 unless each was paid
# once with no sequence collision. Not part of `make test`.
# PAYOUTS_FLAGS passes flags, e.g. PAYOUTS_FLAGS='-refunds 100'.
PAYOUTS_FLAGS ?=
payouts: build devstack
	bin/devstack payouts $(PAYOUTS_FLAGS)

clean:
	rm -rf bin .data $(TS)/dist
