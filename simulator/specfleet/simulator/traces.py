"""PURE load traces: fleet-wide QPS and prompt-class mix over time.

A trace is piecewise constant on a grid (one point a minute). Built-in shapes: constant, diurnal, ramp,
burst, step, each optionally with a drifting class mix (English code by day, French chat at night). A recorded
trace is CSV text `time,qps[,<class>...]` (seconds, fleet-wide requests/s, class weights), parsed here from a
string so the CLI alone does the file reading.
"""

from __future__ import annotations

import csv
import io
from collections.abc import Callable
from dataclasses import dataclass

import numpy as np
from numpy.typing import NDArray

FloatArray = NDArray[np.float64]
HOUR = 3600.0
DAY = 24 * HOUR


@dataclass(frozen=True)
class Trace:
    """QPS and class mix on a time grid; the last point closes the trace."""

    name: str
    times: FloatArray  # seconds, ascending, times[0] == 0
    qps: FloatArray  # fleet-wide requests/s on [times[i], times[i+1])
    classes: tuple[str, ...]
    mix: FloatArray  # (len(times), len(classes)) weights, rows sum to 1

    @property
    def duration(self) -> float:
        return float(self.times[-1])

    def qps_at(self, t: FloatArray | float) -> FloatArray:
        index = np.clip(np.searchsorted(self.times, t, side="right") - 1, 0, len(self.times) - 1)
        return np.asarray(self.qps[index], float)


ShapeFn = Callable[[FloatArray], FloatArray]  # time (s) -> relative load in [0, 1]


def _grid(duration: float, step: float) -> FloatArray:
    return np.append(np.arange(0.0, duration, step), duration)


def diurnal_shape(period: float = DAY) -> ShapeFn:
    """One cycle per `period`: trough at 4/24 of it (04:00), peak at 16/24 (16:00)."""
    return lambda t: 0.5 - 0.5 * np.cos(2 * np.pi * (t / period - 4 / 24))


def ramp_shape(duration: float) -> ShapeFn:
    return lambda t: np.clip(t / duration, 0.0, 1.0)


def step_shape(at: float) -> ShapeFn:
    return lambda t: (t >= at).astype(float)


def burst_shape(every: float, length: float) -> ShapeFn:
    """Square bursts of `length` seconds every `every` seconds, the first after one period."""
    return lambda t: ((t % every) >= every - length).astype(float)


def constant_shape(t: FloatArray) -> FloatArray:
    return np.ones_like(t)


def drift_mix(
    t: FloatArray, day_class: int, night_class: int, n_classes: int, period: float = DAY, floor: float = 0.1
) -> FloatArray:
    """Mix that follows the daylight: `day_class` dominates at 14/24 of the period, `night_class` at 2/24."""
    day = 0.5 - 0.5 * np.cos(2 * np.pi * (t / period - 2 / 24))
    mix = np.zeros((len(t), n_classes))
    mix[:, day_class] = floor + (1 - 2 * floor) * day
    mix[:, night_class] = floor + (1 - 2 * floor) * (1 - day)
    return mix


def shaped_trace(
    name: str,
    shape: ShapeFn,
    low_qps: float,
    high_qps: float,
    duration: float,
    classes: tuple[str, ...],
    mix: FloatArray | None = None,
    step: float = 60.0,
) -> Trace:
    """QPS = low + (high - low) * shape(t) on a grid; a constant mix (first class) unless given."""
    times = _grid(duration, step)
    qps = low_qps + (high_qps - low_qps) * shape(times)
    if mix is None:
        mix = np.zeros((len(times), len(classes)))
        mix[:, 0] = 1.0
    return Trace(name=name, times=times, qps=qps, classes=classes, mix=mix)


BUILTIN_TRACES = ("constant", "diurnal", "ramp", "burst", "step", "drift")


def builtin_trace(
    name: str,
    peak_qps: float,
    hours: float,
    classes: tuple[str, ...] = ("sharegpt",),
    weights: tuple[float, ...] | None = None,
    low_fraction: float = 0.1,
) -> Trace:
    """A named shape between `low_fraction * peak_qps` and `peak_qps` over `hours`, a constant class mix
    (`weights`, default all traffic in classes[0]).

    `diurnal` is one day compressed into the trace; `drift` is that day with the mix moving from classes[0]
    by day to classes[1] by night.
    """
    duration = hours * HOUR
    low = low_fraction * peak_qps
    shapes: dict[str, ShapeFn] = {
        "constant": constant_shape,
        "diurnal": diurnal_shape(duration),
        "drift": diurnal_shape(duration),
        "ramp": ramp_shape(duration),
        "burst": burst_shape(every=min(2 * HOUR, duration / 2), length=min(20 * 60.0, duration / 8)),
        "step": step_shape(duration / 2),
    }
    if name not in shapes:
        raise ValueError(f"unknown trace {name!r}: one of {', '.join(BUILTIN_TRACES)} or a CSV file")
    grid = _grid(duration, 60.0)
    if name == "drift":
        if len(classes) < 2:
            raise ValueError("the drift trace needs two classes: day, night")
        mix = drift_mix(grid, 0, 1, len(classes), period=duration)
    else:
        w = np.asarray(weights if weights is not None else (1.0,) + (0.0,) * (len(classes) - 1), float)
        if len(w) != len(classes) or np.any(w < 0) or w.sum() <= 0:
            raise ValueError("weights: one non-negative weight per class, with a positive sum")
        mix = np.broadcast_to(w / w.sum(), (len(grid), len(classes))).copy()
    return shaped_trace(name, shapes[name], low, peak_qps, duration, classes, mix)


def parse_trace_csv(text: str, name: str = "csv", default_class: str = "sharegpt") -> Trace:
    """A recorded trace: header `time,qps[,class...]`, one row per point, time in seconds from 0.

    The last row closes the trace (its qps applies to nothing after it). Without class columns every request
    is `default_class`.
    """
    rows = list(csv.reader(io.StringIO(text.strip())))
    header = [h.strip() for h in rows[0]]
    if header[:2] != ["time", "qps"] or len(rows) < 3:
        raise ValueError("a trace CSV needs a `time,qps[,class...]` header and at least two rows")
    data = np.array([[float(x) for x in row] for row in rows[1:] if row], float)
    times = data[:, 0] - data[0, 0]
    if np.any(np.diff(times) <= 0):
        raise ValueError("trace times must be strictly increasing")
    classes = tuple(header[2:]) or (default_class,)
    mix = data[:, 2:] if header[2:] else np.ones((len(times), 1))
    if np.any(mix < 0) or np.any(mix.sum(axis=1) <= 0):
        raise ValueError("class weights must be non-negative with a positive sum on every row")
    mix = mix / mix.sum(axis=1, keepdims=True)
    return Trace(name=name, times=times, qps=np.maximum(data[:, 1], 0.0), classes=classes, mix=mix)


def scaled(trace: Trace, factor: float) -> Trace:
    """The same trace at `factor` times the load."""
    return Trace(trace.name, trace.times, trace.qps * factor, trace.classes, trace.mix)
