# cua: the two commands a fresh Debian machine needs are `make demo` and `make test`.
# Every target installs what it needs first (`deps`), so nothing depends on a hand-set-up machine.

SHELL := /bin/bash
CARGO ?= cargo
# The binary `make build` produces (cargo honours CARGO_TARGET_DIR, so do we).
CUA := $(or $(CARGO_TARGET_DIR),target)/debug/cua
CHROMIUM := /usr/lib/chromium/chromium
HEADLESS_SHELL := /usr/lib/chromium/chromium-headless-shell
# `@playwright/test` for the generated-spec tests, installed project-locally (never a browser
# download: the specs launch Debian's Chromium). tests/it/codegen.rs pins the same version.
PLAYWRIGHT_VERSION := 1.65.1
PLAYWRIGHT_CI := target/playwright-ci
# An independent JSON Schema validator, run in strict mode over every committed document.
AJV_VERSION := 8.20.0
# TypeScript and Node's types, to type-check generated Playwright projects under strict mode.
TYPESCRIPT_VERSION := 5.9.3
NODE_TYPES_VERSION := 20.19.43
# The official Python MCP SDK, the client tests/mcp/client.py drives `cua mcp` and `cua serve`
# with (tests/it/mcp.rs), in a project-local venv.
MCP_VENV := target/mcp-venv
# The official OpenTelemetry protobuf package, which tests/otel/receiver.py decodes cua's OTLP
# exports with (tests/it/otel.rs), in the same venv.
OTEL_PROTO_VERSION := 1.45.2
MCP_SDK_VERSION := 2.3.0
export CARGO_TERM_COLOR ?= never

.PHONY: help man deps deps-chromium deps-node deps-python build demo test lint deny deps-deny mutants mutants-diff deps-mutants test-only conformance-up conformance-down postgres-up postgres-down leftovers soak bench evidence fmt clean

help: ## List the targets
	@grep -E '^[a-z-]+:.*## ' $(MAKEFILE_LIST) | sed -E 's/:.*## /\t/' | column -t -s $$'\t'

deps: deps-chromium ## Install what is missing: Chromium and its headless shell (Debian), rustfmt and clippy, and nroff (groff-base) for the man-page test
	@command -v nroff >/dev/null || { echo "nroff is missing: apt-get install -y groff-base"; $(APT_INSTALL) groff-base >/dev/null; }
	@command -v nroff >/dev/null || { echo "nroff still missing: run apt-get install -y groff-base" >&2; exit 1; }
	@command -v $(CARGO) >/dev/null || { echo "cargo is missing: install the Rust toolchain (https://rustup.rs) first" >&2; exit 1; }
	@$(CARGO) fmt --version >/dev/null 2>&1 || rustup component add rustfmt
	@$(CARGO) clippy --version >/dev/null 2>&1 || rustup component add clippy

deps-chromium:
	@if [ ! -x $(CHROMIUM) ]; then \
		echo "Chromium is missing: apt-get install -y chromium"; \
		$(APT_INSTALL) chromium >/dev/null; \
	fi
	@test -x $(CHROMIUM) || { echo "Chromium still missing at $(CHROMIUM): run apt-get install -y chromium" >&2; exit 1; }
	@if [ ! -x $(HEADLESS_SHELL) ]; then \
		echo "Chromium's headless shell is missing: apt-get install -y chromium-headless-shell"; \
		$(APT_INSTALL) chromium-headless-shell >/dev/null; \
	fi
	@test -x $(HEADLESS_SHELL) || { echo "The headless shell still missing at $(HEADLESS_SHELL): run apt-get install -y chromium-headless-shell" >&2; exit 1; }

# apt-get install of the Debian packages named, when a probe command says they are missing.
APT_INSTALL = apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq

deps-node: ## Install Node.js and npm (Debian), @playwright/test, ajv and TypeScript into target/playwright-ci when missing
	@command -v npm >/dev/null || { echo "npm is missing: apt-get install -y nodejs npm"; $(APT_INSTALL) nodejs npm >/dev/null; }
	@command -v npm >/dev/null || { echo "npm still missing: run apt-get install -y nodejs npm" >&2; exit 1; }
	@if [ "$$(node -p "require('./$(PLAYWRIGHT_CI)/node_modules/@playwright/test/package.json').version" 2>/dev/null)" != "$(PLAYWRIGHT_VERSION)" ]; then \
		mkdir -p $(PLAYWRIGHT_CI); \
		[ -f $(PLAYWRIGHT_CI)/package.json ] || echo '{ "name": "cua-playwright-ci", "private": true }' > $(PLAYWRIGHT_CI)/package.json; \
		npm install --no-audit --no-fund --prefix $(PLAYWRIGHT_CI) @playwright/test@$(PLAYWRIGHT_VERSION); \
	fi
	@if [ "$$(node -p "require('./$(PLAYWRIGHT_CI)/node_modules/ajv/package.json').version" 2>/dev/null)" != "$(AJV_VERSION)" ]; then \
		npm install --no-audit --no-fund --prefix $(PLAYWRIGHT_CI) ajv@$(AJV_VERSION); \
	fi
	@if [ "$$(node -p "require('./$(PLAYWRIGHT_CI)/node_modules/typescript/package.json').version" 2>/dev/null)" != "$(TYPESCRIPT_VERSION)" ] \
		|| [ "$$(node -p "require('./$(PLAYWRIGHT_CI)/node_modules/@types/node/package.json').version" 2>/dev/null)" != "$(NODE_TYPES_VERSION)" ]; then \
		npm install --no-audit --no-fund --prefix $(PLAYWRIGHT_CI) typescript@$(TYPESCRIPT_VERSION) @types/node@$(NODE_TYPES_VERSION); \
	fi

