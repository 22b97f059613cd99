"""The SpeculationPolicy a fleet names, resolved with its inline overrides and the operator's defaults."""

from __future__ import annotations

from specfleet.operator.api.constants import API_VERSION, POLICY_KIND
from specfleet.operator.api.policy_types import PolicySpec
from specfleet.operator.api.types import SpecDecodeDeploymentSpec
from specfleet.operator.handlers.context import OperatorContext
from specfleet.operator.kubeapi import Ref
from specfleet.operator.policy.resolve import ResolvedPolicy, resolve_policy


class PolicyNotFoundError(LookupError):
    """The referenced SpeculationPolicy does not exist."""


async def resolve(ctx: OperatorContext, namespace: str, spec: SpecDecodeDeploymentSpec) -> ResolvedPolicy:
    """The fleet's policy; a policyRef is read from the fleet's own namespace only."""
    referenced = None
    if spec.policy_ref is not None:
        found = await ctx.api.get(Ref(API_VERSION, POLICY_KIND, namespace, spec.policy_ref.name))
        if found is None:
            raise PolicyNotFoundError(f"SpeculationPolicy {namespace}/{spec.policy_ref.name} not found")
        referenced = PolicySpec.model_validate(found.get("spec") or {})
    return resolve_policy(referenced, spec.policy, spec.speculation.max_speculative_tokens)
