"""SpeculationProfile through the real operator (Kopf over HTTP against the emulator), with the test playing the
kubelet and the Job controller by hand: the phases, the Job's arguments, the result read from the termination
message of the pod the Job owns (not of a look-alike), and the engine scaled away afterwards. No engine runs:
tests/demo/test_profile_job.py runs the same path with a real one."""

from __future__ import annotations

import pathlib
from typing import Any

import kubernetes.client
import pytest

from specfleet.emulator import EmulatorServer
from specfleet.operator.api.constants import API_VERSION, GROUP, PROFILE_KIND, PROFILE_PLURAL, SDD_PLURAL, VERSION
from specfleet.operator.api.profile_result import encode_result
from specfleet.operator.api.profile_types import Crossover, FittedParameter, ProfilePoint, StepCostFit, Summary
from specfleet.operator.api.types import SpecDecodeDeploymentSpec
from specfleet.operator.handlers.profile import CompletedProfile, measured_for
from specfleet.operator.policy.calibration import PARAMETER_NAMES
from specfleet.operator.render.profile import engine_name, job_name
from specfleet.operator.runner import BackgroundOperator
from tests.examples import EXAMPLES, load
from tests.fixtures.operator import in_namespace, operator_config, wait_for

FLEET = "llama-8b"
PROFILE = "chat"


def _point(k: int, concurrency: int, step: float) -> ProfilePoint:
    return ProfilePoint(
        k=k,
        concurrency=concurrency,
        requests=8,
        output_tokens=800,
        duration_seconds=2.0,
        throughput_tokens_per_second=400.0 * (1 + k / 4) / concurrency**0.1,
        requests_per_second=4.0,
        tpot_seconds=Summary(mean=0.01, p50=0.01, p90=0.012),
        ttft_seconds=Summary(mean=0.05, p50=0.05, p90=0.06),
        acceptance_length=None if k == 0 else 2.0,
        step_seconds=step,
    )


def _profile(namespace: str) -> dict[str, Any]:
    return {
        "apiVersion": API_VERSION,
        "kind": PROFILE_KIND,
        "metadata": {"name": PROFILE, "namespace": namespace},
        "spec": {
            "fleetRef": {"name": FLEET},
            "prompts": {"configMapKeyRef": {"name": "prompts", "key": "chat.jsonl"}},
            "sweep": {"concurrencies": [1, 4], "k": [3]},
        },
    }


def _status(emulator: EmulatorServer, namespace: str) -> dict[str, Any]:
    found = emulator.get(API_VERSION, PROFILE_PLURAL, PROFILE, namespace) or {}
    return dict(found.get("status") or {})


def _phase(emulator: EmulatorServer, namespace: str, phase: str) -> dict[str, Any] | None:
    status = _status(emulator, namespace)
    return status if status.get("phase") == phase else None


def _pod(name: str, namespace: str, labels: dict[str, str], status: dict[str, Any], **meta: Any) -> dict[str, Any]:
    return {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {"name": name, "namespace": namespace, "labels": labels, **meta},
        "spec": {"containers": [{"name": "profile", "image": "x", "ports": [{"name": "http", "containerPort": 8000}]}]},
        "status": status,
    }


def _terminated(message: str) -> dict[str, Any]:
    state = {"terminated": {"exitCode": 0, "reason": "Completed", "message": message}}
    return {
        "phase": "Succeeded",
        "containerStatuses": [
            {"name": "profile", "image": "x", "imageID": "", "ready": False, "restartCount": 0, "state": state}
        ],
    }


@pytest.fixture
def operator(kubeconfig: pathlib.Path) -> Any:
    with BackgroundOperator(operator_config(kubeconfig, interval_seconds=0.3, profiler_image="reg/profiler:t")) as op:
        yield op


