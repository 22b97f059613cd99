"""PURE the Deployment controller's arithmetic: which pods to create and delete for one Deployment.

A RollingUpdate with maxSurge 1 and maxUnavailable 0 (what the operator renders): at most one pod above the
desired count, and an old pod goes only once enough new ones are ready to keep the ready count at the
desired count. Scaling up creates pods of the current template; scaling down removes not-ready pods first.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

MAX_SURGE = 1


@dataclass(frozen=True)
class PodView:
    name: str
    config_hash: str
    ready: bool
    created: float


@dataclass(frozen=True)
class Plan:
    create: int  # new pods of the current template
    delete: tuple[str, ...]


def plan(desired: int, template_hash: str, pods: Sequence[PodView]) -> Plan:
    new = [p for p in pods if p.config_hash == template_hash]
    old = [p for p in pods if p.config_hash != template_hash]
    ready = sum(p.ready for p in pods)
    create = max(0, min(desired - len(new), desired + MAX_SURGE - len(pods)))
    delete: list[str] = []
    # Old pods: not-ready ones cost nothing; a ready one goes only while the ready count stays >= desired.
    for pod in _removal_order(old):
        if not pod.ready:
            delete.append(pod.name)
        elif ready - 1 >= desired or len(new) + len(old) - len(delete) > desired + MAX_SURGE:
            delete.append(pod.name)
            ready -= 1
    if not old and len(new) > desired:
        delete += [p.name for p in _removal_order(new)[: len(new) - desired]]
    return Plan(create=create, delete=tuple(delete))


def _removal_order(pods: Sequence[PodView]) -> list[PodView]:
    """Not ready first, then the youngest (as the ReplicaSet controller ranks pods to delete)."""
    return sorted(pods, key=lambda p: (p.ready, -p.created))
