from __future__ import annotations

import base64
import json
from typing import Any

from specfleet.operator.api.constants import ANNOTATION_CONFIG_HASH, LABEL_CONFIG_HASH
from specfleet.operator.api.parse import parse_spec
from specfleet.operator.api.pod_types import CONTROL_VOLUME
from specfleet.operator.api.types import ScheduleEntry, SpecDecodeDeploymentSpec, SpeculationState
from specfleet.operator.render.children import (
    control_secret_name,
    render_children,
    render_control_secret,
)
from specfleet.operator.render.engine import engine_config, initial_speculation, pinned_speculation
from specfleet.operator.render.labels import Owner
from specfleet.runtime.table_control import DEFAULT_TOKEN_PATH, TOKEN_FILE_ENV
from tests.examples import EXAMPLES, load

OWNER = Owner(name="llama-8b", namespace="default", uid="uid-1")
# The operator's runtime image, for specs that name none.
IMAGE = "registry.test/specfleet-runtime:9.9.9"


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
    deployment = _by_kind(render_children(OWNER, spec, initial_speculation(spec), IMAGE))["Deployment"]
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
    deployment = _by_kind(render_children(OWNER, spec, SpeculationState(enabled=False), IMAGE))["Deployment"]
    assert not any("speculative" in arg for arg in _container(deployment)["args"])


def test_k_change_moves_config_hash_everywhere() -> None:
    spec = _spec()
    at3 = _by_kind(render_children(OWNER, spec, initial_speculation(spec), IMAGE))["Deployment"]
    at5 = _by_kind(render_children(OWNER, spec, SpeculationState(enabled=True, method="eagle3", k=5), IMAGE))[
        "Deployment"
    ]
    hash3 = at3["metadata"]["annotations"][ANNOTATION_CONFIG_HASH]
    hash5 = at5["metadata"]["annotations"][ANNOTATION_CONFIG_HASH]
    assert hash3 != hash5
    assert at5["spec"]["template"]["metadata"]["labels"][LABEL_CONFIG_HASH] == hash5
    # The selector must never include the hash: it is immutable on a Deployment.
    assert at3["spec"]["selector"] == at5["spec"]["selector"]
    assert LABEL_CONFIG_HASH not in at5["spec"]["selector"]["matchLabels"]


def _table_state(*rows: tuple[int, int]) -> SpeculationState:
    schedule = [ScheduleEntry(max_batch_size=batch, k=k) for batch, k in rows]
    return SpeculationState(enabled=True, method="eagle3", k=max(k for _, k in rows), schedule=schedule)


def test_a_table_fleet_starts_at_its_ceiling_k_with_every_k_in_its_start_up_table() -> None:
    spec = _spec()
    args = engine_config(spec, _table_state((16, 5), (64, 3))).vllm_args()
    config = json.loads(args[args.index("--speculative-config") + 1])
    ceiling = spec.speculation.max_speculative_tokens
    assert config["num_speculative_tokens"] == ceiling
    table = config["num_speculative_tokens_per_batch_size"]
    # Every k a live table may use is in the start-up table (decode CUDA graphs exist for those alone).
    assert {k for _, _, k in table} == set(range(ceiling + 1))


def test_a_table_change_leaves_the_pod_template_and_its_hash_alone() -> None:
    spec = _spec()
    before = _by_kind(render_children(OWNER, spec, _table_state((16, 5), (64, 3)), IMAGE))["Deployment"]
    after = _by_kind(render_children(OWNER, spec, _table_state((4, 2), (512, 0)), IMAGE))["Deployment"]
    assert before == after
    assert (
        engine_config(spec, _table_state((16, 5))).config_hash()
        == engine_config(spec, _table_state((8, 1))).config_hash()
    )


def test_restart_bound_changes_still_move_the_hash() -> None:
    spec = _spec()
    table = engine_config(spec, _table_state((16, 5), (64, 3))).config_hash()
    fixed = engine_config(spec, SpeculationState(enabled=True, method="eagle3", k=5)).config_hash()
    off = engine_config(spec, SpeculationState(enabled=False)).config_hash()
    lower_ceiling = engine_config(_spec(maxSpeculativeTokens=4), _table_state((16, 4))).config_hash()
    assert len({table, fixed, off, lower_ceiling}) == 4


def test_pods_mount_the_fleets_control_token() -> None:
    spec = _spec()
    deployment = _by_kind(render_children(OWNER, spec, initial_speculation(spec), IMAGE))["Deployment"]
    pod = deployment["spec"]["template"]["spec"]
    volume = next(v for v in pod["volumes"] if v["name"] == CONTROL_VOLUME)
    assert volume["secret"]["secretName"] == control_secret_name(OWNER.name)
    container = _container(deployment)
    mount = next(m for m in container["volumeMounts"] if m["name"] == CONTROL_VOLUME)
    assert mount["readOnly"] is True
    item = volume["secret"]["items"][0]
    assert f"{mount['mountPath']}/{item['path']}" == DEFAULT_TOKEN_PATH
    assert {"name": TOKEN_FILE_ENV, "value": DEFAULT_TOKEN_PATH} in container["env"]
    secret = render_control_secret(OWNER, "s3cret")
    assert base64.b64decode(secret["data"][item["key"]]).decode() == "s3cret"
    assert secret["metadata"]["ownerReferences"][0]["uid"] == OWNER.uid
    assert secret["metadata"]["name"] == volume["secret"]["secretName"]


def test_without_a_surge_pod_the_deployment_replaces_one_pod_at_a_time() -> None:
    base = load(EXAMPLES / "llama-8b-eagle3.yaml")["spec"]
    spec = parse_spec({**base, "rollout": {"maxSurge": 0}})
    deployment = _by_kind(render_children(OWNER, spec, initial_speculation(spec), IMAGE))["Deployment"]
    assert deployment["spec"]["strategy"]["rollingUpdate"] == {"maxUnavailable": 1, "maxSurge": 0}


def test_rollout_shape_probes_gpus_and_owner() -> None:
    spec = _spec()
    children = _by_kind(render_children(OWNER, spec, initial_speculation(spec), IMAGE))
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
    assert set(children) == {"Deployment", "Service", "PodDisruptionBudget"}  # the Secret: sync_fleet's, with its token
    assert children["Service"]["spec"]["selector"] == deployment["spec"]["selector"]["matchLabels"]


def test_tensor_parallel_sets_gpu_count() -> None:
    spec = parse_spec(load(EXAMPLES / "llama-70b-tp4-recommend.yaml")["spec"])
    deployment = _by_kind(render_children(OWNER, spec, initial_speculation(spec), IMAGE))["Deployment"]
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
