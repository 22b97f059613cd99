"""The engine configuration of one pod and the vLLM command line it becomes.

Pure: shared by the operator's manifest rendering (which writes the arguments into the pod template) and the
runtime entrypoint (which parses them back, validates them and starts vLLM), so the two cannot disagree.
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any, TypeGuard

from specfleet.runtime.engine_flags import MAX_K
from specfleet.runtime.extra_args import extra_arg_problem

SPEC_METHODS = ("eagle3", "draft_model", "ngram", "mtp", "suffix")
METHODS_WITH_DRAFT = ("eagle3", "draft_model")
DEFAULT_PORT = 8000
# vLLM's speculative-config key for the per-step batch-size→k table (vllm/config/speculative.py, 0.32).
# vLLM takes inclusive ranges [[first batch, last batch, k], ...] starting at batch 1 and carries the last k
# through larger batches; specfleet keeps the table as ascending (max batch size, k) rows and converts.
SCHEDULE_KEY = "num_speculative_tokens_per_batch_size"


class EngineConfigError(ValueError):
    """An engine configuration that must not be started; the message names the field."""


@dataclass(frozen=True)
class SpeculativeConfig:
    """What `--speculative-config` carries."""

    method: str
    k: int
    draft_model: str | None = None
    # (max batch size, k) rows, ascending; k may be 0 (no drafting at that batch size).
    schedule: tuple[tuple[int, int], ...] | None = None

    def validate(self) -> None:
        if self.method not in SPEC_METHODS:
            allowed = ", ".join(SPEC_METHODS)
            raise EngineConfigError(f"speculative.method: {self.method!r} is not one of {allowed}")
        if not 1 <= self.k <= MAX_K:
            raise EngineConfigError(f"speculative.num_speculative_tokens: {self.k} is outside 1..{MAX_K}")
        if self.method in METHODS_WITH_DRAFT and not self.draft_model:
            raise EngineConfigError(f"speculative.model: a draft model is required for method {self.method}")
        if self.method not in METHODS_WITH_DRAFT and self.draft_model:
            raise EngineConfigError(f"speculative.model: a draft model is refused for method {self.method}")
        if self.schedule is not None:
            validate_schedule(self.schedule, self.k)

    def to_json_obj(self) -> dict[str, Any]:
        obj: dict[str, Any] = {"method": self.method, "num_speculative_tokens": self.k}
        if self.draft_model:
            obj["model"] = self.draft_model
        if self.schedule:
            obj[SCHEDULE_KEY] = schedule_ranges(self.schedule)
        return obj

    @classmethod
    def from_json_obj(cls, obj: Any) -> SpeculativeConfig:
        if not isinstance(obj, dict):
            raise EngineConfigError("speculative-config: must be a JSON object")
        unknown = set(obj) - {"method", "num_speculative_tokens", "model", SCHEDULE_KEY}
        if unknown:
            raise EngineConfigError(f"speculative-config: unknown keys {sorted(unknown)}")
        k = obj.get("num_speculative_tokens")
        if not _is_int(k):
            raise EngineConfigError("speculative.num_speculative_tokens: must be an integer")
        schedule = obj.get(SCHEDULE_KEY)
        config = cls(
            method=str(obj.get("method")),
            k=k,
            draft_model=obj.get("model"),
            schedule=parse_schedule(schedule) if schedule is not None else None,
        )
        config.validate()
        return config


def schedule_ranges(schedule: Sequence[tuple[int, int]]) -> list[list[int]]:
    """(max batch, k) rows → vLLM's contiguous inclusive ranges [[first, last, k], ...]."""
    starts = [1] + [batch + 1 for batch, _ in schedule[:-1]]
    return [[start, batch, k] for start, (batch, k) in zip(starts, schedule, strict=True)]


def parse_schedule(raw: Any) -> tuple[tuple[int, int], ...]:
    """vLLM's range list back to (max batch, k) rows; only the contiguous form `schedule_ranges` renders."""
    field_name = f"speculative.{SCHEDULE_KEY}"
    if not isinstance(raw, list) or not raw:
        raise EngineConfigError(f"{field_name}: must be a non-empty list of [first batch, last batch, k]")
    rows: list[tuple[int, int]] = []
    expected_start = 1
    for entry in raw:
        if not (isinstance(entry, list) and len(entry) == 3 and all(_is_int(v) for v in entry)):
            raise EngineConfigError(f"{field_name}: {entry!r} is not [first batch, last batch, k], integers")
        start, end, k = entry
        if start != expected_start or end < start:
            raise EngineConfigError(
                f"{field_name}: ranges must be contiguous from batch 1; got [{start}, {end}] "
                f"where batch {expected_start} starts"
            )
        rows.append((end, k))
        expected_start = end + 1
    return tuple(rows)


def _is_int(value: Any) -> TypeGuard[int]:
    return isinstance(value, int) and not isinstance(value, bool)


