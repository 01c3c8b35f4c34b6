# herald: `make demo` and `make test` do all set-up on a fresh Debian machine with Go.

GO        ?= go
SUDO      := $(shell [ "$$(id -u)" = 0 ] || echo sudo)
APT_PKGS  := zookeeper libcurator-recipes-java python3-kazoo prometheus chromium
TEST_TIMEOUT ?= 9m
STATICCHECK_VERSION ?= v0.8.2

.PHONY: all build test test-race bench bench-scale chaos demo deps zk lint fuzz clean

all: build

## deps: install ZooKeeper (and the peers the tests compare against) from Debian when missing.
deps:
	@missing=""; for p in $(APT_PKGS); do dpkg -s $$p >/dev/null 2>&1 || missing="$$missing $$p"; done; \
	if ! command -v java >/dev/null 2>&1; then missing="$$missing default-jre-headless"; fi; \
	if [ -n "$$missing" ]; then \
		echo "installing:$$missing"; \
		$(SUDO) apt-get update -qq && DEBIAN_FRONTEND=noninteractive $(SUDO) apt-get install -y -qq $$missing; \
	fi

build:
	$(GO) build -o bin/herald ./cmd/herald

## test: every test, unit and integration, against real servers (failing, not skipping, when one is missing).
# -parallel 6: only cmd/herald's tests call t.Parallel, and they wait on
# sessions and processes, not the CPU (a fifth of one core on average); at
# 4, and with most of them serial, it was the longest package by minutes.
# -p 4: the four long packages (cmd/herald, elect, publish/bridge,
# integration) wait on servers too and run side by side. At -p 3 the bridge's
# started only when integration was done, and the two cores were a third
# busy over 9 minutes; at 4, 8 minutes with five other test runs beside it.
test: deps
	HERALD_REQUIRE_SERVERS=1 $(GO) test -count=1 -p 4 -parallel 6 -timeout $(TEST_TIMEOUT) ./...

## test-race: the same with the race detector on the core packages.
test-race: deps
	HERALD_REQUIRE_SERVERS=1 $(GO) test -race -count=1 -timeout $(TEST_TIMEOUT) ./elect/ ./publish/...

## bench: figures against peers (go-zookeeper Lock, raw ZooKeeper, direct watches) in one run.
bench: deps
	HERALD_REQUIRE_SERVERS=1 $(GO) test -run '^$$' -bench . -benchtime 1x -timeout 45m ./integration/

## bench-scale: the bridge process over 10,000 and 100,000 groups: memory per group, snapshot time, lag and CPU at 500-2,000 changes/s.
bench-scale: deps
	HERALD_REQUIRE_SERVERS=1 HERALD_SCALE=full $(GO) test -run '^$$' -bench BridgeScale -benchtime 1x -timeout 45m ./integration/

## chaos: long fault-injection runs: the library (HERALD_CHAOS_DURATION, default 2m), shared groups with foreign clients on one server (1m) and through member failures (45s), then herald run and lock processes (HERALD_CHAOS_RUNNERS_DURATION, default 60s).
chaos: deps
	HERALD_REQUIRE_SERVERS=1 HERALD_CHAOS=1 $(GO) test -count=1 -run Chaos -v -timeout 60m ./integration/
	HERALD_REQUIRE_SERVERS=1 HERALD_CHAOS=1 $(GO) test -count=1 -run Chaos -v -timeout 60m ./cmd/herald/

## demo: a local ZooKeeper, embedded NATS, a bridge and four `herald run` candidates.
demo: deps build
	./bin/herald demo

## zk: a throwaway local ZooKeeper for trying herald by hand (NODES=3 for an ensemble).
zk: deps
	$(GO) run ./internal/zkserver/zkrun -nodes $(or $(NODES),1)

## lint: gofmt, go vet here and for macOS and Windows, tests included (herald builds for both), and staticcheck.
lint:
	@out=$$(gofmt -l $$(git ls-files '*.go')); if [ -n "$$out" ]; then echo "gofmt:"; echo "$$out"; exit 1; fi
	$(GO) vet ./...
	GOOS=darwin $(GO) vet ./...
	GOOS=windows $(GO) vet ./...
	$(GO) run honnef.co/go/tools/cmd/staticcheck@$(STATICCHECK_VERSION) ./...

fuzz:
	$(GO) test -run '^$$' -fuzz FuzzParseName -fuzztime 30s ./elect/
	$(GO) test -run '^$$' -fuzz FuzzFormatNames -fuzztime 30s ./elect/
	$(GO) test -run '^$$' -fuzz FuzzDecode -fuzztime 30s ./elect/ident/
	$(GO) test -run '^$$' -fuzz FuzzTokens -fuzztime 30s ./publish/
	$(GO) test -run '^$$' -fuzz FuzzGroupFromTokens -fuzztime 30s ./publish/
	$(GO) test -run '^$$' -fuzz FuzzEnvelope -fuzztime 30s ./publish/
	$(GO) test -run '^$$' -fuzz FuzzDecodeBody -fuzztime 30s ./publish/
	$(GO) test -run '^$$' -fuzz FuzzSkimGroup -fuzztime 30s ./sinks/audit/

clean:
	rm -rf bin
