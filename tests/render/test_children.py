from __future__ import annotations

import json
from typing import Any

from specfleet.operator.api.constants import ANNOTATION_CONFIG_HASH, LABEL_CONFIG_HASH
from specfleet.operator.api.parse import parse_spec
from specfleet.operator.api.types import ScheduleEntry, SpecDecodeDeploymentSpec, SpeculationState
from specfleet.operator.render.children import render_children
from specfleet.operator.render.engine import engine_config, initial_speculation, pinned_speculation
from specfleet.operator.render.labels import Owner
from tests.examples import EXAMPLES, load

OWNER = Owner(name="llama-8b", namespace="default", uid="uid-1")


def _spec(**speculation: Any) -> SpecDecodeDeploymentSpec:
    base = load(EXAMPLES / "llama-8b-eagle3.yaml")["spec"]
    base["speculation"].update(speculation)
    return parse_spec(base)


def _by_kind(objs: list[dict[str, Any]]) -> dict[str, dict[str, Any]]:
    return {obj["kind"]: obj for obj in objs}


def _container(deployment: dict[str, Any]) -> dict[str, Any]:
    return dict(deployment["spec"]["template"]["spec"]["containers"][0])


def test_speculation_on_renders_speculative_config() -> None:
    spec = _spec()
    deployment = _by_kind(render_children(OWNER, spec, initial_speculation(spec)))["Deployment"]
    args = _container(deployment)["args"]
    config = json.loads(args[args.index("--speculative-config") + 1])
    assert config == {
        "method": "eagle3",
        "model": "yuhuili/EAGLE3-LLaMA3.1-Instruct-8B",
        "num_speculative_tokens": 3,
    }
    assert args[args.index("--model") + 1] == "meta-llama/Llama-3.1-8B-Instruct"
    assert "--max-num-seqs=256" in args


def test_speculation_off_renders_no_speculative_flag() -> None:
    spec = _spec()
    deployment = _by_kind(render_children(OWNER, spec, SpeculationState(enabled=False)))["Deployment"]
    assert not any("speculative" in arg for arg in _container(deployment)["args"])


def test_k_change_moves_config_hash_everywhere() -> None:
    spec = _spec()
    at3 = _by_kind(render_children(OWNER, spec, initial_speculation(spec)))["Deployment"]
    at5 = _by_kind(render_children(OWNER, spec, SpeculationState(enabled=True, method="eagle3", k=5)))["Deployment"]
    hash3 = at3["metadata"]["annotations"][ANNOTATION_CONFIG_HASH]
    hash5 = at5["metadata"]["annotations"][ANNOTATION_CONFIG_HASH]
    assert hash3 != hash5
    assert at5["spec"]["template"]["metadata"]["labels"][LABEL_CONFIG_HASH] == hash5
    # The selector must never include the hash: it is immutable on a Deployment.
    assert at3["spec"]["selector"] == at5["spec"]["selector"]
    assert LABEL_CONFIG_HASH not in at5["spec"]["selector"]["matchLabels"]


def test_schedule_is_rendered_into_the_speculative_config() -> None:
    spec = _spec()
    state = SpeculationState(
        enabled=True,
        method="eagle3",
        k=5,
        schedule=[ScheduleEntry(max_batch_size=16, k=5), ScheduleEntry(max_batch_size=64, k=3)],
    )
    args = engine_config(spec, state).vllm_args()
    config = json.loads(args[args.index("--speculative-config") + 1])
    assert config["num_speculative_tokens_per_batch_size"] == [[1, 16, 5], [17, 64, 3]]


def test_rollout_shape_probes_gpus_and_owner() -> None:
    spec = _spec()
    children = _by_kind(render_children(OWNER, spec, initial_speculation(spec)))
    deployment = children["Deployment"]
    assert deployment["spec"]["strategy"]["rollingUpdate"] == {"maxUnavailable": 0, "maxSurge": 1}
    pod = deployment["spec"]["template"]["spec"]
    assert pod["terminationGracePeriodSeconds"] == spec.runtime.termination_grace_period_seconds
    container = _container(deployment)
    assert container["resources"]["limits"]["nvidia.com/gpu"] == "1"
    assert container["readinessProbe"]["httpGet"]["path"] == "/ready"
    assert container["startupProbe"]["failureThreshold"] * container["startupProbe"]["periodSeconds"] >= 1800
    assert {env["name"] for env in container["env"]} >= {"HF_TOKEN", "SPECFLEET_CONFIG_HASH"}
    for obj in children.values():
        assert obj["metadata"]["ownerReferences"][0]["uid"] == "uid-1"
        assert obj["metadata"]["labels"]["app.kubernetes.io/managed-by"] == "specfleet"
    assert set(children) == {"Deployment", "Service", "PodDisruptionBudget"}
    assert children["Service"]["spec"]["selector"] == deployment["spec"]["selector"]["matchLabels"]


def test_tensor_parallel_sets_gpu_count() -> None:
    spec = parse_spec(load(EXAMPLES / "llama-70b-tp4-recommend.yaml")["spec"])
    deployment = _by_kind(render_children(OWNER, spec, initial_speculation(spec)))["Deployment"]
    assert _container(deployment)["resources"]["limits"]["nvidia.com/gpu"] == "4"
    assert deployment["spec"]["template"]["spec"]["tolerations"][0]["key"] == "nvidia.com/gpu"


def test_pins() -> None:
    spec = _spec(mode="Off")
    assert initial_speculation(spec).enabled is False
    assert pinned_speculation(spec, SpeculationState(enabled=True, method="eagle3", k=3)).enabled is False
    on = _spec(mode="On")
    assert pinned_speculation(on, SpeculationState(enabled=False)).enabled is True
    lowered = _spec(maxSpeculativeTokens=4)
    assert pinned_speculation(lowered, SpeculationState(enabled=True, method="eagle3", k=5)).k == 3
    auto = _spec()
    state = SpeculationState(enabled=True, method="eagle3", k=5)
    assert pinned_speculation(auto, state) is state
