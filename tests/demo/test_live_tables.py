"""Live tables end to end: the real operator (Kopf over HTTP against the emulator) changes the batch-size→k table
of the demo's local fleet without restarting a pod.

The fleet starts with the table its policy renders from the prior (the pods start with a table and the ceiling
k). Then the traffic changes class (GSM8K → code, whose n-gram acceptance is higher), the measured acceptance drifts
from the curve the table was rendered from, and the policy pushes a re-rendered table to each pod's control
endpoint (the runtime's contract, served by the simulated pods with the runtime's own validation). Checked from
outside the product: the pods and the Deployment as the API lists them, each pod's own `GET /speculation/table`,
the status and the Events. One run (module-scoped, about a minute and a half here).
"""

from __future__ import annotations

import base64
import dataclasses
import json
import time
import urllib.error
import urllib.request
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from typing import Any

import kubernetes.client
import kubernetes.config
import pytest

from specfleet.demo.resources import FleetSpec
from specfleet.demo.session import DemoConfig, DemoSession
from specfleet.operator.api.constants import ANNOTATION_CONTROL_PORT, GROUP, LABEL_CONFIG_HASH, SDD_PLURAL, VERSION
from specfleet.runtime.table_control import CONTROL_TABLE_PATH
from tests.operator.test_reconcile import _events

pytestmark = [pytest.mark.slow, pytest.mark.timeout(400)]

NAME, NAMESPACE = "chat", "default"
WAIT_SECONDS = 120.0
# Low load, so speculation stays on and only the table changes. Should a restart come first, it is let through
# at once (no switching-cost test) and verified in one window, however the CPU's timing compares with the prior.
LIVE_POLICY = {
    "schedule": True,
    "minSamples": 20,
    "restartCostSeconds": 0,
    "verificationWindows": 1,
    "rollbackTolerance": 10,
}


@dataclass
class Live:
    demo: DemoSession
    core: kubernetes.client.CoreV1Api
    pods_before: set[str]
    hash_before: str
    generation_before: int
    decided_seen_at: float  # monotonic: when the test first saw the live decision in status
    applied_seen_at: float  # monotonic: when the test first saw every pod run its table
    table: list[list[int]]


def _wait(what: str, check: Callable[[], Any], timeout: float = WAIT_SECONDS) -> Any:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        value = check()
        if value:
            return value
        time.sleep(0.2)
    raise AssertionError(f"timed out waiting for {what}")


def _pods(core: kubernetes.client.CoreV1Api) -> list[kubernetes.client.V1Pod]:
    return [p for p in core.list_namespaced_pod(NAMESPACE).items if not p.metadata.deletion_timestamp]


def _control_url(pod: kubernetes.client.V1Pod) -> str:
    return f"http://{pod.status.pod_ip}:{pod.metadata.annotations[ANNOTATION_CONTROL_PORT]}{CONTROL_TABLE_PATH}"


def _shown(pod: kubernetes.client.V1Pod) -> dict[str, Any]:
    with urllib.request.urlopen(_control_url(pod), timeout=5) as response:
        shown: dict[str, Any] = json.loads(response.read())
    return shown


def _put(pod: kubernetes.client.V1Pod, table: list[list[int]], authorization: str | None) -> int:
    headers = {"Content-Type": "application/json", **({"Authorization": authorization} if authorization else {})}
    request = urllib.request.Request(
        _control_url(pod), json.dumps({"table": table}).encode(), headers=headers, method="PUT"
    )
    try:
        with urllib.request.urlopen(request, timeout=5) as response:
            return int(response.status)
    except urllib.error.HTTPError as exc:
        return exc.code


def _live_decision(sdd: dict[str, Any]) -> dict[str, Any] | None:
    decisions = (sdd.get("status") or {}).get("decisions") or []
    live = (d for d in decisions if d["action"] == "set-schedule" and d["applied"] and d["reason"].endswith("(live)"))
    return next(live, None)


def _ready_pods(core: kubernetes.client.CoreV1Api) -> list[kubernetes.client.V1Pod]:
    return [p for p in _pods(core) if p.status.pod_ip and any(c.type == "Ready" and c.status == "True"
                                                               for c in p.status.conditions or [])]  # fmt: skip


@pytest.fixture(scope="module")
def live(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Live]:
    config = DemoConfig(
        workdir=tmp_path_factory.mktemp("live"),
        fleets=(FleetSpec(NAME, replicas=2, k=2, max_k=3),),  # the table starts at the ceiling, 3
        trace="constant",
        peak_qps_per_replica=4.0,
        duration=600.0,
        signals="scrape",
        policy_overrides=LIVE_POLICY,
    )
    with DemoSession(config) as demo:
        client = kubernetes.config.new_client_from_config(config_file=str(demo.kubeconfig))
        core = kubernetes.client.CoreV1Api(client)
        sdd = _wait("the first table on every pod, nothing left to verify", lambda: _first_applied(demo))
        deployment = demo.emulator.get("apps/v1", "deployments", NAME, NAMESPACE)
        assert deployment is not None
        pods_before = {p.metadata.name for p in _pods(core)}
        hash_before = deployment["spec"]["template"]["metadata"]["labels"][LABEL_CONFIG_HASH]
        assert sdd["status"]["speculation"]["configHash"] == hash_before
        assert demo.fleet is not None
        demo.fleet.drive(NAME, config.trace_of(dataclasses.replace(config.fleets[0], traffic_class="code-en")))
        _wait("a live table decision", lambda: _live_decision(demo.sdd(NAME) or {}))
        decided = time.monotonic()
        table = _wait("the new table on every pod", lambda: _every_pod_runs_desired(demo, core))
        applied = time.monotonic()
        yield Live(demo, core, pods_before, hash_before, deployment["metadata"]["generation"], decided, applied, table)


