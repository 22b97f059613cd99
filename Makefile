# The two commands the README promises on a fresh machine, and the checks CI runs.
.PHONY: deps run test lint ci

deps:
	bash scripts/install-deps.sh

run: deps
	specfleet run

test: deps
	python3 -m pytest

lint:
	ruff check .
	ruff format --check .
	mypy
	lint-imports
	specfleet crds --check crds

ci: deps lint
	SPECFLEET_REQUIRE_ALL=1 python3 -m pytest -p no:cacheprovider
