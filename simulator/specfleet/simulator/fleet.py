"""PURE discrete-time fleet simulation: arrivals, routing, continuous batching, speculation, rolling restarts.

Engine steps are aggregated into chunks of `dt` seconds: within a chunk a replica's batch, k and KV load are
held, the number of engine steps is dt / step time, and each sequence's accepted drafts over those steps are
drawn from the mean and variance of its own acceptance chain (normal approximation of the sum of per-step
draws). Requests join mid-chunk at their arrival time and finish mid-chunk at the interpolated step, so
latencies are not quantised to dt. The calibration tests run through this same code with dt as used in runs.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any, Protocol, overload

import numpy as np
from numpy.typing import NDArray

from specfleet.operator.policy.state import SpecConfig
from specfleet.simulator.acceptance import MAX_POSITIONS, draw_requests
from specfleet.simulator.config import config_hash, label
from specfleet.simulator.metrics import E2E, ITL, TPOT, TTFT, FleetCounters, PodMetrics
from specfleet.simulator.perf import DraftFamily, ReplicaPerf
from specfleet.simulator.queues import PodQueues, segment_positions
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
    # The k a pod started with a batch-size table is sized for: the deployment's maxSpeculativeTokens, where
    # the operator starts live-table fleets so that any table within it is pushed without a restart (0: the
    # table's own largest k).
    ceiling_k: int = 0


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
    finish: FloatArray
    duration: float
    restarts: int = 0  # restart-bound changes (rolled pod by pod)
    live_changes: int = 0  # batch-size table changes applied inside the running engines
    timeline: list[TimelinePoint] = field(default_factory=list)
    config_seconds: dict[str, float] = field(default_factory=dict)  # replica-seconds in each config
    prefill_seconds: float = 0.0  # engine time spent on prompt tokens, fleet-wide

    @property
    def e2e(self) -> FloatArray:
        """Arrival to last token (NaN where unfinished): derived, not stored — one fewer array per fleet of
        every request is memory a day's run does not touch."""
        e2e: FloatArray = self.finish - self.requests.arrival
        return e2e


@dataclass
class _Running:
    """The sequences in every pod's batch, one entry each (any order): the arrays hold only what runs, so a
    chunk's work follows the fleet's load, not its largest batch."""

    pod: IntArray
    req: IntArray
    remaining: FloatArray
    ctx: FloatArray
    frac: FloatArray  # active time this chunk in units of dt (>1: it also runs the time a finished one left)
    first_token: FloatArray

    @classmethod
    def empty(cls) -> _Running:
        ids, times = np.zeros(0, np.int64), np.zeros(0)
        return cls(ids, ids, times, times, times, times)

    def joined(self, other: _Running) -> _Running:
        return _Running(*(np.concatenate((a, b)) for a, b in zip(self._arrays(), other._arrays(), strict=True)))

    def kept(self, keep: NDArray[np.bool_]) -> _Running:
        return _Running(*(a[keep] for a in self._arrays()))

    def _arrays(self) -> tuple[NDArray[Any], ...]:
        return (self.pod, self.req, self.remaining, self.ctx, self.frac, self.first_token)


@dataclass(frozen=True)
class _Chains:
    """Every request's acceptance chain and, for every k, the mean and variance of its accepted drafts per
    step, position-major: a chunk gathers one position (or one k) of the running sequences from one row. A
    day's requests make these the simulation's largest arrays, so they are built in place."""

    by_position: FloatArray  # [position, request]
    mean: FloatArray  # [k · requests + request], k = 0 … MAX_POSITIONS
    var: FloatArray

    @classmethod
    def of(cls, by_position: FloatArray) -> _Chains:
        odd = 2.0 * np.arange(MAX_POSITIONS) + 1.0
        mean = np.zeros((MAX_POSITIONS + 1, by_position.shape[1]))
        np.cumsum(by_position, axis=0, out=mean[1:])
        var = np.zeros_like(mean)
        np.multiply(by_position, odd[:, None], out=var[1:])
        np.cumsum(var[1:], axis=0, out=var[1:])
        for k in range(1, MAX_POSITIONS + 1):  # row by row: one request-long temporary, not a k-by-request one
            var[k] -= mean[k] ** 2
        np.maximum(var, 0.0, out=var)
        return cls(by_position, mean.ravel(), var.ravel())

    def at(self, req: IntArray, k: IntArray) -> IntArray:
        """Where request req's moments at k are in `mean` and `var`."""
        index: IntArray = k * self.by_position.shape[1] + req
        return index


