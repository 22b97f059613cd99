"""What every handler shares: the API client and the operator's configuration (kept in Kopf's memo)."""

from __future__ import annotations

import asyncio
from dataclasses import dataclass, field
from datetime import UTC, datetime

from specfleet.operator.config import OperatorConfig
from specfleet.operator.handlers.live import LiveTables
from specfleet.operator.handlers.metrics import OperatorMetrics
from specfleet.operator.handlers.signals_hub import SignalsHub
from specfleet.operator.kubeapi import KubeApi


@dataclass
class OperatorContext:
    config: OperatorConfig
    api: KubeApi
    signals: SignalsHub
    metrics: OperatorMetrics
    # Monotonic time of each fleet's last evaluation: a policy's interval may be longer than the timer's.
    evaluated_at: dict[tuple[str, str], float] = field(default_factory=dict)
    # Each fleet's resolved policy interval, learned at its last evaluation.
    intervals: dict[tuple[str, str], float] = field(default_factory=dict)
    # One writer at a time per fleet (see handlers/converge.py).
    locks: dict[tuple[str, str], asyncio.Lock] = field(default_factory=dict)
    # Control tokens read back and per-pod push failures of the live tables (see handlers/live.py).
    live: LiveTables = field(default_factory=LiveTables)

    def lock(self, key: tuple[str, str]) -> asyncio.Lock:
        return self.locks.setdefault(key, asyncio.Lock())

    @classmethod
    def create(cls, config: OperatorConfig, api: KubeApi) -> OperatorContext:
        signals, metrics = SignalsHub(config, api), OperatorMetrics()
        metrics.queries_in_flight.set_function(signals.queries_in_flight)
        return cls(config=config, api=api, signals=signals, metrics=metrics, live=LiveTables(config.operator_namespace))


def now_iso() -> str:
    return datetime.now(UTC).strftime("%Y-%m-%dT%H:%M:%SZ")
