"""PURE closed-batch measurements, as the calibration sources measured: a batch held full, throughput read.

They run through the fleet simulation itself (one replica, max batch = bs, a queue that never empties), so
the calibration tests check the code that produces the policy results, chunking included.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from specfleet.operator.policy.state import SpecConfig
from specfleet.simulator.acceptance import AcceptanceProfile, draw_requests
from specfleet.simulator.config import static, table
from specfleet.simulator.controllers import Fixed
from specfleet.simulator.fleet import FleetSimulation, FleetSpec
from specfleet.simulator.hardware import H100, LLAMA_8B, LLAMA_70B, QWEN3_8B, ModelShape
from specfleet.simulator.perf import DraftFamily, ReplicaPerf, replica_perf
from specfleet.simulator.workload import (
    GSM8K,
    INSTRUCTCODER,
    SHAREGPT,
    LogNormalLength,
    PromptClass,
    Requests,
)


@dataclass(frozen=True)
class ClosedBatch:
    """Generated tokens per second and the pod's acceptance counters at a held batch size."""

    tokens_per_second: float  # per second of decoding (prompt processing excluded, as the sources measure decode)
    acceptance_length: float  # 1 + accepted / drafts; 1.0 without speculation
    acceptance_by_position: tuple[float, ...]


def closed_batch(
    perf: ReplicaPerf,
    prompt_class: PromptClass,
    family: DraftFamily,
    batch: int,
    config: SpecConfig,
    seconds: float = 60.0,
    seed: int = 0,
    dt: float = 0.5,
) -> ClosedBatch:
    rng = np.random.default_rng(seed)
    # Enough requests, all queued at t=0, that the batch never drains: a bound on what the batch can generate.
    tokens_bound = seconds * batch * (config.k + 1) / perf.target.fixed_s
    n = batch + int(tokens_bound / prompt_class.output.minimum_mean())
    requests = Requests(
        arrival=np.zeros(n),
        klass=np.zeros(n, np.int64),
        prompt=prompt_class.prompt.draw(n, rng),
        output=prompt_class.output.draw(n, rng),
    )
    spec = FleetSpec(perf=perf, family=family, replicas=1, max_batch=batch, dt=dt, interval=seconds)
    sim = FleetSimulation(spec, requests, [prompt_class], Fixed(config), rng)
    result = sim.run(seconds)
    pod = sim.pod(0)
    drafts = max(pod.drafts, 1e-12)
    return ClosedBatch(
        tokens_per_second=pod.generation_tokens / (result.duration - result.prefill_seconds),
        acceptance_length=1.0 + pod.accepted / drafts if pod.spec_positions else 1.0,
        acceptance_by_position=tuple(float(x) / drafts for x in pod.accepted_per_pos),
    )


def speedup(
    perf: ReplicaPerf, prompt_class: PromptClass, family: DraftFamily, batch: int, k: int, seed: int = 0
) -> float:
    """Generated-token throughput at k ÷ without speculation, same batch (the sources' "speed-up")."""
    on = closed_batch(perf, prompt_class, family, batch, static(k), seed=seed)
    off = closed_batch(perf, prompt_class, family, batch, SpecConfig.off(), seed=seed)
    return on.tokens_per_second / off.tokens_per_second


def per_step_oracle_speedup(
    perf: ReplicaPerf, prompt_class: PromptClass, family: DraftFamily, batch: int, k_max: int = 5,
    steps: int = 400, seed: int = 0,
) -> float:  # fmt: skip
    """SpecDecode-Bench's per-step oracle: every sequence drafts exactly the tokens it will have accepted.

    Each step draws every sequence's run of accepted drafts from its own chain (capped at `k_max`); the step
    verifies only those, and the drafter runs as many passes as the longest run. Not reachable by any
    controller; a ceiling on what choosing k can give.
    """
    rng = np.random.default_rng(seed)
    profile = prompt_class.profile(family)
    kv = batch * (prompt_class.prompt.mean + prompt_class.output.mean / 2)
    chains = draw_requests(profile, steps * batch, rng)[:, :k_max].reshape(steps, batch, k_max)
    runs = (chains > rng.random((steps, batch, 1))).sum(axis=2)
    tokens = float((runs + 1).sum())
    draft = perf.draft_cost(family)
    target = perf.target.seconds(batch + runs.sum(axis=1), kv)
    mean_k = runs.mean(axis=1)
    drafter = draft.seconds(batch, mean_k, kv) + (runs.max(axis=1) - mean_k) * draft.per_pass_s
    on = float((target + drafter + perf.cpu_overhead_s).sum())
    off = float(perf.step_seconds(None, batch, 0, kv)) * steps
    return (tokens / on) / (batch * steps / off)


