"""The files through which the launcher hands a live table to the engine core, and the engine core answers.

I/O shell, no vLLM import. The engine core (vLLM's scheduler) runs in a process the launcher does not own, so
the channel is a folder named by SPECFLEET_TABLE_DIR, inherited by every process of the engine:

- `table.json`: the table the launcher wants (`LiveTable.to_json()` plus a request id), written atomically;
- `applied.json`: what the scheduler runs (`LiveTable.to_json()` plus `allowedK`, `startupK`, the id of the
  last request it handled and, when it refused that one, `refused`), written atomically by the scheduler.

Atomic writes (a temporary file renamed over the old one) mean a reader sees a whole old or a whole new file,
and each write gives the file a new inode, so a cheap `stat` tells a reader whether to read it again.
"""

from __future__ import annotations

import json
import os
import tempfile
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Generic, TypeVar

from prometheus_client import REGISTRY, CollectorRegistry, Metric
from prometheus_client.core import GaugeMetricFamily
from prometheus_client.registry import Collector

from specfleet.runtime.table_control import LiveTable

T = TypeVar("T")

ENV_TABLE_DIR = "SPECFLEET_TABLE_DIR"
REQUEST_FILE = "table.json"
APPLIED_FILE = "applied.json"
TABLE_INFO_METRIC = "specfleet_speculation_table_info"
TABLE_INFO_LABELS = ("version", "table")


@dataclass(frozen=True)
class FileStamp:
    """Identity of one version of a file; a different stamp means it was rewritten."""

    inode: int
    mtime_ns: int
    size: int


def stamp(path: Path) -> FileStamp | None:
    try:
        st = path.stat()
    except FileNotFoundError:
        return None
    return FileStamp(st.st_ino, st.st_mtime_ns, st.st_size)


def write_json_atomically(path: Path, obj: Any) -> None:
    fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=f".{path.name}.")
    try:
        with os.fdopen(fd, "w") as file:
            json.dump(obj, file)
        os.replace(tmp, path)
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise


def read_json(path: Path) -> Any:
    """The file's JSON, or None when it is missing or not (yet) valid JSON."""
    try:
        return json.loads(path.read_text())
    except (FileNotFoundError, json.JSONDecodeError):
        return None


def read_text(path: Path) -> str | None:
    try:
        return path.read_text()
    except FileNotFoundError:
        return None


class ChangedFile(Generic[T]):
    """A small file, loaded again only when its stamp changed (the token, the scheduler's answer)."""

    def __init__(self, path: Path, load: Callable[[Path], T]) -> None:
        self.path = path
        self.load = load
        self._stamp: FileStamp | None = None
        self._value: T | None = None

    def read(self) -> T | None:
        current = stamp(self.path)
        if current != self._stamp:
            self._stamp = current
            self._value = self.load(self.path) if current is not None else None
        return self._value

    def changed(self) -> bool:
        return stamp(self.path) != self._stamp


@dataclass(frozen=True)
class EngineAnswer:
    """`applied.json`: the table the scheduler runs and its answer to the last request it handled."""

    applied: LiveTable
    startup_k: int
    allowed_k: tuple[int, ...]
    request: str | None = None
    # Why the scheduler refused `request` (the table in force stayed); None when it applied it.
    refused: str | None = None

    def to_json(self) -> dict[str, Any]:
        return {
            **self.applied.to_json(),
            "startupK": self.startup_k,
            "allowedK": list(self.allowed_k),
            "request": self.request,
            "refused": self.refused,
        }

    @classmethod
    def load(cls, path: Path) -> EngineAnswer | None:
        obj = read_json(path)
        if not isinstance(obj, dict):
            return None
        return cls(
            applied=LiveTable.from_json(obj),
            startup_k=int(obj["startupK"]),
            allowed_k=tuple(int(k) for k in obj["allowedK"]),
            request=obj.get("request"),
            refused=obj.get("refused"),
        )


def table_request(table: LiveTable, request: str) -> dict[str, Any]:
    """`table.json`: the launcher's request, the table with an id the scheduler's answer echoes."""
    return {**table.to_json(), "request": request}


class TableInfoCollector(Collector):
    """`specfleet_speculation_table_info{version, table} 1`: the table the scheduler runs, read at each scrape.

    The scheduler lives in vLLM's engine-core process, the metrics endpoint in the API server's; its answer
    file is what both see. No series until the engine core has written it.
    """

    def __init__(self, folder: Path) -> None:
        self.answers = ChangedFile(folder / APPLIED_FILE, EngineAnswer.load)

    def collect(self) -> Iterator[Metric]:
        answer = self.answers.read()
        if answer is None:
            return
        family = GaugeMetricFamily(
            TABLE_INFO_METRIC, "Batch-size to k table the scheduler runs (always 1).", labels=TABLE_INFO_LABELS
        )
        family.add_metric([str(answer.applied.version), answer.applied.label()], 1)
        yield family


def register_table_info(folder: str, registry: CollectorRegistry = REGISTRY) -> TableInfoCollector:
    collector = TableInfoCollector(Path(folder))
    registry.register(collector)
    return collector