@dataclass(frozen=True)
class _Decode:
    """One chunk's decode outcome per replica (step, k) and per running sequence (the rest)."""

    step: FloatArray
    k: IntArray
    steps: FloatArray
    mean: FloatArray
    var: FloatArray
    accepted: FloatArray
    tokens: FloatArray
    done: NDArray[np.bool_]
    share: FloatArray


ProgressFn = Callable[[float, float], None]


@dataclass(frozen=True)
class _KRows:
    """Every pod's k by batch as arrays (`SpecConfig.k_at` for all pods at once): row i of pod p runs
    `k[p, i]` up to `bound[p, i]` sequences; the last row has no bound."""

    enabled: NDArray[np.bool_]
    bound: FloatArray
    k: IntArray

    @classmethod
    def of(cls, configs: Sequence[SpecConfig]) -> _KRows:
        rows = [list(c.schedule) if c.enabled and c.schedule else [(0, c.k if c.enabled else 0)] for c in configs]
        width = max(len(r) for r in rows)
        bound, k = np.full((len(rows), width), np.inf), np.zeros((len(rows), width), np.int64)
        for p, table in enumerate(rows):
            bound[p, : len(table) - 1] = [b for b, _ in table[:-1]]
            k[p, : len(table)] = [row_k for _, row_k in table]
        return cls(np.array([c.enabled for c in configs]), bound, k)

    def k_at(self, batch: FloatArray) -> IntArray:
        row = (batch[:, None] > self.bound).sum(axis=1)
        at: IntArray = self.k[np.arange(len(row)), row]
        return at