@dataclass(frozen=True)
class Row:
    """A published row: speed-ups of one setting at several batch sizes (k fixed, or the per-step oracle)."""

    name: str
    deployment: tuple[ModelShape, int, str]  # target, TP size, EAGLE head kind
    prompt_class: PromptClass
    family: DraftFamily
    k: int | None  # None: the per-step oracle
    batches: tuple[int, ...]
    published: tuple[float, ...]


@dataclass(frozen=True)
class Cell:
    row: str
    batch: int
    published: float
    model: float
    tolerance: float

    @property
    def residual(self) -> float:
        return self.model - self.published

    @property
    def within(self) -> bool:
        return abs(self.residual) <= self.tolerance + 1e-9


FIG1 = (1, 16, 64, 128)
FIG10 = (1, 8, 16, 32, 64, 128)
EAGLE, DRAFT = DraftFamily.EAGLE, DraftFamily.DRAFT_MODEL
# Published speed-ups (SpecDecode-Bench, arXiv:2601.11580: Fig. 1 at k=3 and Fig. 10's fixed-k rows; vLLM
# 0.10.1 on H100). The InstructCoder row uses the `instructcoder` class, whose acceptance is assumed.
E3, E1 = "eagle3", "eagle"
ROWS = (
    Row("8B GSM8K EAGLE", (LLAMA_8B, 1, E3), GSM8K, EAGLE, 3, FIG1, (1.73, 1.69, 1.48, 1.21)),
    Row("8B ShareGPT EAGLE-3", (LLAMA_8B, 1, E3), SHAREGPT, EAGLE, 3, FIG1, (1.71, 1.68, 1.55, 1.29)),
    Row("70B TP4 ShareGPT EAGLE", (LLAMA_70B, 4, E1), SHAREGPT, EAGLE, 3, FIG1, (1.96, 1.77, 1.50, 1.06)),
    Row("70B TP4 GSM8K EAGLE", (LLAMA_70B, 4, E1), GSM8K, EAGLE, 3, FIG1, (1.91, 1.75, 1.42, 1.01)),
    Row("8B InstructCoder EAGLE-3", (LLAMA_8B, 1, E3), INSTRUCTCODER, EAGLE, 3, FIG1, (2.00, 1.90, 1.57, 1.30)),
    Row("Qwen3-8B ShareGPT 0.6B draft", (QWEN3_8B, 1, E3), SHAREGPT, DRAFT, 3, FIG1, (1.35, 1.31, 1.13, 0.92)),
    Row("8B ShareGPT EAGLE k=1", (LLAMA_8B, 1, E3), SHAREGPT, EAGLE, 1, FIG10, (1.26, 1.25, 1.24, 1.22, 1.20, 1.16)),
    Row("8B ShareGPT EAGLE k=3", (LLAMA_8B, 1, E3), SHAREGPT, EAGLE, 3, FIG10, (1.74, 1.67, 1.60, 1.50, 1.37, 1.23)),
    Row("8B ShareGPT EAGLE k=5", (LLAMA_8B, 1, E3), SHAREGPT, EAGLE, 5, FIG10, (1.93, 1.80, 1.68, 1.51, 1.31, 1.12)),
    Row(
        "8B ShareGPT per-step oracle", (LLAMA_8B, 1, E3), SHAREGPT, EAGLE, None, FIG10,
        (2.10, 2.03, 1.97, 1.88, 1.77, 1.64),
    ),
)  # fmt: skip
# vLLM issue #49548: TPOT of a table whose rows are all k=0, against the engine started without speculation.
TAX_PUBLISHED = ((2, 0.066), (189, 0.216))


