"""PURE one simulated vLLM replica, fed request by request: the "GPU" behind each pod of the local fleet.

It reuses the fleet simulator's calibrated pieces — the step-time model (`ReplicaPerf`), the prompt classes'
acceptance chains, vLLM's metric families and their text exposition — for a single replica whose traffic
arrives as the local Service routes it, in real time. Time is simulated seconds (the caller's clock);
engine steps are aggregated into chunks of `dt` as in `simulator.fleet`: within a chunk the batch, k and KV
load are held, and each sequence's accepted drafts are drawn from its own chain's mean and variance.
"""

from __future__ import annotations

from collections import deque
from dataclasses import dataclass

import numpy as np
from numpy.typing import NDArray

from specfleet.operator.policy.state import SpecConfig
from specfleet.simulator.acceptance import MAX_POSITIONS, draw_requests
from specfleet.simulator.metrics import E2E, ITL, TPOT, TTFT, FleetCounters, render_exposition
from specfleet.simulator.perf import DraftFamily, ReplicaPerf
from specfleet.simulator.workload import PromptClass

FloatArray = NDArray[np.float64]
ONE = np.zeros(1, np.int64)  # the replica index of every observation: the counters hold one pod
# Prompt work beyond this share of a chunk waits for the next one (chunked prefill shares steps with decode).
PREFILL_SHARE = 0.9


@dataclass(frozen=True)
class Request:
    arrival: float
    prompt: int
    output: int
    chain: FloatArray  # unconditional acceptance by position, drawn for this request


@dataclass(frozen=True)
class Finished:
    """A completed request, as the client saw it (seconds)."""

    arrival: float
    ttft: float
    tpot: float
    e2e: float
    output: int


def accepted_moments(chain: FloatArray, k: int) -> tuple[FloatArray, FloatArray]:
    """Mean and variance of accepted drafts in one verify step, per request (rows of `chain`).

    X = sum_i 1[u < a_i] with one uniform u per step; a_i decreasing gives E[X^2] = sum_i (2i - 1) a_i.
    """
    head = chain[:, :k]
    mean = head.sum(axis=1)
    return mean, np.maximum(head @ (2.0 * np.arange(1, k + 1) - 1.0) - mean**2, 0.0)


class _Batch:
    """The running sequences, struct of arrays."""

    def __init__(self) -> None:
        self.arrival = np.zeros(0)
        self.remaining = np.zeros(0)
        self.ctx = np.zeros(0)
        self.first = np.zeros(0)
        self.output = np.zeros(0)
        self.chain = np.zeros((0, MAX_POSITIONS))

    def __len__(self) -> int:
        return len(self.arrival)

    def add(self, requests: list[Request], first: FloatArray) -> None:
        self.arrival = np.append(self.arrival, [r.arrival for r in requests])
        self.remaining = np.append(self.remaining, [float(r.output) for r in requests])
        self.ctx = np.append(self.ctx, [float(r.prompt) for r in requests])
        self.first = np.append(self.first, first)
        self.output = np.append(self.output, [float(r.output) for r in requests])
        self.chain = np.concatenate((self.chain, np.array([r.chain for r in requests])))

    def keep(self, mask: NDArray[np.bool_]) -> None:
        for name in ("arrival", "remaining", "ctx", "first", "output", "chain"):
            setattr(self, name, getattr(self, name)[mask])


