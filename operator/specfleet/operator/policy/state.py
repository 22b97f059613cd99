"""The policy's memory between evaluations: a pure value that round-trips through a JSON-able dict.

It lives in the resource's status (`status.policyState`); `to_dict`/`from_dict` define the shape. Times are
seconds since the epoch (whatever clock the caller passes to `decide` as `now`).
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field, replace
from typing import Any

from specfleet.operator.policy.acceptance import AcceptanceMemory, Curve
from specfleet.operator.policy.calibration import Calibration
from specfleet.operator.policy.forecast import Forecast

# (max batch size, k) rows, ascending; k may be 0 (no drafting at that batch size).
Schedule = tuple[tuple[int, int], ...]
HOUR_S = 3600.0
DAY_S = 24 * HOUR_S
# Share of a peak's load the load must fall to between two peaks for them to count as two.
TROUGH_FRACTION = 0.5


@dataclass(frozen=True)
class SpecConfig:
    """The speculation configuration the fleet runs: what a restart-bound change changes."""

    enabled: bool
    k: int
    schedule: Schedule | None = None

    @classmethod
    def off(cls) -> SpecConfig:
        """Speculation disabled (k is 0 so that all disabled configurations compare equal)."""
        return cls(enabled=False, k=0)

    def describe(self) -> str:
        if not self.enabled:
            return "off"
        return f"k≤{self.k} by table" if self.schedule else f"k={self.k}"

    def k_at(self, batch: float) -> int:
        """Draft tokens per step at a concurrency: 0 when off, the table's row when there is one."""
        if not self.enabled:
            return 0
        if not self.schedule:
            return self.k
        for max_batch, k in self.schedule:
            if batch <= max_batch:
                return k
        return self.schedule[-1][1]

    def to_dict(self) -> dict[str, Any]:
        rows = [list(row) for row in self.schedule] if self.schedule else None
        return {"enabled": self.enabled, "k": self.k, "schedule": rows}

    @classmethod
    def from_dict(cls, raw: Mapping[str, Any]) -> SpecConfig:
        rows = raw.get("schedule")
        schedule = tuple((int(b), int(k)) for b, k in rows) if rows else None
        return cls(enabled=bool(raw["enabled"]), k=int(raw["k"]), schedule=schedule)


@dataclass(frozen=True)
class Pending:
    """A change the policy wants, and since when it has wanted it (the dwell clock)."""

    action: str
    since: float


@dataclass(frozen=True)
class Verification:
    """Checking a restart-bound change: the model as it was when deciding, and what was measured since."""

    since: float
    curve: Curve
    calibration: Calibration
    ready_at: float | None = None
    last_window_at: float | None = None
    ratios: tuple[float, ...] = ()
    # Rollout progress: the most pods seen Ready on the new config, and when that number last grew.
    progress_ready: int = 0
    progress_pods: int = 0  # the most pods seen reporting signals under the new config
    progress_at: float | None = None


