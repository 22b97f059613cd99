"""Warnings rate-limited per cause: a dead Prometheus or pod says so once, then at most once a minute.

Every tick reads every fleet's signals, so a cause that lasts (a Prometheus that is down, a pod that does not
answer) would repeat its warning every tick. The cause of a record is its logger and its message as rendered,
so call sites put what identifies the cause (source, pod, reason) in the message and nothing that varies by
tick (no counts of seconds). The first record of a cause passes; the next ones within the interval are
counted and dropped; the first after it passes with "(repeated N times in the last S s)".
"""

from __future__ import annotations

import logging
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass

INTERVAL_SECONDS = 60.0
MAX_CAUSES = 4096  # beyond this many causes, those not logged for an interval are forgotten


@dataclass
class _Cause:
    logged: float  # when it last passed
    repeats: int = 0  # dropped since


class RepeatFilter(logging.Filter):
    """Drops a warning whose cause already logged within `interval` seconds, counting it for the next one."""

    def __init__(self, interval: float = INTERVAL_SECONDS, clock: Callable[[], float] = time.monotonic) -> None:
        super().__init__()
        self.interval = interval
        self._clock = clock
        self._causes: dict[tuple[str, str], _Cause] = {}
        self._lock = threading.Lock()  # records come from the operator's loop and from executor threads

    def filter(self, record: logging.LogRecord) -> bool:
        if record.levelno < logging.WARNING:
            return True
        key = (record.name, record.getMessage())
        with self._lock:
            now = self._clock()
            cause = self._causes.get(key)
            if cause is not None and now - cause.logged < self.interval:
                cause.repeats += 1
                return False
            if cause is not None and cause.repeats:
                record.msg = f"{key[1]} (repeated {cause.repeats} times in the last {now - cause.logged:.0f} s)"
                record.args = None
            self._forget(now)
            self._causes[key] = _Cause(now)
        return True

    def _forget(self, now: float) -> None:
        if len(self._causes) >= MAX_CAUSES:
            self._causes = {k: c for k, c in self._causes.items() if now - c.logged < self.interval}


REPEATS = RepeatFilter()


def rate_limited(name: str) -> logging.Logger:
    """The logger `name`, its warnings rate-limited per cause (one filter for the process: logging is global)."""
    logger = logging.getLogger(name)
    logger.addFilter(REPEATS)
    return logger