class SimulatedEngine:
    """One pod's engine: a queue, a continuously batched decode loop, and vLLM's counters since start."""

    def __init__(
        self,
        perf: ReplicaPerf,
        family: DraftFamily,
        config: SpecConfig,
        started_at: float,
        rng: np.random.Generator,
        max_batch: int = 256,
        dt: float = 0.1,
    ) -> None:
        self.perf = perf
        self.family = family
        self.config = config
        self.started_at = started_at
        self.rng = rng
        self.max_batch = max_batch
        self.dt = dt
        self.time = started_at
        self.counters = FleetCounters(1, MAX_POSITIONS)
        self.queue: deque[Request] = deque()
        self.batch = _Batch()
        self.finished: list[Finished] = []
        self._prefill_backlog = 0.0

    @property
    def positions(self) -> int:
        """The startup k, which fixes the `position` label set; 0 without a speculative config."""
        return self.config.k if self.config.enabled else 0

    def submit(self, arrival: float, prompt_class: PromptClass, prompt: int, output: int) -> None:
        chain = draw_requests(prompt_class.profile(self.family), 1, self.rng)[0]
        self.queue.append(Request(arrival, prompt, output, chain))

    def take_queue(self) -> list[Request]:
        """The requests not yet admitted (a pod leaving service hands them back to the router)."""
        waiting, self.queue = list(self.queue), deque()
        return waiting

    def requeue(self, requests: list[Request]) -> None:
        self.queue.extend(requests)

    def advance(self, now: float) -> list[Finished]:
        """Run the engine up to `now`; the requests completed meanwhile."""
        while self.time + self.dt <= now:
            self._chunk(self.time)
            self.time += self.dt
        done, self.finished = self.finished, []
        return done

    def exposition(self, pod: str, config_hash: str, model_name: str) -> str:
        """What GET /metrics returns: vLLM's families for this pod, in Prometheus text format."""
        metrics = self.counters.pod(0, pod, config_hash, self.positions, self.started_at)
        return render_exposition(metrics, model_name)

    # ------------------------------------------------------------------ one chunk

    def _admit(self, t: float) -> tuple[list[Request], float]:
        """Fill the batch from the queue while KV blocks remain (vLLM admits on free KV cache)."""
        admitted: list[Request] = []
        used = float(self.batch.ctx.sum())
        while self.queue and len(self.batch) + len(admitted) < self.max_batch:
            head = self.queue[0]
            if head.arrival >= t + self.dt or used + head.prompt + 1 > self.perf.kv_capacity_tokens:
                break
            used += head.prompt + 1
            admitted.append(self.queue.popleft())
        prompt_tokens = float(sum(r.prompt for r in admitted))
        self._prefill_backlog += prompt_tokens * self.perf.target.per_token_s
        prefill_s = min(self._prefill_backlog, PREFILL_SHARE * self.dt)
        self._prefill_backlog -= prefill_s
        self.counters.values["prompt_tokens"][0] += prompt_tokens
        return admitted, prefill_s

    def _chunk(self, t: float) -> None:
        admitted, prefill_s = self._admit(t)
        b = self.batch
        size = len(b) + len(admitted)
        k = self.config.k_at(size)
        kv = float(b.ctx.sum()) + sum(r.prompt for r in admitted)
        family = self.family if self.config.enabled else None
        step = float(self.perf.step_seconds(family, size, k, kv)) if size else self.dt
        if admitted:
            start = np.maximum([r.arrival for r in admitted], t)
            own_prefill = np.array([r.prompt for r in admitted]) * self.perf.target.per_token_s
            first = start + step + own_prefill
            b.add(admitted, first)
            ttft = first - b.arrival[-len(admitted) :]
            self.counters.observe(TTFT, np.repeat(ONE, len(ttft)), ttft)
        if size:
            self._decode(t, step, k, prefill_s)
        values = self.counters.values
        values["running"][0] = len(b)
        values["waiting"][0] = len(self.queue)
        values["kv_usage"][0] = min(float(b.ctx.sum()) / max(self.perf.kv_capacity_tokens, 1), 1.0)

    def _decode(self, t: float, step: float, k: int, prefill_s: float) -> None:
        b, dt = self.batch, self.dt
        # A request admitted mid-chunk decodes only from its start (its first token) onwards.
        frac = np.clip((t + dt - np.maximum(b.first, t)) / dt, 0.0, 1.0)
        steps = (dt - prefill_s) / step * frac
        if k:
            mean, var = accepted_moments(b.chain, k)
        else:
            mean = var = np.zeros(len(b))
        z = self.rng.standard_normal(len(b))
        accepted = np.clip(steps * mean + np.sqrt(steps * var) * z, 0.0, steps * k)
        tokens = steps + accepted
        done = tokens >= b.remaining
        share = np.where(done, b.remaining / np.maximum(tokens, 1e-12), 1.0)
        self._count(steps * share, accepted * share, mean, k, step, np.minimum(tokens, b.remaining))
        if done.any():
            finish = t + dt - frac[done] * dt * (1 - share[done])
            self._finish(done, finish)
        live = ~done
        b.remaining[live] -= tokens[live]
        b.ctx[live] += tokens[live]
        b.keep(live)

    def _count(
        self,
        steps: FloatArray,
        accepted: FloatArray,
        mean: FloatArray,
        k: int,
        step: float,
        generated: FloatArray,
    ) -> None:
        """Advance the counters; spec counters move only on steps that drafted (vLLM skips them at k=0)."""
        c = self.counters.values
        rounds = float(steps.sum())
        c["generation_tokens"][0] += float(generated.sum())
        self.counters.observe(ITL, ONE, np.array([step]), np.array([rounds]))
        if not k:
            return
        c["drafts"][0] += rounds
        c["draft_tokens"][0] += rounds * k
        c["accepted"][0] += float(accepted.sum())
        # Per-position counts split the drawn total by each chain's expected shape.
        expected = max(float((steps * mean).sum()), 1e-12)
        per_pos = (steps[:, None] * self.batch.chain[:, :k]).sum(axis=0) * float(accepted.sum()) / expected
        self.counters.per_pos[0, :k] += per_pos

    def _finish(self, done: NDArray[np.bool_], finish: FloatArray) -> None:
        b = self.batch
        arrival, first, output = b.arrival[done], b.first[done], b.output[done]
        tpot = (finish - first) / np.maximum(output - 1, 1)
        e2e = finish - arrival
        replica = np.repeat(ONE, len(tpot))
        self.counters.observe(TPOT, replica, tpot)
        self.counters.observe(E2E, replica, e2e)
        self.counters.values["success"][0] += len(tpot)
        self.finished += [
            Finished(float(a), float(f - a), float(tp), float(e), int(o))
            for a, f, tp, e, o in zip(arrival, first, tpot, e2e, output, strict=True)
        ]
