"""The change log behind watch streams: resumable from any retained resourceVersion."""

from __future__ import annotations

import asyncio
import collections
import contextlib
import time
from collections.abc import AsyncIterator, Callable
from dataclasses import dataclass
from typing import Any

from specfleet.emulator.selectors import Matcher


@dataclass(frozen=True)
class Change:
    """One stored change: `obj` after it (the last state for DELETED), `old` before it."""

    rv: int
    type: str
    group: str
    plural: str
    obj: dict[str, Any]
    old: dict[str, Any] | None = None

    @property
    def namespace(self) -> str | None:
        namespace: str | None = self.obj.get("metadata", {}).get("namespace")
        return namespace


class ChangeLog:
    """A bounded, ordered log of changes; watchers wait on it for what comes after their version."""

    def __init__(self, capacity: int) -> None:
        self._changes: collections.deque[Change] = collections.deque(maxlen=capacity)
        self._signal = asyncio.Event()
        self.compacted_rv = 0  # changes up to this version are gone: older watches get 410 Gone

    def append(self, change: Change) -> None:
        if len(self._changes) == self._changes.maxlen:
            self.compacted_rv = self._changes[0].rv
        self._changes.append(change)
        self._signal.set()
        self._signal = asyncio.Event()

    def after(self, rv: int) -> list[Change]:
        return [change for change in self._changes if change.rv > rv]

    async def wait(self, seconds: float) -> None:
        """Until the next change, or for `seconds` at most."""
        signal = self._signal
        with contextlib.suppress(TimeoutError):
            await asyncio.wait_for(signal.wait(), seconds)


@dataclass(frozen=True)
class WatchQuery:
    """What one watch request asks for."""

    group: str
    plural: str
    namespace: str | None
    selects: Matcher  # label and field selectors together
    since: int  # stream changes after this version
    initial: tuple[dict[str, Any], ...] = ()  # objects to send as ADDED first (no or "0" version given)
    timeout: float | None = None
    bookmarks: bool = False
    initial_events_end: bool = False  # sendInitialEvents=true: a bookmark marks the end of the initial list

    def concerns(self, change: Change) -> bool:
        return (change.group, change.plural) == (self.group, self.plural) and (
            self.namespace is None or change.namespace == self.namespace
        )

    def event_for(self, change: Change) -> dict[str, Any] | None:
        """The event this watcher sees; leaving or entering the selected set reads as DELETED or ADDED."""
        now_in = self.selects(change.obj)
        was_in = change.old is not None and self.selects(change.old)
        if change.type == "MODIFIED" and was_in != now_in:
            return {"type": "DELETED" if was_in else "ADDED", "object": change.obj}
        return {"type": change.type, "object": change.obj} if now_in else None


async def stream(
    log: ChangeLog,
    query: WatchQuery,
    bookmark: Callable[[], dict[str, Any]],
    bookmark_interval: float,
) -> AsyncIterator[Any]:
    """Watch events as JSON lines; ends on timeoutSeconds (or never), like the apiserver's watch."""
    yield b""  # send the headers now: clients wait for them before anything happens
    for obj in query.initial:
        yield {"type": "ADDED", "object": obj}
    if query.initial_events_end:
        mark = bookmark()
        mark["object"]["metadata"]["annotations"] = {"k8s.io/initial-events-end": "true"}
        yield mark
    cursor = query.since
    deadline = time.monotonic() + query.timeout if query.timeout else None
    next_bookmark = time.monotonic() + bookmark_interval
    while deadline is None or time.monotonic() < deadline:
        for change in log.after(cursor):
            cursor = change.rv
            event = query.event_for(change) if query.concerns(change) else None
            if event is not None:
                yield event
        if query.bookmarks and time.monotonic() >= next_bookmark:
            yield bookmark()
            next_bookmark = time.monotonic() + bookmark_interval
        waits = [next_bookmark - time.monotonic()] + ([deadline - time.monotonic()] if deadline else [])
        await log.wait(max(min(waits), 0.001))
    if query.bookmarks:
        yield bookmark()
