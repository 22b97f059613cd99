"""PURE what the demo records while it runs: one point per deployment per sample, and every decision once.

Everything comes from what a user could read too: the SpecDecodeDeployment's status (speculation, signals,
decisions) plus the load the trace offered. Times are seconds since traffic started.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from datetime import datetime
from typing import Any


@dataclass(frozen=True)
class Point:
    time: float
    deployment: str
    offered_qps: float
    enabled: bool
    k: int
    ready: int
    desired: int
    acceptance_length: float | None
    tpot_seconds: float | None
    concurrency: float | None

    @property
    def mode(self) -> str:
        return f"k={self.k}" if self.enabled else "off"


@dataclass(frozen=True)
class DecisionRecord:
    time: float
    deployment: str
    action: str
    reason: str
    applied: bool


def epoch_of(stamp: str) -> float:
    return datetime.fromisoformat(stamp.replace("Z", "+00:00")).timestamp()


@dataclass
class Timeline:
    epoch: float  # wall-clock time (epoch seconds) at which traffic started
    points: list[Point] = field(default_factory=list)
    decisions: list[DecisionRecord] = field(default_factory=list)
    _seen: set[tuple[str, str, str, str]] = field(default_factory=set)

    def record(self, now: float, sdd: dict[str, Any], offered_qps: float) -> None:
        """One sample of a SpecDecodeDeployment at `now` (seconds since traffic started)."""
        name = sdd["metadata"]["name"]
        status = sdd.get("status") or {}
        speculation = status.get("speculation") or {}
        signals = status.get("signals") or {}
        self.points.append(
            Point(
                time=now,
                deployment=name,
                offered_qps=offered_qps,
                enabled=bool(speculation.get("enabled")),
                k=int(speculation.get("k") or 0),
                ready=int(status.get("readyReplicas", 0)),
                desired=int(sdd["spec"].get("replicas", 1)),
                acceptance_length=signals.get("acceptanceLength"),
                tpot_seconds=signals.get("tpotSeconds"),
                concurrency=signals.get("concurrencyPerReplica"),
            )
        )
        for decision in status.get("decisions", []):
            key = (name, decision["time"], decision["action"], decision["reason"])
            if key in self._seen:
                continue
            self._seen.add(key)
            when = epoch_of(decision["time"]) - self.epoch
            self.decisions.append(
                DecisionRecord(when, name, decision["action"], decision["reason"], decision.get("applied", True))
            )

    def changes(self, deployment: str) -> list[DecisionRecord]:
        """The applied decisions that changed what runs (not holds), in time order."""
        return sorted(
            (d for d in self.decisions if d.deployment == deployment and d.action != "hold" and d.applied),
            key=lambda d: d.time,
        )

    def latest(self, deployment: str) -> Point | None:
        return next((p for p in reversed(self.points) if p.deployment == deployment), None)
