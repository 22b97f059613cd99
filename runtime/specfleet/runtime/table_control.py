"""The live batch-size→k table: what a running engine's control endpoint accepts, pure.

Shared by the runtime (the launcher's `PUT /speculation/table` on the health/control port, the scheduler plugin
that swaps the table inside the engine core) and the operator (which pushes tables to its pods), so both sides
validate a table the same way. The table is vLLM's range form `[[first batch, last batch, k], ...]`, the form
`engine_args` renders for the start-up table; vLLM carries the last k through larger batches.

Rules for a live table (each refusal is a `TableRequestError` with the HTTP status the endpoint answers):
- contiguous ranges from batch 1, each k within 0..the start-up k (the drafter, the KV lookahead and the
  sampler are sized for it): 400;
- only k values the start-up table already runs, when the caller passes them (`allowed_k`): decode CUDA graphs
  are captured at start-up for exactly those draft lengths, a new k needs a restart: 400;
- `expectedVersion`, when given, must be the version in force (optimistic concurrency): 409.
"""

from __future__ import annotations

import hmac
from collections.abc import Collection
from dataclasses import dataclass
from typing import Any

from specfleet.runtime.engine_args import (
    EngineConfigError,
    SpeculativeConfig,
    _is_int,
    parse_schedule,
    schedule_ranges,
    validate_schedule,
)

CONTROL_TABLE_PATH = "/speculation/table"
# The operator mounts its Secret's token here; the file is re-read when it changes (Secret rotation).
TOKEN_FILE_ENV = "SPECFLEET_CONTROL_TOKEN_FILE"
DEFAULT_TOKEN_PATH = "/var/run/specfleet/control/token"
BEARER = "bearer"
STARTUP_VERSION = 0

Ranges = tuple[tuple[int, int, int], ...]


class TableRequestError(Exception):
    """A refused table request; `status` is the HTTP status the control endpoint answers with."""

    def __init__(self, status: int, message: str) -> None:
        super().__init__(message)
        self.status = status
        self.message = message


@dataclass(frozen=True)
class LiveTable:
    """One version of the table; version 0 is the start-up table, each accepted change adds one."""

    version: int
    ranges: Ranges

    def to_json(self) -> dict[str, Any]:
        return {"version": self.version, "table": [list(entry) for entry in self.ranges]}

    @classmethod
    def from_json(cls, obj: Any) -> LiveTable:
        """The inverse of `to_json` (the control file between the launcher and the engine core)."""
        if not (isinstance(obj, dict) and _is_int(obj.get("version"))):
            raise TableRequestError(400, "version: must be an integer")
        return cls(version=obj["version"], ranges=parse_ranges(obj.get("table"), k=None))

    def label(self) -> str:
        """The `table` label of the info metric: `1-4:3,5-64:1` (first-last:k per range)."""
        return ",".join(f"{first}-{last}:{k}" for first, last, k in self.ranges)

    def ks(self) -> frozenset[int]:
        return frozenset(k for _, _, k in self.ranges)


def startup_table(spec: SpeculativeConfig | None) -> LiveTable | None:
    """The table an engine starts with (version 0); None without speculation or without a batch-size table."""
    if spec is None or not spec.schedule:
        return None
    ranges = tuple((first, last, k) for first, last, k in schedule_ranges(spec.schedule))
    return LiveTable(version=STARTUP_VERSION, ranges=ranges)


def authorize(header: str | None, token: str | None) -> None:
    """The `Authorization` header against the pod's token: 401 without a bearer token, 403 when it is wrong.

    A pod without a configured token refuses every change (403): speculation then stays as the pod started.
    """
    scheme, _, presented = (header or "").strip().partition(" ")
    if scheme.lower() != BEARER or not presented.strip():
        raise TableRequestError(401, "authorization: a bearer token is required to change the table")
    if not token:
        raise TableRequestError(403, "authorization: this pod has no control token configured; changes are refused")
    if not hmac.compare_digest(presented.strip().encode(), token.encode()):
        raise TableRequestError(403, "authorization: the token is not this pod's control token")


def parse_table_request(
    body: object, startup_k: int, current: LiveTable, *, allowed_k: Collection[int] | None = None
) -> LiveTable:
    """A validated request body `{"table": [[first, last, k], ...], "expectedVersion": int?}` → the new table.

    `allowed_k`: the k values the start-up table runs (decode CUDA graphs exist for those only); None skips it.
    """
    if not isinstance(body, dict):
        raise TableRequestError(400, 'body: must be a JSON object {"table": [[first, last, k], ...]}')
    unknown = set(body) - {"table", "expectedVersion"}
    if unknown:
        raise TableRequestError(400, f"body: unknown keys {sorted(unknown)}")
    expected = body.get("expectedVersion")
    if expected is not None and not _is_int(expected):
        raise TableRequestError(400, "expectedVersion: must be an integer")
    ranges = parse_ranges(body.get("table"), k=startup_k)
    if allowed_k is not None:
        new_ks = {k for _, _, k in ranges} - set(allowed_k)
        if new_ks:
            allowed = ", ".join(str(k) for k in sorted(allowed_k))
            raise TableRequestError(
                400,
                f"table: k={min(new_ks)} is not one of the start-up table's k values ({allowed}); "
                "decode CUDA graphs exist only for those, a new k needs a restart",
            )
    if expected is not None and expected != current.version:
        raise TableRequestError(409, f"expectedVersion: {expected} is stale; the table in force is {current.version}")
    return LiveTable(version=current.version + 1, ranges=ranges)


def parse_ranges(raw: object, k: int | None) -> Ranges:
    """vLLM's range list, contiguous from batch 1, each k within 0..`k` (None: any k ≥ 0)."""
    if isinstance(raw, tuple):
        raw = list(raw)
    if isinstance(raw, list):
        raw = [list(entry) if isinstance(entry, tuple) else entry for entry in raw]
    try:
        rows = parse_schedule(raw)
        validate_schedule(rows, max((row_k for _, row_k in rows), default=0) if k is None else k)
    except EngineConfigError as exc:
        raise TableRequestError(400, f"table: {_without_field(str(exc))}") from exc
    return tuple((first, last, row_k) for first, last, row_k in schedule_ranges(rows))


def _without_field(message: str) -> str:
    """engine_args names the start-up flag's field; the endpoint's field is `table`."""
    return message.partition(": ")[2] or message