@dataclass(frozen=True)
class PolicyState:
    current: SpecConfig
    last_good: SpecConfig
    pending: Pending | None = None
    restarts: tuple[float, ...] = ()
    last_change_at: float | None = None
    missing_intervals: int = 0
    verification: Verification | None = None
    acceptance: AcceptanceMemory | None = None
    table_curve: Curve | None = None
    calibration: Calibration = field(default_factory=Calibration)
    forecast: Forecast = field(default_factory=Forecast)
    # Seconds one pod took to come back in the last rollout (measured while verifying it).
    restart_seconds: float | None = None
    # When, in the last day, peaks began where speculation lost: a restart to off wanted past the dwell.
    loss_peaks: tuple[float, ...] = ()
    # The forecast load per replica when the last of them began, and the last time the load fell to
    # TROUGH_FRACTION of it since: a trough between peaks.
    peak_load: float | None = None
    trough_at: float | None = None
    # The relative TPOT the fleet was predicted to lose at that load, speculating, when the peak was recorded.
    peak_loss: float | None = None
    # When the fit last said, while the fleet ran off, that speculating would clear the bar to turn it on, and
    # the forecast load per replica then.
    enable_cleared_at: float | None = None
    enable_cleared_load: float | None = None

    def restarts_in_hour(self, now: float) -> tuple[float, ...]:
        return _within(self.restarts, now, HOUR_S)

    def peaks_in_day(self, now: float) -> tuple[float, ...]:
        return _within(self.loss_peaks, now, DAY_S)

    def with_peak(self, since: float, now: float, load: float, loss: float) -> PolicyState:
        """The state with a peak that began at `since` at `load`, where speculating lost `loss`, recorded
        among the last day's, unless no trough came between it and the last one: a load that hovers about the
        crossover for hours is one busy period, however often the advice flickers."""
        peaks = self.peaks_in_day(now)
        if peaks and (self.trough_at is None or self.trough_at < peaks[-1] or since <= peaks[-1]):
            return self
        return replace(self, loss_peaks=(*peaks, since), peak_load=load, peak_loss=loss)

    def with_load(self, now: float, load: float) -> PolicyState:
        """The state with `now` as its last trough if the load fell to TROUGH_FRACTION of the last peak's."""
        if self.peak_load is None or load > TROUGH_FRACTION * self.peak_load:
            return self
        return replace(self, trough_at=now)

    def after_change(self, now: float, target: SpecConfig, verification: Verification | None) -> PolicyState:
        """The state once a restart-bound change to `target` has been made at `now`."""
        return replace(
            self,
            current=target,
            pending=None,
            restarts=(*self.restarts_in_hour(now), now),
            last_change_at=now,
            verification=verification,
        )

    def to_dict(self) -> dict[str, Any]:
        return {
            "current": self.current.to_dict(),
            "lastGood": self.last_good.to_dict(),
            "pending": {"action": self.pending.action, "since": self.pending.since} if self.pending else None,
            "restarts": list(self.restarts),
            "lastChangeAt": self.last_change_at,
            "missingIntervals": self.missing_intervals,
            "verification": _verification_to_dict(self.verification),
            "acceptance": _memory_to_dict(self.acceptance),
            "tableCurve": list(self.table_curve) if self.table_curve is not None else None,
            "calibration": self.calibration.to_dict(),
            "forecast": self.forecast.to_dict(),
            "restartSeconds": self.restart_seconds,
            "lossPeaks": list(self.loss_peaks),
            "peakLoad": self.peak_load,
            "troughAt": self.trough_at,
            "peakLoss": self.peak_loss,
            "enableClearedAt": self.enable_cleared_at,
            "enableClearedLoad": self.enable_cleared_load,
        }

    @classmethod
    def from_dict(cls, raw: Mapping[str, Any]) -> PolicyState:
        pending = raw.get("pending")
        memory = raw.get("acceptance")
        table_curve = raw.get("tableCurve")
        return cls(
            current=SpecConfig.from_dict(raw["current"]),
            last_good=SpecConfig.from_dict(raw["lastGood"]),
            pending=Pending(str(pending["action"]), float(pending["since"])) if pending else None,
            restarts=tuple(float(t) for t in raw.get("restarts", ())),
            last_change_at=_opt_float(raw.get("lastChangeAt")),
            missing_intervals=int(raw.get("missingIntervals", 0)),
            verification=_verification_from_dict(raw.get("verification")),
            acceptance=_memory_from_dict(memory),
            table_curve=_curve(table_curve) if table_curve is not None else None,
            calibration=Calibration.from_dict(raw.get("calibration", {})),
            forecast=Forecast.from_dict(raw.get("forecast", {})),
            restart_seconds=_opt_float(raw.get("restartSeconds")),
            loss_peaks=tuple(float(t) for t in raw.get("lossPeaks", ())),
            peak_load=_opt_float(raw.get("peakLoad")),
            trough_at=_opt_float(raw.get("troughAt")),
            peak_loss=_opt_float(raw.get("peakLoss")),
            enable_cleared_at=_opt_float(raw.get("enableClearedAt")),
            enable_cleared_load=_opt_float(raw.get("enableClearedLoad")),
        )


def _within(times: tuple[float, ...], now: float, span: float) -> tuple[float, ...]:
    return tuple(t for t in times if now - t < span)


def _opt_float(value: Any) -> float | None:
    return None if value is None else float(value)


def _curve(values: Any) -> Curve:
    return tuple(float(v) for v in values)


def _memory_to_dict(memory: AcceptanceMemory | None) -> dict[str, Any] | None:
    return {"curve": list(memory.curve), "measuredAt": memory.measured_at} if memory else None


def _memory_from_dict(raw: Mapping[str, Any] | None) -> AcceptanceMemory | None:
    return AcceptanceMemory(_curve(raw["curve"]), float(raw["measuredAt"])) if raw else None


def _verification_to_dict(v: Verification | None) -> dict[str, Any] | None:
    if v is None:
        return None
    return {
        "since": v.since,
        "curve": list(v.curve),
        "calibration": v.calibration.to_dict(),
        "readyAt": v.ready_at,
        "lastWindowAt": v.last_window_at,
        "ratios": list(v.ratios),
        "progressReady": v.progress_ready,
        "progressPods": v.progress_pods,
        "progressAt": v.progress_at,
    }


def _verification_from_dict(raw: Mapping[str, Any] | None) -> Verification | None:
    if raw is None:
        return None
    return Verification(
        since=float(raw["since"]),
        curve=_curve(raw["curve"]),
        calibration=Calibration.from_dict(raw.get("calibration", {})),
        ready_at=_opt_float(raw.get("readyAt")),
        last_window_at=_opt_float(raw.get("lastWindowAt")),
        ratios=_curve(raw.get("ratios", ())),
        progress_ready=int(raw.get("progressReady", 0)),
        progress_pods=int(raw.get("progressPods", 0)),
        progress_at=_opt_float(raw.get("progressAt")),
    )
