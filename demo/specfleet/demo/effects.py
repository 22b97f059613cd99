"""PURE what each of the operator's changes bought in a demo run: the live fleet's TPOT from the change until the
next one, against keeping the configuration the change replaced, simulated on the same stretch of the trace.

The replaced configuration is the one that served most of the live requests arriving just before the change
(what the pods really ran, not what the decision said); a table is told apart by its rows. A configuration
without a simulated baseline is compared with nothing.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Mapping, Sequence
from dataclasses import dataclass

import numpy as np

from specfleet.demo.engine import FloatArray
from specfleet.demo.fleet import Completed
from specfleet.demo.timeline import DecisionRecord

# A simulated run's requests: arrival times and TPOT (NaN where unfinished), in the trace's seconds.
Outcomes = tuple[FloatArray, FloatArray]


@dataclass(frozen=True)
class ChangeEffect:
    time: float
    until: float
    action: str
    reason: str
    replaced: str | None  # the configuration it replaced; None before any request was served
    live_tpot: float | None  # mean TPOT of the live requests that arrived in [time, until)
    kept_tpot: float | None  # the replaced configuration simulated over the same arrivals; None: no baseline

    @property
    def bought(self) -> float | None:
        """Relative TPOT reduction against keeping the replaced configuration (positive: the change paid)."""
        if self.live_tpot is None or not self.kept_tpot:
            return None
        return 1.0 - self.live_tpot / self.kept_tpot


def change_effects(
    changes: Sequence[DecisionRecord],
    completed: Sequence[Completed],
    baselines: Mapping[str, Outcomes],
    duration: float,
) -> list[ChangeEffect]:
    effects = []
    starts = [c.time for c in changes]
    for i, change in enumerate(changes):
        until = starts[i + 1] if i + 1 < len(changes) else duration
        before = starts[i - 1] if i > 0 else 0.0
        replaced = _served_most(completed, before, change.time)
        kept = baselines.get(replaced) if replaced is not None else None
        effects.append(
            ChangeEffect(
                change.time, until, change.action, change.reason, replaced,
                _mean([c.finished.tpot for c in completed if change.time <= c.finished.arrival < until]),
                None if kept is None else _window_mean(kept, change.time, until),
            )
        )  # fmt: skip
    return effects


def _served_most(completed: Sequence[Completed], start: float, end: float) -> str | None:
    served = Counter(c.config for c in completed if start <= c.finished.arrival < end)
    return served.most_common(1)[0][0] if served else None


def _window_mean(outcomes: Outcomes, start: float, end: float) -> float | None:
    arrival, tpot = outcomes
    inside = tpot[(arrival >= start) & (arrival < end)]
    inside = inside[~np.isnan(inside)]
    return float(inside.mean()) if inside.size else None


def _mean(values: Sequence[float]) -> float | None:
    return float(np.mean(values)) if values else None