def validate_schedule(schedule: Sequence[tuple[int, int]], k: int) -> None:
    previous = 0
    for batch, rows_k in schedule:
        if batch <= previous:
            raise EngineConfigError(f"speculative.{SCHEDULE_KEY}: batch sizes must be positive and ascending")
        if not 0 <= rows_k <= k:
            raise EngineConfigError(f"speculative.{SCHEDULE_KEY}: k={rows_k} at batch {batch} is outside 0..{k}")
        previous = batch


@dataclass(frozen=True)
class EngineConfig:
    """Everything the operator decides about one engine process."""

    model: str
    served_model_name: str | None = None
    tensor_parallel_size: int = 1
    data_parallel_size: int = 1
    max_model_len: int | None = None
    speculative: SpeculativeConfig | None = None
    port: int = DEFAULT_PORT
    extra_args: tuple[str, ...] = field(default_factory=tuple)

    def validate(self) -> None:
        if not self.model:
            raise EngineConfigError("model: must not be empty")
        if self.tensor_parallel_size < 1:
            raise EngineConfigError("tensor-parallel-size: must be at least 1")
        if self.data_parallel_size < 1:
            raise EngineConfigError("data-parallel-size: must be at least 1")
        if not 1 <= self.port <= 65535:
            raise EngineConfigError(f"port: {self.port} is not a TCP port")
        if self.speculative is not None:
            self.speculative.validate()
            if self.speculative.schedule and self.data_parallel_size != 1:
                raise EngineConfigError(f"speculative.{SCHEDULE_KEY}: vLLM ignores the table under data parallelism")
        for arg in self.extra_args:
            if problem := extra_arg_problem(arg):
                raise EngineConfigError(f"extra args: {problem}")

    def vllm_args(self) -> list[str]:
        """vLLM's command-line arguments, in a fixed order (so equal configs render equal pod templates)."""
        args = ["--model", self.model, "--host", "0.0.0.0", "--port", str(self.port)]
        if self.served_model_name:
            args += ["--served-model-name", self.served_model_name]
        args += ["--tensor-parallel-size", str(self.tensor_parallel_size)]
        if self.data_parallel_size != 1:
            args += ["--data-parallel-size", str(self.data_parallel_size)]
        if self.max_model_len is not None:
            args += ["--max-model-len", str(self.max_model_len)]
        if self.speculative is not None:
            args += ["--speculative-config", canonical_json(self.speculative.to_json_obj())]
        return args + list(self.extra_args)

    def config_hash(self) -> str:
        """Short stable hash of the configuration; pods carry it so signals never mix two configs."""
        digest = hashlib.sha256(canonical_json(self.vllm_args()).encode()).hexdigest()
        return digest[:10]

    @classmethod
    def from_vllm_args(cls, args: Sequence[str]) -> EngineConfig:
        """Parse what `vllm_args` rendered (the runtime's input) and validate it."""
        values: dict[str, str] = {}
        extra: list[str] = []
        i = 0
        while i < len(args):
            name = args[i]
            if name in _FLAG_FIELDS:
                if i + 1 >= len(args):
                    raise EngineConfigError(f"{name}: missing value")
                if name in values:
                    raise EngineConfigError(f"{name}: given twice; the operator sets it once")
                values[name] = args[i + 1]
                i += 2
                continue
            extra.append(name)
            i += 1
        if "--model" not in values:
            raise EngineConfigError("model: --model is required")
        config = cls(
            model=values["--model"],
            served_model_name=values.get("--served-model-name"),
            tensor_parallel_size=_int_flag(values, "--tensor-parallel-size", 1),
            data_parallel_size=_int_flag(values, "--data-parallel-size", 1),
            max_model_len=_int_flag(values, "--max-model-len", None),
            speculative=_spec_flag(values.get("--speculative-config")),
            port=_int_flag(values, "--port", DEFAULT_PORT),
            extra_args=tuple(extra),
        )
        config.validate()
        return config


_FLAG_FIELDS = (
    "--model",
    "--host",
    "--port",
    "--served-model-name",
    "--tensor-parallel-size",
    "--data-parallel-size",
    "--max-model-len",
    "--speculative-config",
)


def _int_flag(values: dict[str, str], name: str, default: int | None) -> Any:
    if name not in values:
        return default
    try:
        return int(values[name])
    except ValueError as exc:
        raise EngineConfigError(f"{name.removeprefix('--')}: {values[name]!r} is not an integer") from exc


def _spec_flag(raw: str | None) -> SpeculativeConfig | None:
    if raw is None:
        return None
    try:
        obj = json.loads(raw)
    except json.JSONDecodeError as exc:
        raise EngineConfigError(f"speculative-config: not valid JSON ({exc.msg})") from exc
    return SpeculativeConfig.from_json_obj(obj)


def canonical_json(obj: Any) -> str:
    return json.dumps(obj, sort_keys=True, separators=(",", ":"))
