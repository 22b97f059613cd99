"""Run the operator: Kopf with specfleet's handlers, in this thread or a background one."""

from __future__ import annotations

import asyncio
import errno
import logging
import random
import socket
import threading
import time

import kopf
import urllib3

from specfleet.operator.config import ConfigError, OperatorConfig
from specfleet.operator.handlers.context import OperatorContext
from specfleet.operator.handlers.registry import build_registry
from specfleet.operator.kubeapi import ApiError, KubeApi, load_client

LOG_FORMATS = {"plain": kopf.LogFormat.PLAIN, "full": kopf.LogFormat.FULL, "json": kopf.LogFormat.JSON}


def configure_logging(config: OperatorConfig) -> None:
    kopf.configure(verbose=config.verbose, log_format=LOG_FORMATS[config.log_format], log_refkey="object")


async def operate(
    config: OperatorConfig,
    stop_flag: threading.Event | asyncio.Event | None = None,
    ready_flag: threading.Event | asyncio.Event | None = None,
) -> None:
    """The operator's main coroutine; returns when `stop_flag` is set.

    A mistake in what it was told (a bad file, an unreachable cluster, a port in use) raises ConfigError before
    Kopf starts.
    """
    ctx = OperatorContext.create(config, KubeApi(load_client(config.kubeconfig)))
    if config.health_port:
        check_port("--health-port", config.health_port)  # Kopf would log a traceback and carry on without it
    if config.metrics_port:
        try:
            ctx.metrics.serve(config.metrics_port)
        except OSError as error:
            raise port_error("--metrics-port", config.metrics_port, error) from None
    try:
        await check_cluster(ctx.api)
        await _kopf(config, ctx, stop_flag, ready_flag)
    finally:
        ctx.metrics.close()


async def _kopf(
    config: OperatorConfig,
    ctx: OperatorContext,
    stop_flag: threading.Event | asyncio.Event | None,
    ready_flag: threading.Event | asyncio.Event | None,
) -> None:
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


CLUSTER_CHECK_SECONDS = 10.0


def check_port(flag: str, port: int) -> None:
    """Bind the port once as Kopf's server will (every address, reusing one in TIME_WAIT), and let it go."""
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as probe:
        probe.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        try:
            probe.bind(("0.0.0.0", port))
        except OSError as error:
            raise port_error(flag, port, error) from None


def port_error(flag: str, port: int, error: OSError) -> ConfigError:
    reason = {errno.EADDRINUSE: "the port is in use", errno.EACCES: "not allowed to listen on it"}.get(
        error.errno or 0, "cannot listen on it"
    )
    return ConfigError(f"{flag} {port}: {reason}; pick another port, or 0 for none")


async def check_cluster(api: KubeApi) -> None:
    """One request before Kopf starts, so that a cluster that cannot be reached or refuses the credentials is
    one line now rather than minutes of Kopf's retries ending in a traceback. (In a pod, a restart retries.)"""
    host = api.configuration.host
    try:
        await api.version(CLUSTER_CHECK_SECONDS)
    except ApiError as error:
        refused = ": it refuses the operator's credentials" if error.status in (401, 403) else ""
        raise ConfigError(f"the cluster at {host} answered {error.status} {error.reason}{refused}") from None
    except (urllib3.exceptions.HTTPError, OSError) as error:
        raise ConfigError(f"cannot reach the cluster at {host}: {_cause(error)}") from None


def _cause(error: BaseException) -> str:
    """The words of the socket or TLS error under urllib3's wrappers ("Connection refused"), else their type."""
    seen: BaseException | None = error
    while seen is not None:
        if isinstance(seen, OSError) and seen.strerror:
            return str(seen.strerror)
        seen = getattr(seen, "reason", None) if isinstance(seen, urllib3.exceptions.MaxRetryError) else seen.__cause__
    return type(error).__name__


THREAD_NAME = "specfleet-operator"


class _ThreadIgnoresSignals(logging.Filter):
    """Kopf warns that an operator in a thread ignores OS signals; a BackgroundOperator means it (its stop flag
    stops it), so that one warning is dropped for its threads, and nothing else."""

    def filter(self, record: logging.LogRecord) -> bool:
        return not (record.threadName == THREAD_NAME and record.getMessage().startswith("OS signals are ignored"))


THREAD_IGNORES_SIGNALS = _ThreadIgnoresSignals()


class BackgroundOperator:
    """The operator in its own thread and event loop (tests, the embedded default)."""

    def __init__(self, config: OperatorConfig) -> None:
        self.config = config
        self.stop_flag = threading.Event()
        self.ready_flag = threading.Event()
        self._thread = threading.Thread(target=self._run, name=THREAD_NAME, daemon=True)
        self._error: BaseException | None = None
        logging.getLogger("kopf._core.reactor.running").addFilter(THREAD_IGNORES_SIGNALS)  # once: the same object

    def _run(self) -> None:
        try:
            asyncio.run(operate(self.config, self.stop_flag, self.ready_flag))
        except BaseException as error:
            self._error = error  # before it is ready, start() raises it in the caller's thread
            if self.ready_flag.is_set():
                raise

    def start(self, timeout: float = 30.0) -> BackgroundOperator:
        """Start and wait until Kopf is ready; an error of the start (ConfigError: a port in use) is raised here."""
        self._thread.start()
        deadline = time.monotonic() + timeout
        while not self.ready_flag.wait(0.05):
            if self._error is not None:
                raise self._error
            if time.monotonic() > deadline:
                raise TimeoutError("the operator did not become ready")
        return self

    def stop(self, timeout: float = 30.0) -> None:
        self.stop_flag.set()
        self._thread.join(timeout)

    def __enter__(self) -> BackgroundOperator:
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.stop()
