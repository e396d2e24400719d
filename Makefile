# Two commands set everything up on a fresh machine:
#   make demo   the main job, end to end, on the bundled demo project (offline)
#   make test   every test
GO       ?= go
BIN      := bin/implloop
PKGS     := ./...
# Packages that start goroutines run under the race detector, and only
# there: a race run checks all that a plain run does, and running them
# twice cost make test two minutes.
RACE_DIRS := identity unit agent loop cache watch plan treewatch worker internal/gitobj
RACE_PKGS := $(foreach d,$(RACE_DIRS),$(if $(wildcard $(d)/*.go),./$(d)/...))
FUZZTIME ?= 10s
# A package's tests are cut off after this (go test's default is 10m): a
# hang still fails, and cmd/implloop, which takes 6.5 minutes alone and
# 10 beside the others on a 2-core machine where a process costs 5 ms,
# does not.
TEST_TIMEOUT ?= 25m

.PHONY: all build test test-plain test-race test-examples demo bench fuzz lint e2e browser screenshots clean docs man

all: build

# -buildvcs=auto: the commit and whether the tree was dirty go into the
# binary (implloop version) even where GOFLAGS says -buildvcs=false.
build:
	$(GO) build -buildvcs=auto -o $(BIN) ./cmd/implloop

# Every test; it prints its own wall time. The aim is under 10 minutes on
# a quiet 2-core machine from a fresh clone: on a paravirtualized one,
# where starting a process costs several times what it costs on bare
# metal, it takes about 15 (most of its CPU starts git processes). Property
# tests run a small number of cases here and thousands under make fuzz.
test:
	@start=$$(date +%s); \
	  if $(MAKE) --no-print-directory lint test-plain test-race test-examples; then \
	    echo "make test: passed in $$(( $$(date +%s) - start )) s"; \
	  else echo "make test: FAILED after $$(( $$(date +%s) - start )) s"; exit 1; fi

test-plain:
	@./scripts/install-bwrap.sh >/dev/null   # --sandbox's tests run real bubblewrap
	$(GO) test -count=1 -timeout $(TEST_TIMEOUT) $$($(GO) list $(PKGS) | grep -vE '/($(subst $(eval) ,|,$(RACE_DIRS)))(/|$$)')

test-race:
	$(GO) test -count=1 -timeout $(TEST_TIMEOUT) -race $(RACE_PKGS)

# The glue for the engines that start workers (docs/scale-out.md):
# action.yml and the example workflow through actionlint, the Kubernetes
# Indexed Job decoded strictly into the API types. A module of its own
# (examples/validate), so the CLI's go.mod stays lean.
test-examples:
	cd examples/validate && $(GO) vet ./... && $(GO) test -count=1 ./...

demo: build
	@./scripts/demo.sh $(BIN)

bench:
	$(GO) test -run '^$$' -bench . -benchtime 1s $(PKGS)

# Short fuzz runs of every fuzz target; FUZZTIME=60s for a longer one.
fuzz:
	@./scripts/fuzz.sh $(FUZZTIME)

lint:
	@out=$$(gofmt -l $$(git ls-files '*.go' 2>/dev/null || find . -name '*.go')); \
	  if [ -n "$$out" ]; then echo "gofmt would change:"; echo "$$out"; exit 1; fi
	# Once per GOOS, with the build tags merged: linux with the e2e and
	# browser tests, darwin (macOS users: it must at least build there)
	# with the reference pages' generator (gendocs replaces main.go).
	$(GO) vet -tags 'e2e browser' $(PKGS)
	GOOS=darwin $(GO) vet -tags gendocs $(PKGS)

# The generated docs: docs/cli/ (a page per command), docs/identity.md and
# the list of front-matter keys in docs/plan-format.md.
# Tests fail while any is stale.
docs:
	$(GO) generate ./cmd/implloop ./identity ./plan

# Man pages, one per command, into man/man1 (not kept in git):
#   MANPATH=$$PWD/man man implloop-run
man:
	$(GO) run -tags gendocs ./cmd/implloop -man man/man1

clean:
	rm -rf bin man

# The real Claude Code and OpenAI Codex CLIs (pinned, installed from npm
# into .e2e/) against scripted model API servers on loopback
# (internal/fakeclaude, internal/fakeopenai), also inside --sandbox.
e2e: browser
	@./scripts/install-claude.sh >/dev/null
	@./scripts/install-codex.sh >/dev/null
	@./scripts/install-bwrap.sh >/dev/null
	$(GO) test -tags e2e -count=1 ./e2e/...

# The HTML report in headless Chromium (Debian's chromium package, which
# scripts/install-chromium.sh installs when it is missing): the report.html
# of real runs, their DOM read back, hostile task text checked inert. The
# screenshots are kept in .e2e/artifacts/.
browser:
	@CHROMIUM=$$(./scripts/install-chromium.sh) && export CHROMIUM && mkdir -p .e2e/artifacts && \
	  $(GO) test -tags browser -count=1 -run Browser -artifacts -outputdir $(CURDIR)/.e2e/artifacts ./e2e/

# docs/report.png, the README's picture: the report of a real run of the
# demo plan, taken by the browser test.
screenshots:
	@CHROMIUM=$$(./scripts/install-chromium.sh) && export CHROMIUM && \
	  IMPLLOOP_SCREENSHOTS=$(CURDIR)/docs $(GO) test -tags browser -count=1 -run 'Browser/demo' ./e2e/
