"""PURE the demo's load: traces on the run's own clock, arrivals drawn from them, and a Service's routing.

Time: the engines run 1:1 with the wall clock (one simulated second per wall second), so TPOT, QPS and every
window the operator uses are real seconds. What is compressed is the trace: the `day` trace is a 24-hour
diurnal shape played over the run's duration (86400 / duration trace-seconds per wall second), starting and
ending at the night-time trough so that the peak, in the middle, crosses the crossover and the load falls
back below it before the end.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Protocol

import numpy as np

from specfleet.simulator.traces import Trace, diurnal_shape, shaped_trace
from specfleet.simulator.workload import CLASSES, PromptClass

TRACES = ("day", "plateau", "constant")
# The diurnal shape's trough is at 4/24 of its period; start the day there.
TROUGH = 4 / 24
STEP_SECONDS = 1.0


def demo_trace(name: str, peak_qps: float, duration: float, klass: str, low_fraction: float = 0.1) -> Trace:
    """`day`: a compressed day, trough to trough; `plateau`: low, peak through the middle third, low;
    `constant`: the peak throughout."""
    low = low_fraction * peak_qps
    if name == "day":
        day = diurnal_shape(duration)
        return shaped_trace(
            name, lambda t: day(t + TROUGH * duration), low, peak_qps, duration, (klass,), step=STEP_SECONDS
        )
    if name == "plateau":
        third = duration / 3
        return shaped_trace(
            name,
            lambda t: ((t >= third) & (t < 2 * third)).astype(float),
            low,
            peak_qps,
            duration,
            (klass,),
            step=STEP_SECONDS,
        )
    if name == "constant":
        return shaped_trace(name, np.ones_like, low, peak_qps, duration, (klass,), step=STEP_SECONDS)
    raise ValueError(f"unknown trace {name!r}: one of {', '.join(TRACES)} or a CSV file")


@dataclass(frozen=True)
class Arrival:
    time: float
    prompt_class: PromptClass
    prompt: int
    output: int


def arrivals(trace: Trace, start: float, end: float, rng: np.random.Generator, offset: float = 0.0) -> list[Arrival]:
    """Poisson arrivals on [start, end) of the trace at its rate and class mix at `start` (ticks are short),
    timed on a clock where the trace starts at `offset`."""
    if start >= trace.duration or end <= start:
        return []
    index = int(np.clip(np.searchsorted(trace.times, start, side="right") - 1, 0, len(trace.times) - 1))
    n = int(rng.poisson(float(trace.qps[index]) * (end - start)))
    times = np.sort(start + rng.random(n) * (end - start))
    names = rng.choice(len(trace.classes), size=n, p=trace.mix[index])
    result = []
    for time, which in zip(times, names, strict=True):
        klass = CLASSES[trace.classes[which]]
        prompt = int(klass.prompt.draw(1, rng)[0])
        output = int(klass.output.draw(1, rng)[0])
        result.append(Arrival(float(time) + offset, klass, prompt, output))
    return result


class Backend(Protocol):
    def submit(self, arrival: float, prompt_class: PromptClass, prompt: int, output: int) -> None: ...


class RoundRobin:
    """A Kubernetes Service spreading new requests over the ready pods."""

    def __init__(self) -> None:
        self._next = 0

    def route(self, requests: Sequence[Arrival], backends: Sequence[Backend]) -> int:
        """Hand each request to the next backend; the number dropped because none is ready."""
        if not backends:
            return len(requests)
        for request in requests:
            backend = backends[self._next % len(backends)]
            self._next += 1
            backend.submit(request.time, request.prompt_class, request.prompt, request.output)
        return 0
