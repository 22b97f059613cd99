"""Fold one round of live-table pushes into the fleet's status: revision, pods applied, the Event. Pure.

A live table is the batch-size→k table in `status.speculation.schedule` of a fleet whose pods take it without a
restart (`render.engine.runs_live_table`). Each revision is one table; a new one starts when the table changes
under the same restart-bound configuration (a restart-bound change starts again at 1).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field

from specfleet.operator.api.types import LiveTableStatus, SpeculationState
from specfleet.operator.status.evaluation import Note
from specfleet.runtime.engine_args import schedule_ranges
from specfleet.runtime.table_control import LiveTable

Table = list[list[int]]


@dataclass(frozen=True)
class PodPush:
    """What one Ready pod of the current configuration answered this round."""

    pod: str
    applied: bool  # runs the desired table now (already did, or took it this round)
    error: str | None = None  # why not, when not: "403 the token is not ...", "timeout"


@dataclass
class LiveFold:
    live: LiveTableStatus
    events: list[Note] = field(default_factory=list)
    completed: bool = False  # this round brought the revision to every Ready pod


def desired_table(speculation: SpeculationState) -> Table:
    """The policy's table as vLLM's ranges, the form the control endpoint takes."""
    rows = [(row.max_batch_size, row.k) for row in speculation.schedule or ()]
    return schedule_ranges(rows)


def revision_of(previous: LiveTableStatus | None, table: Table, now: str) -> LiveTableStatus:
    """The revision the pods should run: the previous one if its table is still the policy's, else the next."""
    if previous is not None and previous.table == table:
        return previous
    number = previous.revision + 1 if previous is not None else 1
    return LiveTableStatus(revision=number, table=table, applied_pods=0, ready_pods=0, since=now)


def fold_pushes(
    revision: LiveTableStatus, pushes: Sequence[PodPush], replicas: int, now: str, elapsed: str = ""
) -> LiveFold:
    """The revision's status after a round over every Ready pod, and the Event once all `replicas` run it."""
    applied = sum(push.applied for push in pushes)
    failed = [f"{push.pod}: {push.error}" for push in pushes if not push.applied]
    message = "; ".join(failed) if failed else None
    live = revision.model_copy(update={"applied_pods": applied, "ready_pods": len(pushes), "message": message})
    if len(pushes) < max(replicas, 1) or failed or revision.applied_at is not None:
        return LiveFold(live)
    live = live.model_copy(update={"applied_at": now})
    label = LiveTable(revision.revision, tuple((first, last, k) for first, last, k in revision.table)).label()
    text = f"table r{revision.revision} {label} applied live to {applied}/{len(pushes)} pods{elapsed}"
    return LiveFold(live, [Note("Normal", "TableAppliedLive", text)], completed=True)


def restart_note(pod: str, failures: int, error: str | None) -> Note:
    return Note(
        "Warning",
        "TableNotApplied",
        f"pod {pod} refused the live table {failures} times in a row ({error}); restarting it",
    )
