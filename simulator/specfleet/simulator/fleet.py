"""PURE discrete-time fleet simulation: arrivals, routing, continuous batching, speculation, rolling restarts.

Engine steps are aggregated into chunks of `dt` seconds: within a chunk a replica's batch, k and KV load are
held, the number of engine steps is dt / step time, and each sequence's accepted drafts over those steps are
drawn from the mean and variance of its own acceptance chain (normal approximation of the sum of per-step
draws). Requests join mid-chunk at their arrival time and finish mid-chunk at the interpolated step, so
latencies are not quantised to dt. The calibration tests run through this same code with dt as used in runs.
"""

from __future__ import annotations

from collections import deque
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Protocol

import numpy as np
from numpy.typing import NDArray

from specfleet.operator.policy.state import SpecConfig
from specfleet.simulator.acceptance import MAX_POSITIONS, draw_requests
from specfleet.simulator.config import config_hash, label
from specfleet.simulator.metrics import E2E, ITL, TPOT, TTFT, FleetCounters, PodMetrics
from specfleet.simulator.perf import DraftFamily, ReplicaPerf
from specfleet.simulator.workload import PromptClass, Requests

FloatArray = NDArray[np.float64]
IntArray = NDArray[np.int64]
RESTARTING = "restarting"


@dataclass(frozen=True)
class FleetSpec:
    """The simulated deployment."""

    perf: ReplicaPerf
    family: DraftFamily
    replicas: int
    max_batch: int = 1024  # vLLM's max_num_seqs default on 80+ GB GPUs; the KV cache usually binds first
    restart_seconds: float = 180.0  # a pod out of service for a config change (model load + warm-up)
    # Roll with a surge pod (maxSurge 1, maxUnavailable 0): the old pod serves until its replacement is Ready.
    surge: bool = False
    dt: float = 0.5
    interval: float = 30.0  # how often the controller runs
    model_name: str = "simulated"


class Controller(Protocol):
    """Chooses the fleet's speculation config from what production would see: the pods' metrics."""

    def initial(self) -> SpecConfig: ...

    def observe(self, now: float, pods: Sequence[PodMetrics], ready: Sequence[bool], current: SpecConfig) -> SpecConfig:
        """The config the fleet should run; returning a different one starts a rolling restart."""
        ...


@dataclass(frozen=True)
class TimelinePoint:
    time: float
    config: str  # the target config
    qps: float  # arrivals/s over the last interval
    running_per_replica: float
    ready: int


@dataclass
class RunResult:
    """Per-request outcomes (NaN where unfinished) and the fleet's history."""

    requests: Requests
    ttft: FloatArray
    tpot: FloatArray
    e2e: FloatArray
    finish: FloatArray
    duration: float
    restarts: int = 0  # restart-bound changes (rolled pod by pod)
    live_changes: int = 0  # batch-size table changes applied inside the running engines
    timeline: list[TimelinePoint] = field(default_factory=list)
    config_seconds: dict[str, float] = field(default_factory=dict)  # replica-seconds in each config
    prefill_seconds: float = 0.0  # engine time spent on prompt tokens, fleet-wide


@dataclass
class _Slots:
    """Per replica x batch slot state; req < 0 is a free slot."""

    req: IntArray
    remaining: FloatArray
    ctx: FloatArray
    frac: FloatArray  # active time this chunk in units of dt (>1: it also runs the time its slot freed early)
    free_at: FloatArray  # when the slot's last request finished
    first_token: FloatArray
    chain: FloatArray  # per-request unconditional acceptance by position
    # Per slot, for every k: sum_{i<=k} a_i and sum_{i<=k} (2i-1) a_i (mean, second moment of accepted).
    mean_by_k: FloatArray
    square_by_k: FloatArray

    @classmethod
    def empty(cls, replicas: int, slots: int) -> _Slots:
        shape = (replicas, slots)
        return cls(
            req=np.full(shape, -1, np.int64),
            remaining=np.zeros(shape),
            ctx=np.zeros(shape),
            frac=np.zeros(shape),
            free_at=np.zeros(shape),
            first_token=np.zeros(shape),
            chain=np.zeros((*shape, MAX_POSITIONS)),
            mean_by_k=np.zeros((*shape, MAX_POSITIONS + 1)),
            square_by_k=np.zeros((*shape, MAX_POSITIONS + 1)),
        )

    def widened(self, width: int) -> _Slots:
        """The same slots with room for `width` per replica (arrays start narrow: most runs need few)."""
        grown = _Slots.empty(self.req.shape[0], width)
        used = self.req.shape[1]
        for name in (
            "req",
            "remaining",
            "ctx",
            "frac",
            "free_at",
            "first_token",
            "chain",
            "mean_by_k",
            "square_by_k",
        ):
            getattr(grown, name)[:, :used] = getattr(self, name)
        return grown

    def set_chains(self, rows: IntArray, cols: IntArray, chain: FloatArray) -> None:
        self.chain[rows, cols] = chain
        zero = np.zeros((len(chain), 1))
        self.mean_by_k[rows, cols] = np.concatenate((zero, np.cumsum(chain, axis=1)), axis=1)
        odd = 2.0 * np.arange(MAX_POSITIONS) + 1.0
        self.square_by_k[rows, cols] = np.concatenate((zero, np.cumsum(chain * odd, axis=1)), axis=1)


