"""Names shared by the API, the operator and the runtime."""

from __future__ import annotations

import re

GROUP = "specfleet.dev"
VERSION = "v1alpha1"
API_VERSION = f"{GROUP}/{VERSION}"

SDD_KIND = "SpecDecodeDeployment"
SDD_PLURAL = "specdecodedeployments"
SDD_SINGULAR = "specdecodedeployment"
SDD_SHORT_NAMES = ["sdd"]

POLICY_KIND = "SpeculationPolicy"
POLICY_PLURAL = "speculationpolicies"
POLICY_SINGULAR = "speculationpolicy"
POLICY_SHORT_NAMES = ["specpol"]

MAX_K = 16

# Labels and annotations the operator puts on what it renders.
LABEL_NAME = "app.kubernetes.io/name"
LABEL_INSTANCE = "app.kubernetes.io/instance"
LABEL_COMPONENT = "app.kubernetes.io/component"
LABEL_MANAGED_BY = "app.kubernetes.io/managed-by"
LABEL_PART_OF = "app.kubernetes.io/part-of"
LABEL_DEPLOYMENT = f"{GROUP}/deployment"
LABEL_CONFIG_HASH = f"{GROUP}/config-hash"
ANNOTATION_CONFIG_HASH = f"{GROUP}/config-hash"
ANNOTATION_SPEC_CONFIG = f"{GROUP}/speculative-config"
ANNOTATION_PAUSED = f"{GROUP}/paused"
# On a pod: the port serving /metrics when it is not the container port named `http` (local fleets).
ANNOTATION_METRICS_PORT = f"{GROUP}/metrics-port"
MANAGER = "specfleet"

# Engine flags the operator renders itself; users may not override them through extraArgs.
MANAGED_ENGINE_FLAGS = (
    "--model",
    "--served-model-name",
    "--tensor-parallel-size",
    "--data-parallel-size",
    "--speculative-config",
    "--host",
    "--port",
)
_SHORT_ALIASES = ("-tp", "-dp", "-sc")


def _flag_alternatives() -> str:
    names = [flag.removeprefix("--").replace("-", "[-_]") for flag in MANAGED_ENGINE_FLAGS]
    return "|".join(names)


# One regex, used both by the CRD's CEL rule and by the Python validator, so they cannot disagree.
MANAGED_FLAG_CEL_REGEX = r"^(--(" + _flag_alternatives() + r")|" + "|".join(_SHORT_ALIASES) + r")(=.*)?$"
_MANAGED_FLAG_RE = re.compile(MANAGED_FLAG_CEL_REGEX)


def managed_flag_in(arg: str) -> str | None:
    """The managed flag an engine argument would set, or None."""
    match = _MANAGED_FLAG_RE.match(arg)
    return match.group(1) if match else None
