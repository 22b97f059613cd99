#!/usr/bin/env bash
# The one step that needs root: the Debian packages the tests use. Everything else (scripts/install-deps.sh)
# goes into the project's own virtual environment, .venv, and never touches the system's Python or /usr.
#   prometheus      the real Prometheus server the signal tests start on a loopback port (its service is not
#                   started, and need not be)
#   python3-venv    `python3 -m venv` on Debian and Ubuntu, whose Python is externally managed (PEP 668)
# Run it as root, or through sudo: `sudo scripts/install-system-deps.sh`. Idempotent.
set -euo pipefail

missing=()
command -v prometheus >/dev/null 2>&1 || missing+=(prometheus)
python3 -c 'import ensurepip, venv' >/dev/null 2>&1 || missing+=(python3-venv)
if ((${#missing[@]} == 0)); then
    echo "== system packages present (prometheus, python3-venv)"
    exit 0
fi
if [[ "$(id -u)" != 0 ]]; then
    echo "scripts/install-system-deps.sh: needs root to install ${missing[*]}: run it with sudo" >&2
    exit 1
fi
echo "== installing Debian packages: ${missing[*]}"
export DEBIAN_FRONTEND=noninteractive
apt-get update -qq
apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null
