"""The engine flags the operator and the runtime agree on: the largest k, and the vLLM flags only they set."""

from __future__ import annotations

MAX_K = 16

# Engine settings the operator renders (or the runtime adds) and users may not reach through extraArgs, as
# vLLM's long flags: the model and its name, parallelism, context length, speculation, where the server
# listens (--uds would replace --host/--port), the runtime's drain middleware and live-table scheduler, and
# --config (a YAML file vLLM reads further arguments from). The one list: the API's rule
# (extra_args.py) and the runtime's re-check with vLLM's parser (vllm_check.py) derive from it.
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