@dataclass(frozen=True)
class _Decode:
    """One chunk's decode outcome per replica (step, k) and per slot (the rest)."""

    step: FloatArray
    k: IntArray
    steps: FloatArray
    mean: FloatArray
    accepted: FloatArray
    tokens: FloatArray
    done: NDArray[np.bool_]
    share: FloatArray


ProgressFn = Callable[[float, float], None]


class FleetSimulation:
    """Runs of one fleet against one request stream, one run per controller.

    Several controllers simulate several independent fleets side by side (every pod of every fleet in the
    same arrays, each fleet routing its own copy of the requests): one pass over the trace serves all the
    static baselines of an evaluation, which is where the simulator spends its time.
    """

    def __init__(
        self,
        spec: FleetSpec,
        requests: Requests,
        classes: Sequence[PromptClass],
        controller: Controller | Sequence[Controller],
        rng: np.random.Generator,
    ) -> None:
        self.spec = spec
        self.req = requests
        self.classes = list(classes)
        self.controllers = list(controller) if isinstance(controller, Sequence) else [controller]
        self.rng = rng
        n_groups, per = len(self.controllers), spec.replicas
        self.pods = n_groups * per
        self.targets = [c.initial() for c in self.controllers]
        self.configs = [self.targets[r // per] for r in range(self.pods)]
        self.started = [0.0] * self.pods
        # The k each pod's engine started with: its drafter, graphs and lookahead KV are sized for it.
        self.startup_k = [c.k if c.enabled else 0 for c in self.configs]
        self.counters = FleetCounters(self.pods, MAX_POSITIONS)
        self.queues: list[deque[int]] = [deque() for _ in range(self.pods)]
        self.slots = _Slots.empty(self.pods, min(spec.max_batch, 32))
        self.prefill_backlog = np.zeros(self.pods)  # seconds of prompt processing not yet done
        self.restarting: list[int | None] = [None] * n_groups  # the pod of each fleet now restarting
        self.restart_until = [0.0] * n_groups
        self.round_robin = [0] * n_groups
        self.next_arrival = 0
        # Per fleet x request outcomes; each run's arrays are rows (views) of these.
        self.outcomes = {name: np.full((n_groups, len(requests)), np.nan) for name in ("ttft", "tpot", "e2e", "finish")}
        self.results = [
            RunResult(requests=requests, duration=0.0, **{name: rows[g] for name, rows in self.outcomes.items()})
            for g in range(n_groups)
        ]
        self.group_of = np.arange(self.pods) // per

    @property
    def result(self) -> RunResult:
        """The run of the first (or only) controller."""
        return self.results[0]

    @property
    def controller(self) -> Controller:
        return self.controllers[0]

    def _group(self, group: int) -> range:
        return range(group * self.spec.replicas, (group + 1) * self.spec.replicas)

    # ------------------------------------------------------------------ pods and restarts

    def pod(self, replica: int) -> PodMetrics:
        """What a scrape of the pod reads now (`replica` counts across fleets: fleet g has g·replicas + i)."""
        self._gauges()  # gauges are read, not accumulated: computed when scraped
        config = self.configs[replica]
        positions = self.startup_k[replica] if config.enabled else 0
        name, started = f"pod-{replica % self.spec.replicas}", self.started[replica]
        return self.counters.pod(replica, name, config_hash(config), positions, started)

    def live(self, replica: int, config: SpecConfig) -> bool:
        """Whether the pod can switch to `config` without a restart: a new batch-size table within what its
        engine started with (drafter loaded, the same method, k no higher than its startup k)."""
        current = self.configs[replica]
        return current.enabled and config.enabled and config.k <= self.startup_k[replica]

    def _roll(self, now: float, group: int) -> None:
        """Live where the change allows it; otherwise a rolling restart, one replica at a time: out of service
        for restart_seconds, back on the target."""
        target, restarting = self.targets[group], self.restarting[group]
        if restarting is not None and now >= self.restart_until[group]:
            self.configs[restarting] = target
            self.startup_k[restarting] = target.k if target.enabled else 0
            self.counters.reset(restarting)
            self.started[restarting] = now
            self.restarting[group] = restarting = None
        for r in self._group(group):
            if r != restarting and self.configs[r] != target and self.live(r, target):
                self.configs[r] = target  # same process: counters and start time stay
        if restarting is None:
            stale = [r for r in self._group(group) if self.configs[r] != target]
            if stale:
                r = stale[0]
                self.restarting[group], self.restart_until[group] = r, now + self.spec.restart_seconds
                if not self.spec.surge:
                    # The pod stops taking traffic; what it has queued goes back to the router.
                    waiting, self.queues[r] = np.array(self.queues[r], np.int64), deque()
                    self._route(waiting, group)

    def _out(self, replica: int) -> bool:
        """Out of service: restarting without a surge pod standing in for it."""
        return replica == self.restarting[int(self.group_of[replica])] and not self.spec.surge

    def _in_service(self, group: int) -> list[int]:
        replicas = [r for r in self._group(group) if not self._out(r)]
        return replicas or list(self._group(group))

    def _route(self, ids: IntArray, group: int) -> None:
        """Round-robin over the fleet's pods in service (a Kubernetes Service spreading connections)."""
        targets = self._in_service(group)
        pick = (self.round_robin[group] + np.arange(len(ids))) % len(targets)
        self.round_robin[group] = (self.round_robin[group] + len(ids)) % len(targets)
        for index, r in enumerate(targets):
            self.queues[r].extend(ids[pick == index].tolist())

    # ------------------------------------------------------------------ admission

    def _admit(self, t: float) -> tuple[FloatArray, IntArray, IntArray]:
        """Fill free slots from each in-service pod's queue; prefill tokens per replica and the new slots."""
        s = self.slots
        prefill = np.zeros(self.pods)
        rows: list[int] = []
        cols: list[int] = []
        ids: list[int] = []
        for r in range(self.pods):
            queue = self.queues[r]
            if not queue or self._out(r):
                continue
            free = np.flatnonzero(s.req[r] < 0)
            running = s.req.shape[1] - len(free)
            wanted = min(len(queue), self.spec.max_batch - running)
            if wanted > len(free):
                self.slots = s = s.widened(min(self.spec.max_batch, max(2 * s.req.shape[1], running + wanted)))
                free = np.flatnonzero(s.req[r] < 0)
            n = self._admissible(r, wanted)
            rows += [r] * n
            cols += free[:n].tolist()
            ids += [queue.popleft() for _ in range(n)]
        if not ids:
            return prefill, np.zeros(0, np.int64), np.zeros(0, np.int64)
        r_idx, c_idx, req = np.array(rows), np.array(cols), np.array(ids, np.int64)
        # A request starts when both it and its slot are there; a slot freed mid-chunk hands its unused time
        # to the next request (frac > 1), so chunking does not leave batch slots idle.
        start = np.maximum(np.maximum(self.req.arrival[req], s.free_at[r_idx, c_idx]), t - self.spec.dt)
        s.req[r_idx, c_idx] = req
        s.remaining[r_idx, c_idx] = self.req.output[req]
        s.ctx[r_idx, c_idx] = self.req.prompt[req]
        s.frac[r_idx, c_idx] = (t + self.spec.dt - start) / self.spec.dt
        s.set_chains(r_idx, c_idx, self._draw_chains(req))
        np.add.at(prefill, r_idx, self.req.prompt[req])
        return prefill, r_idx, c_idx

    def _admissible(self, replica: int, n: int) -> int:
        """How many of the queue's first n requests fit in the KV cache (vLLM admits on free KV blocks)."""
        if n == 0:
            return 0
        s, queue = self.slots, self.queues[replica]
        used = float(np.where(s.req[replica] >= 0, s.ctx[replica], 0.0).sum())
        head = np.fromiter((queue[i] for i in range(n)), np.int64, n)
        need = used + np.cumsum(self.req.prompt[head] + 1)
        return int(np.searchsorted(need, self.spec.perf.kv_capacity_tokens, side="right"))

    def _draw_chains(self, req: IntArray) -> FloatArray:
        chains = np.zeros((len(req), MAX_POSITIONS))
        klass = self.req.klass[req]
        for index, prompt_class in enumerate(self.classes):
            members = np.flatnonzero(klass == index)
            if len(members):
                profile = prompt_class.profile(self.spec.family)
                chains[members] = draw_requests(profile, len(members), self.rng)
        return chains

    # ------------------------------------------------------------------ one chunk

    def _step_times(self, batch: FloatArray, kv: FloatArray) -> tuple[FloatArray, IntArray]:
        """Engine step seconds and k per replica at this chunk's batch."""
        enabled = np.array([c.enabled for c in self.configs])
        k = np.array(
            [c.k_at(b) for c, b in zip(self.configs, batch, strict=True)],
            np.int64,
        )
        perf = self.spec.perf
        spec = perf.step_seconds(self.spec.family, batch, k, kv)
        off = perf.step_seconds(None, batch, 0, kv)
        return np.where(enabled, spec, off), np.where(enabled, k, 0)

    def _decode(self, occupancy: FloatArray, frac: FloatArray, prefill_s: FloatArray, z: FloatArray) -> _Decode:
        """Tokens each slot generates this chunk when the replicas' batches hold `occupancy` of the chunk."""
        s, dt = self.slots, self.spec.dt
        step, k = self._step_times(occupancy.sum(axis=1), (occupancy * s.ctx).sum(axis=1))
        steps = ((dt - prefill_s) / step)[:, None] * frac
        # Accepted drafts over `steps` verify rounds: sum of per-step draws, normal approximation.
        rows, cols = np.indices(s.req.shape, sparse=True)
        mean = s.mean_by_k[rows, cols, k[:, None]]
        var = np.maximum(s.square_by_k[rows, cols, k[:, None]] - mean**2, 0.0)
        accepted = np.clip(steps * mean + np.sqrt(steps * var) * z, 0.0, steps * k[:, None])
        tokens = steps + accepted
        done = (s.req >= 0) & (tokens >= s.remaining)
        share = np.where(done, s.remaining / np.maximum(tokens, 1e-12), 1.0)
        return _Decode(step, k, steps, mean, accepted, tokens, done, share)

    def _chunk(self, t: float) -> None:
        prefill, new_r, new_c = self._admit(t)  # first: admission may widen the slot arrays
        spec, s, dt = self.spec, self.slots, self.spec.dt
        active = s.req >= 0
        frac = np.where(active, s.frac, 0.0)
        # Prompt work beyond 90 % of a chunk waits for the next (chunked prefill shares steps with decode).
        self.prefill_backlog += prefill * spec.perf.target.per_token_s
        prefill_s = np.minimum(self.prefill_backlog, 0.9 * dt)
        self.prefill_backlog -= prefill_s
        for group, seconds in enumerate(np.bincount(self.group_of, weights=prefill_s, minlength=len(self.results))):
            self.results[group].prefill_seconds += float(seconds)
        z = self.rng.standard_normal(frac.shape)
        # Two passes: the second sizes each batch by the time its members were really in it (the ones that
        # finish mid-chunk leave early), so the step time does not depend on the chunk length.
        first = self._decode(np.minimum(frac, 1.0), frac, prefill_s, z)
        d = self._decode(np.minimum(frac, 1.0) * first.share, frac, prefill_s, z)
        if len(new_r):
            self._first_tokens(t, new_r, new_c, d.step)
        generated = np.minimum(d.tokens, s.remaining)
        self._count(d.steps * d.share, d.accepted * d.share, d.mean, d.k, d.step, generated, prefill)
        self._finish(t, d.done, d.share, frac)
        s.remaining = np.where(active & ~d.done, s.remaining - d.tokens, s.remaining)
        s.ctx = np.where(active, s.ctx + d.tokens, s.ctx)
        s.frac[:] = 1.0

    def _first_tokens(self, t: float, new_r: IntArray, new_c: IntArray, step: FloatArray) -> None:
        """First token of each admitted request: its start, its own prompt, one engine step."""
        s = self.slots
        req = s.req[new_r, new_c]
        own_prefill = self.req.prompt[req] * self.spec.perf.target.per_token_s
        first = t + (1 - s.frac[new_r, new_c]) * self.spec.dt + step[new_r] + own_prefill
        s.first_token[new_r, new_c] = first
        ttft = first - self.req.arrival[req]
        self._write(new_r, req, "ttft", ttft)
        self.counters.observe(TTFT, new_r, ttft)

    def _gauges(self) -> None:
        s, gauges = self.slots, self.counters.values
        running = s.req >= 0
        gauges["running"][:] = running.sum(axis=1)
        gauges["waiting"][:] = [len(q) for q in self.queues]
        kv_used = np.where(running, s.ctx, 0.0).sum(axis=1)
        gauges["kv_usage"][:] = np.minimum(kv_used / self.spec.perf.kv_capacity_tokens, 1.0)

    def _count(
        self,
        steps: FloatArray,
        accepted: FloatArray,
        mean: FloatArray,
        k: IntArray,
        step: FloatArray,
        generated: FloatArray,
        prefill: FloatArray,
    ) -> None:
        """Advance every pod's counters; per-position counts split the drawn total by the chains' means."""
        c = self.counters.values
        rounds = steps.sum(axis=1)
        drafting = k > 0  # spec counters move only on steps that drafted (vLLM skips them at k=0)
        accepted_total = accepted.sum(axis=1)
        c["generation_tokens"] += generated.sum(axis=1)
        c["prompt_tokens"] += prefill
        c["drafts"] += np.where(drafting, rounds, 0.0)
        c["draft_tokens"] += rounds * k
        c["accepted"] += accepted_total
        expected_total = np.maximum((steps * mean).sum(axis=1), 1e-12)
        scale = np.where(drafting, accepted_total / expected_total, 0.0)
        drafted = np.arange(MAX_POSITIONS)[None, :] < k[:, None]
        self.counters.per_pos += np.einsum("rs,rsp->rp", steps, self.slots.chain) * drafted * scale[:, None]
        self.counters.observe(ITL, np.arange(self.pods), step, rounds)

    def _write(self, rows: IntArray, req: IntArray, name: str, values: FloatArray) -> None:
        """Per-request outcomes into the run of each row's fleet."""
        self.outcomes[name][self.group_of[rows], req] = values

    def _finish(self, t: float, done: NDArray[np.bool_], share: FloatArray, frac: FloatArray) -> None:
        s, dt = self.slots, self.spec.dt
        r_idx, c_idx = np.nonzero(done)
        if not len(r_idx):
            return
        req = s.req[r_idx, c_idx]
        finish = t + dt - frac[r_idx, c_idx] * dt * (1 - share[r_idx, c_idx])
        s.free_at[r_idx, c_idx] = finish
        tpot = (finish - s.first_token[r_idx, c_idx]) / np.maximum(self.req.output[req] - 1, 1)
        e2e = finish - self.req.arrival[req]
        for name, values in (("finish", finish), ("tpot", tpot), ("e2e", e2e)):
            self._write(r_idx, req, name, values)
        self.counters.values["success"] += np.bincount(r_idx, minlength=self.pods)
        self.counters.observe(TPOT, r_idx, tpot)
        self.counters.observe(E2E, r_idx, e2e)
        s.req[r_idx, c_idx] = -1

    # ------------------------------------------------------------------ the run

    def _arrivals(self, t_end: float) -> None:
        hi = int(np.searchsorted(self.req.arrival, t_end, side="left"))
        if hi > self.next_arrival:
            for group in range(len(self.results)):
                self._route(np.arange(self.next_arrival, hi), group)
            self.next_arrival = hi

    def _control(self, now: float, since: float, arrived_before: int, group: int) -> None:
        pods = self._group(group)
        ready = [not self._out(r) for r in pods]
        wanted = self.controllers[group].observe(now, [self.pod(r) for r in pods], ready, self.targets[group])
        result = self.results[group]
        if wanted != self.targets[group]:
            if all(self.live(r, wanted) for r in pods if r != self.restarting[group]):
                result.live_changes += 1
            else:
                result.restarts += 1
            self.targets[group] = wanted
        running = float((self.slots.req[pods.start : pods.stop] >= 0).sum()) / max(self.spec.replicas, 1)
        qps = (self.next_arrival - arrived_before) / max(now - since, 1e-9)
        result.timeline.append(TimelinePoint(now, label(wanted), qps, running, sum(ready)))

    def run(self, duration: float, progress: ProgressFn | None = None) -> RunResult:
        """Simulate `duration` seconds; every fleet's run is in `results`, the first one is returned."""
        spec = self.spec
        chunks = int(np.ceil(duration / spec.dt))
        per_interval = max(round(spec.interval / spec.dt), 1)
        groups = range(len(self.results))
        since, arrived_before = 0.0, 0
        for i in range(chunks):
            t = i * spec.dt
            for group in groups:
                self._roll(t, group)
            self._arrivals(t + spec.dt)
            self._chunk(t)
            for r, config in enumerate(self.configs):
                seconds = self.results[int(self.group_of[r])].config_seconds
                name = RESTARTING if self._out(r) else label(config)
                seconds[name] = seconds.get(name, 0.0) + spec.dt
            if (i + 1) % per_interval == 0:
                for group in groups:
                    self._control(t + spec.dt, since, arrived_before, group)
                since, arrived_before = t + spec.dt, self.next_arrival
                if progress is not None:
                    progress(t + spec.dt, duration)
        for result in self.results:
            result.duration = chunks * spec.dt
        return self.result
