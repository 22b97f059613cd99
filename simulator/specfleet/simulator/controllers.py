"""PURE the controllers a simulated fleet can run under: static baselines and the real policy.

Every controller sees only what production sees: the pods' vLLM metrics (scraped every interval), which pods
are ready, and the configuration the fleet is rolling to. Never the simulator's acceptance profiles or load.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, replace

from specfleet.operator.api.policy_types import PolicySpec
from specfleet.operator.api.types import SpecDecodeDeploymentSpec
from specfleet.operator.policy.belief import SpeedupBelief
from specfleet.operator.policy.context import Fleet, build_context, initial_state
from specfleet.operator.policy.decide import decide
from specfleet.operator.policy.decision import Action, Decision, Inputs
from specfleet.operator.policy.resolve import resolve_policy
from specfleet.operator.policy.state import SpecConfig
from specfleet.simulator.config import config_hash
from specfleet.simulator.feed import SimulatedScrape
from specfleet.simulator.metrics import PodMetrics


@dataclass(frozen=True)
class Fixed:
    """A baseline that never changes the config (off, a static k, or vLLM's documented table)."""

    config: SpecConfig

    def initial(self) -> SpecConfig:
        return self.config

    def observe(self, now: float, pods: Sequence[PodMetrics], ready: Sequence[bool], current: SpecConfig) -> SpecConfig:
        return self.config


@dataclass(frozen=True)
class Held:
    """An evaluation where a gate held a change back (`Decision.wants`)."""

    time: float
    code: str  # the gate that held it
    wants: str  # the change held back ("disable to off")
    reason: str
    inputs: Inputs


class AutoPolicy:
    """The operator's policy core (`specfleet.operator.policy.decide`), fed the simulated pods' signals."""

    def __init__(self, spec: SpecDecodeDeploymentSpec, policy: PolicySpec | None, deployment: str = "fleet") -> None:
        resolved = resolve_policy(None, policy, spec.speculation.max_speculative_tokens)
        self.context = build_context(spec, resolved, Fleet(spec.replicas, spec.replicas))
        self.state = initial_state(self.context)
        self.scrape = SimulatedScrape(deployment, spec.model.name, float(resolved.window_seconds))
        self.decisions: list[tuple[float, Decision]] = []
        self.held: list[Held] = []  # holds that held a change back: why a change came late or never
        self.belief: tuple[SpeedupBelief, ...] = ()  # what the fit believed at its last evaluation

    @property
    def interval_seconds(self) -> float:
        return float(self.context.policy.interval_seconds)

    def initial(self) -> SpecConfig:
        return self.state.current

    def observe(self, now: float, pods: Sequence[PodMetrics], ready: Sequence[bool], current: SpecConfig) -> SpecConfig:
        running = config_hash(current)
        signals = self.scrape.read(now, pods, ready, running)
        # As the operator does: only pods Ready on the configuration the fleet rolls to count as ready.
        on_target = sum(up and pod.config_hash == running for pod, up in zip(pods, ready, strict=True))
        fleet = Fleet(replicas=len(pods), ready_replicas=on_target, config_hash=running)
        decision = decide(now, signals, self.state, replace(self.context, fleet=fleet))
        self.state = decision.state
        self.belief = decision.belief or self.belief
        if decision.action != Action.HOLD:
            self.decisions.append((now, decision))
        elif decision.wants is not None:
            self.held.append(Held(now, str(decision.code), decision.wants, decision.reason, decision.inputs))
        return decision.target if decision.applied else current
