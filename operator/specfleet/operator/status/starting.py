"""The configuration a new fleet's pods start with, under the policy that governs it. Pure."""

from __future__ import annotations

from specfleet.operator.api.types import SpecDecodeDeploymentSpec, SpeculationMode, SpeculationState
from specfleet.operator.policy.context import Fleet, build_context, initial_state
from specfleet.operator.policy.resolve import ResolvedPolicy
from specfleet.operator.render.engine import initial_speculation
from specfleet.operator.status.evaluation import to_speculation_state

# Modes in which the policy chooses the configuration; Recommend and Off leave it to the spec.
POLICY_CHOOSES = frozenset({SpeculationMode.AUTO, SpeculationMode.ON})


def starting_speculation(spec: SpecDecodeDeploymentSpec, policy: ResolvedPolicy | None, now: str) -> SpeculationState:
    """Where the policy runs a batch-size→k table (Auto or On, `schedule` on, a topology that allows it), the
    table it renders from the acceptance prior, at its ceiling k: the pods start with it, so the first table
    costs no rolling restart and every later one is pushed live. Otherwise (no policy found yet, a fixed k)
    the spec's starting configuration."""
    start = initial_speculation(spec)
    if policy is None or spec.speculation.mode not in POLICY_CHOOSES:
        return start
    config = initial_state(build_context(spec, policy, Fleet(spec.replicas, 0))).current
    if config.schedule is None:
        return start
    reason = "starting table from the policy's prior"
    return to_speculation_state(config, str(spec.speculation.method), reason, now)