def test_a_profile_runs_its_job_once_the_engine_is_ready_and_takes_the_result_of_the_jobs_own_pod(
    emulator: EmulatorServer, api_client: kubernetes.client.ApiClient, namespace: str, operator: Any
) -> None:
    core, batch = kubernetes.client.CoreV1Api(api_client), kubernetes.client.BatchV1Api(api_client)
    emulator.apply(_profile(namespace))
    pending = wait_for(lambda: _phase(emulator, namespace, "Pending"), what="Pending")
    assert f"fleet {FLEET} not found" in pending["message"]
    emulator.apply(in_namespace(load(EXAMPLES / "llama-8b-eagle3.yaml"), namespace))
    wait_for(lambda: "ConfigMap prompts" in str(_status(emulator, namespace).get("message")), what="the prompts")
    emulator.apply(
        {
            "apiVersion": "v1",
            "kind": "ConfigMap",
            "metadata": {"name": "prompts", "namespace": namespace},
            "data": {"chat.jsonl": '{"prompt": "hi"}\n'},
        }
    )
    wait_for(lambda: _phase(emulator, namespace, "Starting"), what="Starting")
    engine = emulator.get("apps/v1", "deployments", engine_name(PROFILE), namespace)
    assert engine is not None
    assert engine["spec"]["replicas"] == 1
    assert batch.list_namespaced_job(namespace).items == []  # no Job before the engine is Ready

    # The kubelet's part: the engine pod, Ready at an address.
    template = engine["spec"]["template"]
    ready = {"phase": "Running", "podIP": "10.1.2.3", "conditions": [{"type": "Ready", "status": "True"}]}
    body = _pod("engine-0", namespace, template["metadata"]["labels"], ready)
    body["spec"] = template["spec"]
    core.create_namespaced_pod(namespace, body)
    wait_for(lambda: _phase(emulator, namespace, "Running"), what="Running")
    job = emulator.get("batch/v1", "jobs", job_name(PROFILE, 1), namespace)
    assert job is not None
    container = job["spec"]["template"]["spec"]["containers"][0]
    assert container["image"] == "reg/profiler:t"
    args = container["args"]
    assert args[args.index("--live") + 1] == "http://10.1.2.3:8000"
    assert args[args.index("--control-url") + 1] == "http://10.1.2.3:8081"
    assert args[args.index("--k") + 1] == "0,3"

    # The Job controller's part: the Job's own pod with the result, and a look-alike with a forged one.
    points = [_point(k, c, 0.02 + 0.002 * k * c) for k in (0, 3) for c in (1, 4)]
    crossovers = [Crossover(k=3, metric="throughput", bound="within", concurrency=2.5)]
    labels = {"job-name": job["metadata"]["name"]}
    owner = {"apiVersion": "batch/v1", "kind": "Job", "name": job["metadata"]["name"], "uid": job["metadata"]["uid"],
             "controller": True}  # fmt: skip
    forged = encode_result([_point(3, 1, 1e-9)], [Crossover(k=3, metric="throughput", bound="aboveSweep")])
    core.create_namespaced_pod(namespace, _pod("a-forgery", namespace, labels, _terminated(forged)))
    core.create_namespaced_pod(
        namespace,
        _pod("job-pod", namespace, labels, _terminated(encode_result(points, crossovers)), ownerReferences=[owner]),
    )
    batch.patch_namespaced_job_status(job["metadata"]["name"], namespace, {"status": {"succeeded": 1}})

    status = wait_for(lambda: _phase(emulator, namespace, "Succeeded"), what="Succeeded")
    assert [(p["k"], p["concurrency"]) for p in status["points"]] == [(0, 1), (0, 4), (3, 1), (3, 4)]
    assert status["summary"] == "k=3: 2.5"
    assert status["fit"]["observations"] == 4
    assert status["model"] == load(EXAMPLES / "llama-8b-eagle3.yaml")["spec"]["model"]["name"]
    completed = next(c for c in status["conditions"] if c["type"] == "Completed")
    assert completed["status"] == "True"
    scaled = wait_for(
        lambda: (
            (emulator.get("apps/v1", "deployments", engine_name(PROFILE), namespace) or {})["spec"]["replicas"] == 0
        ),
        what="the engine scaled to 0",
    )
    assert scaled
    # A new generation is a new sweep: the engine comes back, the last result stays until the next one lands.
    kubernetes.client.CustomObjectsApi(api_client).patch_namespaced_custom_object(
        GROUP, VERSION, namespace, PROFILE_PLURAL, PROFILE, {"spec": {"sweep": {"requestsPerPoint": 16}}}
    )
    # (The hand-made engine pod is still Ready, so the new Job may already be out.)
    again = wait_for(
        lambda: _status(emulator, namespace).get("job") == job_name(PROFILE, 2) and _status(emulator, namespace),
        what="the second Job",
    )
    assert again["phase"] == "Running"
    assert again["observedGeneration"] == 2
    assert again["profiledGeneration"] == 1
    assert len(again["points"]) == 4
    assert wait_for(
        lambda: (
            (emulator.get("apps/v1", "deployments", engine_name(PROFILE), namespace) or {})["spec"]["replicas"] == 1
        ),
        what="the engine back at 1",
    )
    # The fleet's own children never selected the profiling pod.
    fleet = emulator.get(API_VERSION, SDD_PLURAL, FLEET, namespace)
    assert fleet is not None
    service = core.read_namespaced_service(FLEET, namespace)
    assert not all(template["metadata"]["labels"].get(k) == v for k, v in service.spec.selector.items())


def test_a_sweep_the_fleet_cannot_take_fails_with_the_reason(
    emulator: EmulatorServer, namespace: str, operator: Any
) -> None:
    emulator.apply(in_namespace(load(EXAMPLES / "llama-8b-eagle3.yaml"), namespace))
    profile = _profile(namespace)
    profile["spec"]["sweep"]["k"] = [9]
    emulator.apply(profile)
    failed = wait_for(lambda: _phase(emulator, namespace, "Failed"), what="Failed")
    assert "maxSpeculativeTokens" in failed["message"]
    assert emulator.get("apps/v1", "deployments", engine_name(PROFILE), namespace) is None


def _completed(model: str, method: str, at: str, fixed: float) -> CompletedProfile:
    parameters = [FittedParameter(name=n, mean=fixed if n == "fixed" else 1e-6, std=1e-7) for n in PARAMETER_NAMES]
    return CompletedProfile(model, method, at, StepCostFit(parameters=parameters, observations=4, context_tokens=1024))


def test_a_fleet_takes_the_newest_profile_of_the_model_and_method_it_runs() -> None:
    spec = SpecDecodeDeploymentSpec.model_validate(load(EXAMPLES / "llama-8b-eagle3.yaml")["spec"])
    model, method = spec.model.name, str(spec.speculation.method)
    profiles = [
        _completed(model, method, "2026-01-01T00:00:00Z", 0.011),
        _completed(model, method, "2026-02-01T00:00:00Z", 0.022),
        _completed(model, "ngram", "2026-03-01T00:00:00Z", 0.033),
        _completed("another/model", method, "2026-04-01T00:00:00Z", 0.044),
    ]
    measured = measured_for(spec, profiles)
    assert measured is not None
    assert measured.mean[0] == 0.022
    assert measured_for(spec, profiles[2:]) is None
