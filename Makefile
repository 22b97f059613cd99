# The two commands the README promises on a fresh machine (`make run`, `make test`), and the checks CI runs.
# Everything lives in the project's virtual environment, .venv, made once from $(PYTHON) and reused: a target
# reinstalls only when requirements.lock, a pyproject.toml or an install script is newer than the last install.
.PHONY: deps system-deps run test lint lock ci

PYTHON ?= python3
VENV ?= .venv
BIN := $(VENV)/bin
STAMP := $(VENV)/.installed
# helm and kubectl are in .venv/bin too; the tests and the demo find them on PATH.
export PATH := $(abspath $(BIN)):$(PATH)

deps: $(STAMP)

$(STAMP): requirements.lock $(wildcard */pyproject.toml) scripts/install-deps.sh scripts/install-k8s-binaries.sh
	PYTHON="$(PYTHON)" VENV="$(VENV)" bash scripts/install-deps.sh
	touch $@

# The one root step (Debian's prometheus and python3-venv): `sudo make system-deps`.
system-deps:
	bash scripts/install-system-deps.sh

run: deps
	$(BIN)/specfleet run

test: deps
	$(BIN)/python -m pytest

lint: deps
	$(BIN)/ruff check .
	$(BIN)/ruff format --check .
	$(BIN)/mypy
	$(BIN)/lint-imports
	$(BIN)/specfleet crds --check crds --check charts/specfleet/crds/specfleet
	$(BIN)/python -m scripts.chart_readme --check

lock:
	PYTHON="$(PYTHON)" bash scripts/lock.sh

# The README's test command, with every optional dependency required (a skipped test fails the run).
ci: system-deps deps lint
	SPECFLEET_REQUIRE_ALL=1 $(MAKE) test