def row_perf(row: Row) -> ReplicaPerf:
    model, tp, head = row.deployment
    return replica_perf(model, H100, tp, eagle_head=head)


def row_cells(row: Row, seeds: int = 3) -> list[Cell]:
    """Model against published for every batch of a row (bs=1 averaged over seeds: few requests a minute)."""
    perf, cells = row_perf(row), []
    for batch, published in zip(row.batches, row.published, strict=True):
        runs = range(seeds if batch == 1 else 1)
        if row.k is None:
            model = per_step_oracle_speedup(perf, row.prompt_class, row.family, batch, k_max=7)
        else:
            model = float(np.mean([speedup(perf, row.prompt_class, row.family, batch, row.k, s) for s in runs]))
        cells.append(Cell(row.name, batch, published, model, 0.10 if batch == 1 else 0.15))
    return cells


def tax_cells(perf: ReplicaPerf, prompt_class: PromptClass, family: DraftFamily) -> list[Cell]:
    """The k=0 drafter tax through the fleet: TPOT of an all-k=0 table over TPOT with speculation off."""
    cells = []
    for batch, published in TAX_PUBLISHED:
        zero = closed_batch(perf, prompt_class, family, batch, table(((1 << 20, 0),)))
        off = closed_batch(perf, prompt_class, family, batch, SpecConfig.off())
        cells.append(
            Cell("k=0 drafter tax", batch, published, off.tokens_per_second / zero.tokens_per_second - 1, 0.02)
        )
    return cells


def residual_table(cells: list[Cell]) -> str:
    """Markdown: one line per row, model (residual) per batch size."""
    lines = ["| row | " + " | ".join("bs / published / model / residual" for _ in range(1)) + " |", "|---|---|"]
    by_row: dict[str, list[Cell]] = {}
    for cell in cells:
        by_row.setdefault(cell.row, []).append(cell)
    for name, row in by_row.items():
        text = "; ".join(
            f"{c.batch}: {c.published:.3f} → {c.model:.3f} ({c.residual:+.3f}{'' if c.within else ' OUT'})" for c in row
        )
        lines.append(f"| {name} | {text} |")
    return "\n".join(lines)


@dataclass(frozen=True)
class SpeedupPoint:
    """`specfleet simulate speedup`: one batch size of a closed-batch comparison."""

    batch: int
    k: int
    speedup: float
    acceptance_length: float
    tokens_per_second_on: float
    tokens_per_second_off: float


def traffic_class(
    acceptance: tuple[float, ...], prompt_tokens: int, output_tokens: int, family: DraftFamily
) -> PromptClass:
    """A prompt class with the caller's per-position acceptance (a_i cumulative) and lengths."""
    profile = AcceptanceProfile(family, acceptance, spread=0.6 if family is DraftFamily.NGRAM else 0.11)
    return PromptClass(
        name="custom",
        eagle=profile,
        ngram=profile,
        draft=profile,
        prompt=LogNormalLength(mean=prompt_tokens, sigma=0.3, maximum=max(4 * prompt_tokens, 16)),
        output=LogNormalLength(mean=output_tokens, sigma=0.3, maximum=max(4 * output_tokens, 16)),
    )


def speedup_curve(
    perf: ReplicaPerf, prompt_class: PromptClass, family: DraftFamily, config: SpecConfig, batches: tuple[int, ...],
    seeds: int = 3,
) -> list[SpeedupPoint]:  # fmt: skip
    """Closed-batch throughput of `config` over speculation off at each batch size."""
    points = []
    for batch in batches:
        runs = range(seeds if batch < 8 else 1)
        on = [closed_batch(perf, prompt_class, family, batch, config, seed=s) for s in runs]
        off = [closed_batch(perf, prompt_class, family, batch, SpecConfig.off(), seed=s) for s in runs]
        tps_on = float(np.mean([r.tokens_per_second for r in on]))
        tps_off = float(np.mean([r.tokens_per_second for r in off]))
        length = float(np.mean([r.acceptance_length for r in on]))
        points.append(SpeedupPoint(batch, config.k_at(batch), tps_on / tps_off, length, tps_on, tps_off))
    return points
