"""vLLM's V1 scheduler with a batch-size→k table that can be replaced while the engine runs.

I/O shell, loaded inside vLLM's engine-core process with `--scheduler-cls` (the launcher adds it when the
engine starts with a batch-size table). vLLM 0.32 reads its table as a dense batch-size → k list,
`Scheduler.dynamic_sd_lookup`, once per `schedule()` call. A daemon thread stats the launcher's request file
(`table_channel.REQUEST_FILE`) every POLL_SECONDS; when it changed, it builds the new lookup with vLLM's own
builder (`build_dynamic_sd_schedule_lookup`, which validates and normalises) and replaces the attribute in one
assignment. A step therefore runs wholly on the old or wholly on the new table, a step is never blocked
(the thread holds the GIL for one stat per poll), and a table is picked up while the engine is idle too.

Refused (the old table stays, the answer says why): anything vLLM's builder refuses, a k above the start-up k
(vLLM would silently clamp it) and a k the start-up table does not run (decode CUDA graphs are captured for
those draft lengths only). Every outcome is written to `table_channel.APPLIED_FILE`.
"""

from __future__ import annotations

import dataclasses
import logging
import os
import threading
import time
from pathlib import Path
from typing import Any

from vllm.v1.core.sched.async_scheduler import AsyncScheduler
from vllm.v1.core.sched.scheduler import Scheduler
from vllm.v1.spec_decode.dynamic.utils import (
    build_dynamic_sd_schedule_lookup,
    validate_and_normalize_dynamic_sd_schedule,
)

from specfleet.runtime.table_channel import (
    APPLIED_FILE,
    ENV_TABLE_DIR,
    REQUEST_FILE,
    ChangedFile,
    EngineAnswer,
    read_json,
    write_json_atomically,
)
from specfleet.runtime.table_control import STARTUP_VERSION, LiveTable, TableRequestError

# Under "vllm." so the line goes through the handler vLLM configures in its engine-core process.
log = logging.getLogger("vllm.specfleet.live_scheduler")
POLL_SECONDS = 0.1


def live_table_scheduler(*args: Any, **kwargs: Any) -> Scheduler:
    """What `--scheduler-cls` names; vLLM calls it like a scheduler class. It keeps vLLM's own choice between
    its asynchronous scheduler (the default with draft models and EAGLE on GPUs) and the plain one, settled by
    the configuration before the engine core starts; naming one class would override that choice."""
    asynchronous = kwargs["vllm_config"].scheduler_config.async_scheduling
    return (LiveTableAsyncScheduler if asynchronous else LiveTableScheduler)(*args, **kwargs)


class LiveTableMixin:
    """Put in front of a vLLM scheduler class; the attributes declared here are the scheduler's own."""

    dynamic_sd_lookup: list[int] | None
    num_spec_tokens: int
    vllm_config: Any
    scheduler_config: Any

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        folder = os.environ.get(ENV_TABLE_DIR)
        if self.dynamic_sd_lookup is None or not folder:
            # Nothing to swap (no batch-size table) or nobody to talk to (started without the launcher).
            log.warning("live batch-size tables are off: no start-up table or %s unset", ENV_TABLE_DIR)
            return
        schedule = self.vllm_config.speculative_config.num_speculative_tokens_per_batch_size
        startup = tuple(tuple(entry) for entry in validate_and_normalize_dynamic_sd_schedule(schedule))
        self._folder = Path(folder)
        self._answer = EngineAnswer(
            applied=LiveTable(version=STARTUP_VERSION, ranges=startup),  # type: ignore[arg-type]
            startup_k=self.num_spec_tokens,
            allowed_k=tuple(sorted(set(self.dynamic_sd_lookup[1:]))),
        )
        write_json_atomically(self._folder / APPLIED_FILE, self._answer.to_json())
        threading.Thread(target=self._watch, name="specfleet-live-table", daemon=True).start()

    def _watch(self) -> None:
        request = ChangedFile(self._folder / REQUEST_FILE, read_json)
        while True:
            time.sleep(POLL_SECONDS)
            try:
                if request.changed():
                    self._handle(request.read())
            except Exception:
                # Keep watching: one unreadable request or full disk must not end live changes for good.
                log.exception("live table request not handled; the table in force stays")

    def _handle(self, obj: Any) -> None:
        request_id = obj.get("request") if isinstance(obj, dict) else None
        try:
            table, lookup = self._build(obj)
        except (TableRequestError, ValueError) as exc:
            log.warning("live table refused, keeping version %d: %s", self._answer.applied.version, exc)
            self._reply(self._answer.applied, request_id, refused=str(exc))
            return
        self.dynamic_sd_lookup = lookup  # one assignment: the next schedule() reads the whole new table
        log.info("live table version %d applied: %s", table.version, table.label())
        self._reply(table, request_id, refused=None)

    def _build(self, obj: Any) -> tuple[LiveTable, list[int]]:
        table = LiveTable.from_json(obj)
        lookup = build_dynamic_sd_schedule_lookup(
            [list(entry) for entry in table.ranges],
            vllm_max_batch_size=self.scheduler_config.max_num_seqs,
            vllm_num_speculative_tokens=self.num_spec_tokens,
        )
        if max(table.ks()) > self.num_spec_tokens:
            raise ValueError(f"k={max(table.ks())} is above the start-up k {self.num_spec_tokens}")
        if unknown := set(lookup[1:]) - set(self._answer.allowed_k):
            raise ValueError(f"k={min(unknown)} is not one of the start-up table's k values {self._answer.allowed_k}")
        return table, lookup

    def _reply(self, applied: LiveTable, request_id: str | None, refused: str | None) -> None:
        self._answer = dataclasses.replace(self._answer, applied=applied, request=request_id, refused=refused)
        write_json_atomically(self._folder / APPLIED_FILE, self._answer.to_json())


class LiveTableScheduler(LiveTableMixin, Scheduler):  # type: ignore[misc]  # vLLM is untyped here (mypy skips it)
    pass


class LiveTableAsyncScheduler(LiveTableMixin, AsyncScheduler):  # type: ignore[misc]
    pass