def _first_applied(demo: DemoSession) -> dict[str, Any] | None:
    sdd = demo.sdd(NAME) or {}
    status = sdd.get("status") or {}
    live = (status.get("speculation") or {}).get("liveTable") or {}
    verified = (status.get("policyState") or {}).get("verification") is None
    return sdd if live.get("appliedAt") and live.get("readyPods") == 2 and verified else None


def _every_pod_runs_desired(demo: DemoSession, core: kubernetes.client.CoreV1Api) -> list[list[int]] | None:
    sdd = demo.sdd(NAME) or {}
    live = ((sdd.get("status") or {}).get("speculation") or {}).get("liveTable") or {}
    pods = _ready_pods(core)
    if live.get("revision", 0) < 2 or len(pods) < 2:
        return None
    table: list[list[int]] = live["table"]
    return table if all(_shown(pod)["table"] == table for pod in pods) else None


def test_the_policy_changes_the_table_live_without_a_new_pod_or_hash(live: Live) -> None:
    sdd = live.demo.sdd(NAME)
    assert sdd is not None
    decision = _live_decision(sdd)
    assert decision is not None
    assert decision["reason"].startswith("drift: "), decision
    assert decision["inputs"]["change"] == "live"
    deployment = live.demo.emulator.get("apps/v1", "deployments", NAME, NAMESPACE)
    assert deployment is not None
    assert deployment["spec"]["template"]["metadata"]["labels"][LABEL_CONFIG_HASH] == live.hash_before
    assert deployment["metadata"]["generation"] == live.generation_before  # the template was never patched
    assert {p.metadata.name for p in _pods(live.core)} == live.pods_before
    status = sdd["status"]["speculation"]
    assert status["configHash"] == live.hash_before
    assert status["liveTable"]["revision"] >= 2
    schedule = [[row["maxBatchSize"], row["k"]] for row in status["schedule"]]
    assert [[last, k] for _, last, k in status["liveTable"]["table"]] == schedule


def test_status_and_an_event_say_applied_live_to_every_pod(live: Live) -> None:
    def applied() -> list[str]:
        return [e["message"] for e in _events(live.demo.emulator, NAMESPACE) if e.get("reason") == "TableAppliedLive"]

    messages = _wait("the TableAppliedLive Event of the live change", lambda: [m for m in applied() if " r2 " in m])
    assert "applied live to 2/2 pods" in messages[0], messages
    sdd = live.demo.sdd(NAME)
    assert sdd is not None
    table = sdd["status"]["speculation"]["liveTable"]
    assert (table["appliedPods"], table["readyPods"]) == (2, 2)
    print(f"decision → every pod on the new table: {messages[0].rsplit(', ', 1)[-1]} (the operator's clock); "
          f"{live.applied_seen_at - live.decided_seen_at:.2f} s from the decision in status to the pods' own "
          "GET showing it, as this test polled them")  # fmt: skip


def test_a_wrong_or_missing_token_is_refused_and_changes_nothing(live: Live) -> None:
    pod = _ready_pods(live.core)[0]
    before = _shown(pod)
    assert _put(pod, [[1, 1, 0]], "Bearer not-the-token") == 403
    assert _put(pod, [[1, 1, 0]], None) == 401
    assert _shown(pod) == before
    # And the token is nowhere in status or the Events.
    secret = live.core.read_namespaced_secret(f"{NAME}-specfleet-control", NAMESPACE)
    token = secret.data["token"]
    sdd = live.demo.sdd(NAME)
    texts = json.dumps(sdd) + json.dumps(_events(live.demo.emulator, NAMESPACE))
    assert base64.b64decode(token).decode() not in texts
    assert token not in json.dumps(sdd)


def test_a_pod_that_starts_later_gets_the_newest_table(live: Live) -> None:
    custom = kubernetes.client.CustomObjectsApi(live.core.api_client)
    custom.patch_namespaced_custom_object(GROUP, VERSION, NAMESPACE, SDD_PLURAL, NAME, {"spec": {"replicas": 3}})

    ready_seen: list[float] = []

    def three_on_table() -> list[kubernetes.client.V1Pod] | None:
        sdd = live.demo.sdd(NAME) or {}
        table = sdd["status"]["speculation"]["liveTable"]
        pods = _ready_pods(live.core)
        if len(pods) == 3 and not ready_seen:
            ready_seen.append(time.monotonic())
        ok = len(pods) == 3 and table["appliedPods"] == 3 and all(_shown(p)["table"] == table["table"] for p in pods)
        return pods if ok else None

    pods = _wait("the third pod on the newest table", three_on_table)
    print(f"third pod Ready → on the newest table: {time.monotonic() - ready_seen[0]:.2f} s, as this test polled it")
    newcomer = next(p for p in pods if p.metadata.name not in live.pods_before)
    assert newcomer.metadata.labels[LABEL_CONFIG_HASH] == live.hash_before
    assert _shown(newcomer)["version"] >= 1  # pushed: its start-up table was version 0