deps-python: ## Install python3 and venv (Debian), the official Python MCP SDK and opentelemetry-proto into target/mcp-venv when missing
	@python3 -c 'import ensurepip, venv' 2>/dev/null || { echo "python3 with venv is missing: apt-get install -y python3 python3-venv"; $(APT_INSTALL) python3 python3-venv >/dev/null; }
	@python3 -c 'import ensurepip, venv' 2>/dev/null || { echo "python3-venv still missing: run apt-get install -y python3 python3-venv" >&2; exit 1; }
	@if [ "$$($(MCP_VENV)/bin/python -c 'import importlib.metadata as m; print(m.version("mcp"))' 2>/dev/null)" != "$(MCP_SDK_VERSION)" ]; then \
		python3 -m venv $(MCP_VENV) || { echo "cannot create $(MCP_VENV): apt-get install -y python3-venv" >&2; exit 1; }; \
		$(MCP_VENV)/bin/pip install --quiet --disable-pip-version-check 'mcp==$(MCP_SDK_VERSION)'; \
	fi
	@if [ "$$($(MCP_VENV)/bin/python -c 'import importlib.metadata as m; print(m.version("opentelemetry-proto"))' 2>/dev/null)" != "$(OTEL_PROTO_VERSION)" ]; then \
		$(MCP_VENV)/bin/pip install --quiet --disable-pip-version-check 'opentelemetry-proto==$(OTEL_PROTO_VERSION)'; \
	fi

build: deps ## Build the cua binary
	$(CARGO) build --bin cua

man: build ## Write the man pages (cua.1 and one per subcommand) into target/man
	$(CUA) man --out $(or $(CARGO_TARGET_DIR),target)/man

demo: build deps-node ## Run the end-to-end demo against the MemberDesk fixture app
	@echo "== validating the reference capabilities and tenant overlays"
	$(CUA) validate capabilities/*.yaml tenants/*/*.yaml
	@echo "== the demo: discover, compile, review, replay (evidence in evidence/demo/)"
	$(CUA) demo
	@$(MAKE) --no-print-directory leftovers

fmt: ## Format the workspace
	$(CARGO) fmt --all

lint: deps deny ## Format check, clippy with warnings as errors, and cargo-deny
	$(CARGO) fmt --all -- --check
	$(CARGO) clippy --workspace --all-targets -- -D warnings
	# The product build: no MemberDesk fixture, no demo.
	$(CARGO) clippy --bin cua --no-default-features -- -D warnings

deps-deny: ## Install cargo-deny when missing
	@$(CARGO) deny --version >/dev/null 2>&1 || $(CARGO) install cargo-deny --locked --version 0.20.2

deny: deps-deny ## cargo-deny (deny.toml): wrapped crates only their wrappers name, sources
	$(CARGO) deny --locked check bans sources

deps-mutants: ## Install cargo-mutants when missing
	@$(CARGO) mutants --version >/dev/null 2>&1 || $(CARGO) install cargo-mutants --locked --version 27.1.0

# What `mutants-diff` checks: the source changed since this revision.
MUTANTS_BASE ?= HEAD~1

mutants: deps-mutants ## Mutation testing of the safety-critical crates (hours): evidence/mutants.txt, evidence/mutants-missed.txt
	scripts/mutants.sh

mutants-diff: deps-mutants ## Mutation testing of the code changed since MUTANTS_BASE (default HEAD~1); fails on a missed mutant
	scripts/mutants.sh --in-diff $(MUTANTS_BASE)

test: lint test-only ## Format check, clippy, and every test (Chromium ones included)

# The conformance apps run for the length of the tests and are stopped however the tests end.
test-only: deps deps-node deps-python conformance-up postgres-up
	@trap 'conformance/apps.sh down; scripts/postgres.sh down' EXIT; \
	if $(CARGO) nextest --version >/dev/null 2>&1; then \
		$(CARGO) nextest run --workspace --no-fail-fast; \
	else \
		$(CARGO) test --workspace --no-fail-fast -- --test-threads=2; \
	fi && $(CARGO) test --workspace --doc
	@$(MAKE) --no-print-directory leftovers

