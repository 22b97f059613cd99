"""Names shared by the API, the operator and the runtime."""

from __future__ import annotations

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
# On a pod: the port of its control endpoint (live tables) when it is not the container port named `health`.
ANNOTATION_CONTROL_PORT = f"{GROUP}/control-port"
MANAGER = "specfleet"

# Engine settings the operator renders (or the runtime adds) and users may not reach through extraArgs, as
# vLLM's long flags: the model and its name, parallelism, context length, speculation, where the server
# listens (--uds would replace --host/--port), the runtime's drain middleware and live-table scheduler, and
# --config (a YAML file vLLM reads further arguments from). The one list: the API's rule
# (operator/api/extra_args.py) and the runtime's re-check with vLLM's parser (runtime/vllm_check.py) derive from it.
MANAGED_ENGINE_FLAGS = (
    "--model",
    "--served-model-name",
    "--tensor-parallel-size",
    "--data-parallel-size",
    "--max-model-len",
    "--speculative-config",
    "--host",
    "--port",
    "--uds",
    "--middleware",
    "--scheduler-cls",
    "--config",
)
# vLLM's short aliases of managed flags, so a refusal can name what they reach.
MANAGED_SHORT_ALIASES = {"-tp": "--tensor-parallel-size", "-dp": "--data-parallel-size", "-sc": "--speculative-config"}
