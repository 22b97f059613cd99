"""PURE the Deployment controller's arithmetic: which pods to create and delete for one Deployment.

A RollingUpdate as the operator renders it: maxSurge 1 and maxUnavailable 0 (at most one pod above the desired
count, and an old pod goes only once enough new ones are ready to keep the ready count at the desired count),
or maxSurge 0 and maxUnavailable 1 (an old pod goes first, and its replacement takes its place). Scaling up
creates pods of the current template; scaling down removes not-ready pods first.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass


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


def plan(
    desired: int, template_hash: str, pods: Sequence[PodView], max_surge: int = 1, max_unavailable: int = 0
) -> Plan:
    new = [p for p in pods if p.config_hash == template_hash]
    old = [p for p in pods if p.config_hash != template_hash]
    ready = sum(p.ready for p in pods)
    delete: list[str] = []
    # Old pods: not-ready ones cost nothing; a ready one goes only while the ready count stays at or above
    # the desired count less maxUnavailable, or while there are more pods than the surge allows.
    for pod in _removal_order(old):
        if not pod.ready:
            delete.append(pod.name)
        elif ready - 1 >= desired - max_unavailable or len(pods) - len(delete) > desired + max_surge:
            delete.append(pod.name)
            ready -= 1
    if not old and len(new) > desired:
        delete += [p.name for p in _removal_order(new)[: len(new) - desired]]
    create = max(0, min(desired - len(new), desired + max_surge - (len(pods) - len(delete))))
    return Plan(create=create, delete=tuple(delete))


def _removal_order(pods: Sequence[PodView]) -> list[PodView]:
    """Not ready first, then the youngest (as the ReplicaSet controller ranks pods to delete)."""
    return sorted(pods, key=lambda p: (p.ready, -p.created))