class _Scrapes(Sequence[PodMetrics]):
    """A fleet's pods as a controller reads them, each scraped on first read: a static baseline reads none."""

    def __init__(self, scrape: Callable[[int], PodMetrics], replicas: range) -> None:
        self._scrape, self._replicas = scrape, replicas
        self._read: dict[int, PodMetrics] = {}

    def __len__(self) -> int:
        return len(self._replicas)

    @overload
    def __getitem__(self, index: int) -> PodMetrics: ...
    @overload
    def __getitem__(self, index: slice) -> Sequence[PodMetrics]: ...
    def __getitem__(self, index: int | slice) -> PodMetrics | Sequence[PodMetrics]:
        if isinstance(index, slice):
            return [self[i] for i in range(len(self))[index]]
        replica = self._replicas[index]
        if replica not in self._read:
            self._read[replica] = self._scrape(replica)
        return self._read[replica]


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
        self.startup_k = [self._startup_k(c) for c in self.configs]
        self.counters = FleetCounters(self.pods, MAX_POSITIONS)
        self.queues = PodQueues(self.pods)
        self.admission_cost = self.req.prompt.astype(np.int64) + 1  # KV tokens a request needs to start
        # Each request's acceptance, drawn once: every fleet serves the same request with the same chain
        # (common random numbers), so fleets differ by their configs, not by their draws.
        self.chains = _Chains.of(self._draw_chains(np.arange(len(requests))))
        self.running = _Running.empty()
        # Who finished in the last chunk, and when: the next admission hands their unused time on.
        self.freed_pod, self.freed_at = np.zeros(0, np.int64), np.zeros(0)
        self.prefill_backlog = np.zeros(self.pods)  # seconds of prompt processing not yet done
        self.restarting: list[int | None] = [None] * n_groups  # the pod of each fleet now restarting
        self.rolled = [True] * n_groups  # every pod of the fleet runs its target: nothing to roll
        self.restart_until = [0.0] * n_groups
        self.round_robin = np.zeros(n_groups, np.int64)
        self._serving: tuple[IntArray, IntArray] | None = None  # `_in_service`, rebuilt while a fleet rolls
        self.next_arrival = 0
        # Per fleet x request outcomes; each run's arrays are rows (views) of these.
        self.outcomes = {name: np.full((n_groups, len(requests)), np.nan) for name in ("ttft", "tpot", "finish")}
        self.results = [
            RunResult(requests=requests, duration=0.0, **{name: rows[g] for name, rows in self.outcomes.items()})
            for g in range(n_groups)
        ]
        self.group_of = np.arange(self.pods) // per
        self._labels: dict[SpecConfig, str] = {}
        self._k_rows: _KRows | None = None  # the pods' batch-size tables as arrays; rebuilt when a config changes
        # (fleet, label or RESTARTING) of every pod, rebuilt while a fleet rolls, and the chunks counted in each.
        self._pod_states: list[tuple[int, str]] | None = None
        self._chunks_in: Counter[tuple[int, str]] = Counter()

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

    def _startup_k(self, config: SpecConfig) -> int:
        if not config.enabled:
            return 0
        return max(config.k, self.spec.ceiling_k) if config.schedule else config.k

    def live(self, replica: int, config: SpecConfig) -> bool:
        """Whether the pod can switch to `config` without a restart: a new batch-size table within what its
        engine started with (drafter loaded, the same method, k no higher than its startup k)."""
        current = self.configs[replica]
        return current.enabled and config.enabled and config.k <= self.startup_k[replica]

    def _roll(self, now: float, group: int) -> None:
        """Live where the change allows it; otherwise a rolling restart, one replica at a time: out of service
        for restart_seconds, back on the target. Nothing to do, and no cache to rebuild, once every pod runs it."""
        if self.rolled[group]:
            return
        self._pod_states = self._serving = None
        target, restarting = self.targets[group], self.restarting[group]
        if restarting is not None and now >= self.restart_until[group]:
            self.configs[restarting], self._k_rows = target, None
            self.startup_k[restarting] = self._startup_k(target)
            self.counters.reset(restarting)
            self.started[restarting] = now
            self.restarting[group] = restarting = None
        for r in self._group(group):
            if r != restarting and self.configs[r] != target and self.live(r, target):
                self.configs[r], self._k_rows = target, None  # same process: counters and start time stay
        if restarting is None:
            stale = [r for r in self._group(group) if self.configs[r] != target]
            self.rolled[group] = not stale
            if stale:
                r = stale[0]
                self.restarting[group], self.restart_until[group] = r, now + self.spec.restart_seconds
                if not self.spec.surge:
                    # The pod stops taking traffic; what it has queued goes back to the router.
                    self._route(self.queues.drain(r), group)

    def _out(self, replica: int) -> bool:
        """Out of service: restarting without a surge pod standing in for it."""
        return replica == self.restarting[int(self.group_of[replica])] and not self.spec.surge

    def _out_mask(self) -> NDArray[np.bool_]:
        out = np.zeros(self.pods, bool)
        if not self.spec.surge:
            out[[r for r in self.restarting if r is not None]] = True
        return out

    def _in_service(self) -> tuple[IntArray, IntArray]:
        """Row g: fleet g's pods in service first, in pod order; and how many there are per fleet (all of them
        where none is: a lone pod restarting without a surge pod)."""
        if self._serving is None:
            out = self._out_mask().reshape(-1, self.spec.replicas)
            order = np.argsort(out, axis=1, kind="stable")
            rows = np.take_along_axis(np.arange(self.pods).reshape(out.shape), order, axis=1)
            serving = out.shape[1] - out.sum(axis=1)
            self._serving = rows, np.where(serving > 0, serving, out.shape[1])
        return self._serving

    def _route(self, ids: IntArray, group: int) -> None:
        self.queues.push(self._destinations(len(ids), np.array([group])), ids)

    def _destinations(self, n: int, groups: IntArray) -> IntArray:
        """The pods of the next n requests of each fleet in `groups`, fleet by fleet: round-robin over its pods
        in service (a Kubernetes Service spreading connections)."""
        rows, serving = self._in_service()
        pick = (self.round_robin[groups, None] + np.arange(n)) % serving[groups, None]
        self.round_robin[groups] = (self.round_robin[groups] + n) % serving[groups]
        pods: IntArray = np.take_along_axis(rows[groups], pick, axis=1).ravel()
        return pods

    # ------------------------------------------------------------------ admission

    def _per_pod(self, values: FloatArray | None = None) -> FloatArray:
        """Sum over each pod's running sequences (their count without values)."""
        return self._per_pod_of(self.running.pod, values)

    def _per_pod_of(self, pods: IntArray, values: FloatArray | None = None) -> FloatArray:
        """Sum of `values` (or the count) over entries, by the pod each entry is on."""
        return np.bincount(pods, weights=values, minlength=self.pods).astype(float)

    def _admit(self, t: float) -> tuple[FloatArray, IntArray]:
        """Fill each in-service pod's batch from its queue: prefill tokens per pod, the new entries' indices."""
        dt = self.spec.dt
        running = self._per_pod().astype(np.int64)
        room = self.spec.perf.kv_capacity_tokens - self._per_pod(self.running.ctx)
        limit = np.where(self._out_mask(), 0, np.minimum(self.queues.length, self.spec.max_batch - running))
        n = self.queues.admissible(room, limit, self.admission_cost)
        if not n.any():
            return np.zeros(self.pods), np.zeros(0, np.int64)
        pods, req = self.queues.pop(n)
        # A request starts when both it and a place in the batch are there: the j-th admitted on a pod takes
        # the unused time of the j-th sequence that finished there last chunk (frac > 1), so chunking does not
        # leave batch places idle.
        order = np.lexsort((self.freed_at, self.freed_pod))
        freed_count = np.bincount(self.freed_pod, minlength=self.pods)
        rank = segment_positions(n[n > 0])
        handed = rank < freed_count[pods]
        freed_start = np.cumsum(freed_count) - freed_count
        freed = np.full(len(req), -np.inf)
        freed[handed] = self.freed_at[order][freed_start[pods[handed]] + rank[handed]]
        start = np.maximum(np.maximum(self.req.arrival[req], freed), t - dt)
        first = len(self.running.req)
        output, prompt = self.req.output[req].astype(float), self.req.prompt[req].astype(float)
        admitted = _Running(pods, req, output, prompt, (t + dt - start) / dt, np.zeros(len(req)))
        self.running = self.running.joined(admitted)
        return self._per_pod_of(pods, prompt), np.arange(first, len(self.running.req))

    def _draw_chains(self, req: IntArray) -> FloatArray:
        """Every request's acceptance chain, position by position (`_Chains.by_position`)."""
        chains = np.zeros((MAX_POSITIONS, len(req)))
        klass = self.req.klass[req]
        for index, prompt_class in enumerate(self.classes):
            members = np.flatnonzero(klass == index)
            if len(members):
                profile = prompt_class.profile(self.spec.family)
                chains[:, members] = draw_requests(profile, len(members), self.rng).T
        return chains

    # ------------------------------------------------------------------ one chunk

    def _step_times(self, batch: FloatArray, kv: FloatArray) -> tuple[FloatArray, IntArray]:
        """Engine step seconds and k per replica at this chunk's batch."""
        if self._k_rows is None:
            self._k_rows = _KRows.of(self.configs)
        enabled, k = self._k_rows.enabled, self._k_rows.k_at(batch)
        perf = self.spec.perf
        spec = perf.step_seconds(self.spec.family, batch, k, kv)
        off = perf.step_seconds(None, batch, 0, kv)
        return np.where(enabled, spec, off), np.where(enabled, k, 0)

    def _decode(
        self, occupancy: FloatArray, frac: FloatArray, prefill_s: FloatArray, z: FloatArray, prior: _Decode | None
    ) -> _Decode:
        """Tokens each sequence generates this chunk when the batches hold `occupancy` of the chunk."""
        s, dt = self.running, self.spec.dt
        step, k = self._step_times(self._per_pod(occupancy), self._per_pod(occupancy * s.ctx))
        steps = ((dt - prefill_s) / step)[s.pod] * frac
        k_each = k[s.pod]
        if prior is not None and np.array_equal(prior.k, k):
            mean, var = prior.mean, prior.var  # the same k as the first pass: the same chain moments
        else:
            # Accepted drafts over `steps` verify rounds: sum of per-step draws, normal approximation.
            at = self.chains.at(s.req, k_each)
            mean, var = self.chains.mean[at], self.chains.var[at]
        accepted = np.clip(steps * mean + np.sqrt(steps * var) * z, 0.0, steps * k_each)
        tokens = steps + accepted
        done = tokens >= s.remaining
        share = np.where(done, s.remaining / np.maximum(tokens, 1e-12), 1.0)
        return _Decode(step, k, steps, mean, var, accepted, tokens, done, share)

    def _chunk(self, t: float) -> None:
        prefill, new = self._admit(t)
        spec, s, dt = self.spec, self.running, self.spec.dt
        frac = s.frac
        # Prompt work beyond 90 % of a chunk waits for the next (chunked prefill shares steps with decode).
        self.prefill_backlog += prefill * spec.perf.target.per_token_s
        prefill_s = np.minimum(self.prefill_backlog, 0.9 * dt)
        self.prefill_backlog -= prefill_s
        for group, seconds in enumerate(np.bincount(self.group_of, weights=prefill_s, minlength=len(self.results))):
            self.results[group].prefill_seconds += float(seconds)
        z = self.rng.standard_normal(len(s.req))
        # Two passes: the second sizes each batch by the time its members were really in it (the ones that
        # finish mid-chunk leave early), so the step time does not depend on the chunk length.
        first = self._decode(np.minimum(frac, 1.0), frac, prefill_s, z, None)
        d = self._decode(np.minimum(frac, 1.0) * first.share, frac, prefill_s, z, first)
        if len(new):
            self._first_tokens(t, new, d.step)
        generated = np.minimum(d.tokens, s.remaining)
        self._count(d.steps * d.share, d.accepted * d.share, d.mean, d.k, d.step, generated, prefill)
        self._finish(t, d.done, d.share, frac)
        s.remaining = s.remaining - d.tokens
        s.ctx = s.ctx + d.tokens
        s.frac = np.ones(len(s.req))
        self.running = s.kept(~d.done)

    def _first_tokens(self, t: float, new: IntArray, step: FloatArray) -> None:
        """First token of each admitted request: its start, its own prompt, one engine step."""
        s = self.running
        pods, req = s.pod[new], s.req[new]
        own_prefill = self.req.prompt[req] * self.spec.perf.target.per_token_s
        first = t + (1 - s.frac[new]) * self.spec.dt + step[pods] + own_prefill
        s.first_token[new] = first
        ttft = first - self.req.arrival[req]
        self._write(pods, req, "ttft", ttft)
        self.counters.observe(TTFT, pods, ttft)

    def _gauges(self) -> None:
        gauges = self.counters.values
        gauges["running"][:] = self._per_pod()
        gauges["waiting"][:] = self.queues.length
        gauges["kv_usage"][:] = np.minimum(self._per_pod(self.running.ctx) / self.spec.perf.kv_capacity_tokens, 1.0)

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
        c, s = self.counters.values, self.running
        rounds = self._per_pod(steps)
        drafting = k > 0  # spec counters move only on steps that drafted (vLLM skips them at k=0)
        accepted_total = self._per_pod(accepted)
        c["generation_tokens"] += self._per_pod(generated)
        c["prompt_tokens"] += prefill
        c["drafts"] += np.where(drafting, rounds, 0.0)
        c["draft_tokens"] += rounds * k
        c["accepted"] += accepted_total
        expected_total = np.maximum(self._per_pod(steps * mean), 1e-12)
        scale = np.where(drafting, accepted_total / expected_total, 0.0)
        drafted = np.arange(MAX_POSITIONS)[None, :] < k[:, None]
        by_position = np.zeros((self.pods, MAX_POSITIONS))
        for position in range(int(k.max(initial=0))):  # per pod: sum over its sequences of steps x a_i
            by_position[:, position] = self._per_pod(steps * self.chains.by_position[position, s.req])
        self.counters.per_pos += by_position * drafted * scale[:, None]
        self.counters.observe(ITL, np.arange(self.pods), step, rounds)

    def _write(self, rows: IntArray, req: IntArray, name: str, values: FloatArray) -> None:
        """Per-request outcomes into the run of each row's fleet."""
        self.outcomes[name][self.group_of[rows], req] = values

    def _finish(self, t: float, done: NDArray[np.bool_], share: FloatArray, frac: FloatArray) -> None:
        s, dt = self.running, self.spec.dt
        pods, req = s.pod[done], s.req[done]
        finish = t + dt - frac[done] * dt * (1 - share[done])
        self.freed_pod, self.freed_at = pods, finish
        if not len(req):
            return
        tpot = (finish - s.first_token[done]) / np.maximum(self.req.output[req] - 1, 1)
        for name, values in (("finish", finish), ("tpot", tpot)):
            self._write(pods, req, name, values)
        self.counters.values["success"] += self._per_pod_of(pods)
        self.counters.observe(TPOT, pods, tpot)
        self.counters.observe(E2E, pods, finish - self.req.arrival[req])

    # ------------------------------------------------------------------ the run

    def _arrivals(self, t_end: float) -> None:
        hi = int(np.searchsorted(self.req.arrival, t_end, side="left"))
        if hi > self.next_arrival:
            n, groups = hi - self.next_arrival, len(self.results)
            pods = self._destinations(n, np.arange(groups))
            self.queues.push(pods, np.tile(np.arange(self.next_arrival, hi), groups))
            self.next_arrival = hi

    def _control(self, now: float, since: float, arrived_before: int, group: int) -> None:
        pods = self._group(group)
        ready = [not self._out(r) for r in pods]
        wanted = self.controllers[group].observe(now, _Scrapes(self.pod, pods), ready, self.targets[group])
        result = self.results[group]
        if wanted != self.targets[group]:
            if all(self.live(r, wanted) for r in pods if r != self.restarting[group]):
                result.live_changes += 1
            else:
                result.restarts += 1
            self.targets[group], self.rolled[group] = wanted, False
        running = float(self._per_pod()[pods.start : pods.stop].sum()) / max(self.spec.replicas, 1)
        qps = (self.next_arrival - arrived_before) / max(now - since, 1e-9)
        result.timeline.append(TimelinePoint(now, label(wanted), qps, running, sum(ready)))

    def _label(self, config: SpecConfig) -> str:
        """`label(config)`, formatted once per config rather than once per pod and chunk."""
        if config not in self._labels:
            self._labels[config] = label(config)
        return self._labels[config]

    def _count_config_chunks(self) -> None:
        if self._pod_states is None:
            out = self._out_mask()
            self._pod_states = [
                (int(self.group_of[r]), RESTARTING if out[r] else self._label(config))
                for r, config in enumerate(self.configs)
            ]
        self._chunks_in.update(self._pod_states)

    def _add_config_seconds(self) -> None:
        for (group, name), chunks in self._chunks_in.items():
            seconds = self.results[group].config_seconds
            seconds[name] = seconds.get(name, 0.0) + chunks * self.spec.dt
        self._chunks_in.clear()

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
            self._count_config_chunks()
            if (i + 1) % per_interval == 0:
                for group in groups:
                    self._control(t + spec.dt, since, arrived_before, group)
                since, arrived_before = t + spec.dt, self.next_arrival
                if progress is not None:
                    progress(t + spec.dt, duration)
        self._add_config_seconds()
        for result in self.results:
            result.duration = chunks * spec.dt
        return self.result
