"""Run the operator: Kopf with specfleet's handlers, in this thread or a background one."""

from __future__ import annotations

import asyncio
import random
import threading

import kopf

from specfleet.operator.config import OperatorConfig
from specfleet.operator.handlers.context import OperatorContext
from specfleet.operator.handlers.registry import build_registry
from specfleet.operator.kubeapi import KubeApi, load_client

LOG_FORMATS = {"plain": kopf.LogFormat.PLAIN, "full": kopf.LogFormat.FULL, "json": kopf.LogFormat.JSON}


def configure_logging(config: OperatorConfig) -> None:
    kopf.configure(verbose=config.verbose, log_format=LOG_FORMATS[config.log_format], log_refkey="object")


async def operate(
    config: OperatorConfig,
    stop_flag: threading.Event | asyncio.Event | None = None,
    ready_flag: threading.Event | asyncio.Event | None = None,
) -> None:
    """The operator's main coroutine; returns when `stop_flag` is set."""
    ctx = OperatorContext.create(config, KubeApi(load_client(config.kubeconfig)))
    if config.metrics_port:
        ctx.metrics.serve(config.metrics_port)
    await kopf.operator(
        registry=build_registry(config),
        memo=kopf.Memo(ctx=ctx),
        clusterwide=not config.namespaces,
        namespaces=list(config.namespaces),
        standalone=config.standalone,
        peering_name=None if config.standalone else config.peering,
        priority=config.priority if config.priority is not None else random.randint(1, 2**31 - 1),
        liveness_endpoint=f"http://0.0.0.0:{config.health_port}/healthz" if config.health_port else None,
        stop_flag=stop_flag,
        ready_flag=ready_flag,
    )


class BackgroundOperator:
    """The operator in its own thread and event loop (tests, the embedded default)."""

    def __init__(self, config: OperatorConfig) -> None:
        self.config = config
        self.stop_flag = threading.Event()
        self.ready_flag = threading.Event()
        self._thread = threading.Thread(target=self._run, name="specfleet-operator", daemon=True)

    def _run(self) -> None:
        asyncio.run(operate(self.config, self.stop_flag, self.ready_flag))

    def start(self, timeout: float = 30.0) -> BackgroundOperator:
        self._thread.start()
        if not self.ready_flag.wait(timeout):
            raise TimeoutError("the operator did not become ready")
        return self

    def stop(self, timeout: float = 30.0) -> None:
        self.stop_flag.set()
        self._thread.join(timeout)

    def __enter__(self) -> BackgroundOperator:
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.stop()
