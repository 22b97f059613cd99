"""A finished SpeculationProfile runs its sweep again when the fleet's live acceptance stays away from what it
measured: the operator's profile step against the emulator over HTTP, on objects as the API holds them."""

from __future__ import annotations

import pathlib
from datetime import UTC, datetime, timedelta
from typing import Any

import kubernetes.client

from specfleet.emulator import EmulatorServer
from specfleet.operator.api.constants import API_VERSION, GROUP, PROFILE_PLURAL, SDD_PLURAL, VERSION
from specfleet.operator.api.profile_types import ProfilePhase, SpecCounts, SpeculationProfileStatus
from specfleet.operator.handlers.context import OperatorContext, now_iso
from specfleet.operator.handlers.profile import reconcile_profile
from specfleet.operator.kubeapi import KubeApi
from specfleet.operator.render.profile import engine_name
from tests.examples import EXAMPLES, load
from tests.fixtures.operator import in_namespace, operator_config
from tests.operator.test_profile import FLEET, PROFILE, _point, _profile

EXAMPLE = load(EXAMPLES / "llama-8b-eagle3.yaml")
# What the sweep measured at k=3: positions accepted 70 %, 50 %, 30 % of drafts (L = 2.5).
COUNTERS = SpecCounts(drafts=100, draft_tokens=300, accepted=150, accepted_by_position=[70, 50, 30])


def _succeeded() -> dict[str, Any]:
    points = [_point(0, 1, 0.02)] + [_point(3, c, 0.03).model_copy(update={"counters": COUNTERS}) for c in (1, 4)]
    spec = EXAMPLE["spec"]
    status = SpeculationProfileStatus(
        observed_generation=1,
        phase=ProfilePhase.SUCCEEDED,
        message="3 points",
        profiled_generation=1,
        model=spec["model"]["name"],
        method=spec["speculation"]["method"],
        points=points,
        completed_at=now_iso(),
    )
    return status.to_api()


def _live(by_position: list[float]) -> dict[str, Any]:
    return {"signals": {"observedAt": now_iso(), "acceptanceByPosition": by_position},
            "speculation": {"enabled": True, "k": 3}}  # fmt: skip


async def test_a_gap_that_lasts_runs_the_sweep_again_and_one_that_closes_is_forgotten(
    emulator: EmulatorServer, api_client: kubernetes.client.ApiClient, kubeconfig: pathlib.Path, namespace: str
) -> None:
    custom = kubernetes.client.CustomObjectsApi(api_client)
    emulator.apply(in_namespace(EXAMPLE, namespace))
    emulator.apply({"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "prompts", "namespace": namespace},
                    "data": {"chat.jsonl": '{"prompt": "hi"}\n'}})  # fmt: skip
    emulator.apply(_profile(namespace))
    custom.patch_namespaced_custom_object_status(
        GROUP, VERSION, namespace, PROFILE_PLURAL, PROFILE, {"status": _succeeded()}
    )
    ctx = OperatorContext.create(operator_config(kubeconfig, interval_seconds=1.0), KubeApi(api_client))

    async def step(fleet_status: dict[str, Any]) -> dict[str, Any]:
        custom.patch_namespaced_custom_object_status(GROUP, VERSION, namespace, SDD_PLURAL, FLEET,
                                                     {"status": fleet_status})  # fmt: skip
        body = emulator.get(API_VERSION, PROFILE_PLURAL, PROFILE, namespace)
        assert body is not None
        await reconcile_profile(ctx, body)
        found = emulator.get(API_VERSION, PROFILE_PLURAL, PROFILE, namespace)
        assert found is not None
        return dict(found["status"])

    # Live traffic accepts far less (L 1.6 against 2.5): the gap opens, the result stands.
    opened = await step(_live([0.3, 0.2, 0.1]))
    assert (opened["phase"], opened["runs"]) == ("Succeeded", 0)
    assert opened["drift"]["positions"] == 3
    assert (opened["drift"]["profiledAcceptanceLength"], opened["drift"]["liveAcceptanceLength"]) == (2.5, 1.6)
    # Back within the tolerance: forgotten.
    closed = await step(_live([0.65, 0.45, 0.3]))
    assert "drift" not in closed
    # Stale signals hold the record as it is.
    await step(_live([0.3, 0.2, 0.1]))
    stale = {"signals": {"observedAt": "2020-01-01T00:00:00Z", "acceptanceByPosition": [0.7, 0.5, 0.3]}}
    assert "drift" in await step(stale)

    # A gap open for longer than reprofile.afterSeconds (3600 s by default): the sweep runs again.
    hours_ago = (datetime.now(UTC) - timedelta(hours=2)).strftime("%Y-%m-%dT%H:%M:%SZ")
    record = {"since": hours_ago, "positions": 3, "profiledAcceptanceLength": 2.5, "liveAcceptanceLength": 1.6}
    custom.patch_namespaced_custom_object_status(
        GROUP, VERSION, namespace, PROFILE_PLURAL, PROFILE, {"status": {"drift": record}}
    )
    again = await step(_live([0.3, 0.2, 0.1]))
    assert (again["phase"], again["runs"]) == ("Pending", 1)
    assert again["message"].startswith(f"re-profiling: live acceptance length 1.60 against the profiled 2.50 over 3 "
                                       f"positions since {hours_ago}")  # fmt: skip
    assert len(again["points"]) == 3  # the fleet keeps its prior until the new sweep lands
    # The next step starts the engine again for the new sweep.
    starting = await step(_live([0.3, 0.2, 0.1]))
    assert starting["phase"] == "Starting"
    engine = emulator.get("apps/v1", "deployments", engine_name(PROFILE), namespace)
    assert engine is not None
    assert engine["spec"]["replicas"] == 1