conformance-up: ## Install (Debian) and start the conformance apps: WordPress with MariaDB, Redmine with SQLite
	conformance/apps.sh up

postgres-up: ## Install (Debian) and start PostgreSQL on loopback for the batch queue (scripts/postgres.sh)
	scripts/postgres.sh up

postgres-down: ## Stop the batch queue's PostgreSQL (its data stays)
	scripts/postgres.sh down

conformance-down: ## Stop the conformance apps (their data stays; `conformance/apps.sh reset` starts afresh)
	conformance/apps.sh down

# Nothing outlives its run: after the tests (the crash harness included) no Chromium process
# and no profile directory of ours may remain. A browser's watchdog takes both down when its
# owner ends, however it ends; this counts what is left and fails naming it.
leftovers: ## Fail if any Chromium process or profile directory cua launched is still there
	@processes=$$(for cmdline in $$(grep -lzE -- '--user-data-dir=[^ ]*/cua-chromium-' /proc/[0-9]*/cmdline 2>/dev/null); do \
		dir=$${cmdline%/cmdline}; [ "$$(stat -c %u "$$dir" 2>/dev/null)" = "$$(id -u)" ] && echo "$${dir#/proc/}"; done); \
	profiles=$$(find "$${TMPDIR:-/tmp}" -maxdepth 1 -name 'cua-chromium-*' -user "$$(id -u)" 2>/dev/null || true); \
	if [ -n "$$processes$$profiles" ]; then \
		echo "left behind: Chromium processes [$$(echo $$processes)], profiles [$$(echo $$profiles)]" >&2; exit 1; \
	fi; \
	echo "leftovers: 0 Chromium processes, 0 profile directories"

soak: deps ## Long soaks: the crash harness with 300 kills (CUA_CRASH_KILLS), figures printed and kept in evidence/soak-crash.txt
	@mkdir -p evidence
	set -o pipefail; CUA_CRASH_KILLS=$${CUA_CRASH_KILLS:-300} $(CARGO) test --test it crash:: -- --nocapture 2>&1 | tee evidence/soak-crash.txt
	@$(MAKE) --no-print-directory leftovers

bench: deps deps-node conformance-up postgres-up ## Benchmarks: figures and ratios printed side by side, never asserted (the conformance apps and PostgreSQL run meanwhile)
	@trap 'conformance/apps.sh down; scripts/postgres.sh down' EXIT; \
	$(CARGO) bench -p cua-replay --bench replay && \
	$(CARGO) bench -p cua --bench queue && \
	$(CARGO) bench -p cua-chromium --bench driver && \
	$(CARGO) bench -p cua-target --bench resolve && \
	$(CARGO) bench -p cua-catalog --bench search && \
	$(CARGO) bench -p cua-evidence --bench intent

evidence: build deps-node conformance-up ## Regenerate evidence/ from real runs
	@mkdir -p evidence
	set -o pipefail; $(CUA) demo | tee evidence/demo-transcript.txt
	scripts/screens.sh $(CUA)
	scripts/mistakes.sh $(CUA) > evidence/mistakes.md
	set -o pipefail; $(CARGO) bench -p cua-replay --bench replay | tee evidence/bench-replay.txt
	set -o pipefail; $(CARGO) bench -p cua-chromium --bench driver | tee evidence/bench-driver.txt
	set -o pipefail; $(CARGO) bench -p cua-target --bench resolve | tee evidence/bench-resolve.txt
	set -o pipefail; $(CARGO) bench -p cua-catalog --bench search | tee evidence/bench-search.txt
	set -o pipefail; $(CARGO) bench -p cua-evidence --bench intent | tee evidence/bench-intent.txt
	CUA_SECRET_COREBANK_OPERATOR_ID=teller01 CUA_SECRET_COREBANK_OPERATOR_PASSWORD=not-a-real-password \
		$(CUA) eval --out evidence/evals
	@# Hostile suites refuse by design, so their verdict is not "sound"; what must hold is that
	@# every suite reported and none answered wrong.
	-CUA_SECRET_COREBANK_OPERATOR_ID=teller01 CUA_SECRET_COREBANK_OPERATOR_PASSWORD=not-a-real-password \
		$(CUA) eval evals/hostile/*.yaml --out evidence/hostile --runs-dir evidence/eval-runs
	test $$(ls evidence/hostile/hostile_*.evaluation.json | wc -l) -eq $$(ls evals/hostile/*.yaml | wc -l)
	! grep -l '"wrong_actions": *[1-9]' evidence/hostile/hostile_*.json
	@conformance/apps.sh down
	@$(MAKE) --no-print-directory leftovers

clean: ## Remove build output
	$(CARGO) clean
