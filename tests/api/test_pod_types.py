"""The pod-template fields a fleet may set, and the refusals that keep the operator's part of the pod its own:
each refused by the operator's Python check and by the CRD (schema and CEL rules, as the emulator's API server
applies them), with the same message where the CRD's is a rule."""

from __future__ import annotations

import copy
from typing import Any

import pytest

from specfleet.emulator.cel import check_rules
from specfleet.emulator.schema import apply_defaults, prune, validate
from specfleet.operator.api import pod_types
from specfleet.operator.api.crdgen import spec_decode_deployment_crd
from specfleet.operator.api.parse import InvalidSpecError, parse_spec
from tests.examples import EXAMPLES, load

SCHEMA = spec_decode_deployment_crd()["spec"]["versions"][0]["schema"]["openAPIV3Schema"]
BASE = load(EXAMPLES / "llama-8b-model-cache.yaml")
PVC = {"name": "models", "persistentVolumeClaim": {"claimName": "model-cache"}}


def _spec(**runtime: Any) -> dict[str, Any]:
    spec: dict[str, Any] = copy.deepcopy(BASE["spec"])
    spec["runtime"] = {"volumes": [PVC], **runtime}
    return spec


def _api_refusals(spec: dict[str, Any]) -> list[str]:
    """What the API server answers to a create, in its order: prune, default, schema, then CEL rules."""
    body = {**copy.deepcopy(BASE), "spec": spec}
    stored = apply_defaults(prune(body, SCHEMA, root=True), SCHEMA)
    causes = validate(stored, SCHEMA) or check_rules(stored, SCHEMA)
    return [f"{c['field']}: {c['message']}" for c in causes]


def _python_refusal(spec: dict[str, Any]) -> str:
    with pytest.raises(InvalidSpecError) as caught:
        parse_spec(spec)
    return str(caught.value)


def test_the_full_example_is_accepted_by_both() -> None:
    spec = parse_spec(BASE["spec"])
    runtime = spec.runtime
    assert runtime.image is None  # no schema default: the operator's image applies
    assert [v.name for v in runtime.volumes] == ["models"]
    assert runtime.volume_mounts[0].mount_path == "/cache/huggingface"
    assert runtime.affinity is not None
    assert runtime.affinity.node_affinity is not None
    assert (runtime.service_account_name, runtime.priority_class_name) == ("model-reader", "inference-high")
    assert _api_refusals(BASE["spec"]) == []
    assert "image" not in apply_defaults(prune(copy.deepcopy(BASE), SCHEMA, root=True), SCHEMA)["spec"]["runtime"]


@pytest.mark.parametrize(
    "mount_path", ["/models", "/cache/huggingface", "/cache/vllm/x", "/opt/..weights", "/var/run/other"]
)
def test_mounts_beside_or_below_the_cache_are_accepted(mount_path: str) -> None:
    spec = _spec(volumeMounts=[{"name": "models", "mountPath": mount_path}])
    assert parse_spec(spec).runtime.volume_mounts[0].mount_path == mount_path
    assert _api_refusals(spec) == []


# (runtime fields, the Python message, whether the CRD says the same (a CEL rule) or refuses in its own words)
REFUSED = [
    ({"volumes": [{"name": "m", "hostPath": {"path": "/"}}]}, "hostPath is not an allowed volume source", False),
    ({"volumes": [{"name": "m", "nfs": {"server": "n", "path": "/"}}]}, "nfs is not an allowed volume source", False),
    ({"volumes": [{"name": "m"}]}, pod_types.ONE_SOURCE, True),
    ({"volumes": [{"name": "m", "emptyDir": {}, "configMap": {"name": "c"}}]}, pod_types.ONE_SOURCE, True),
    ({"volumes": [{"name": "cache", "emptyDir": {}}]}, pod_types.MANAGED_VOLUME, True),
    ({"volumes": [{"name": "control-token", "emptyDir": {}}]}, pod_types.MANAGED_VOLUME, True),
    ({"volumes": [{"name": "t", "secret": {"secretName": "other-specfleet-control"}}]}, pod_types.CONTROL_SECRET, True),
    ({"volumes": [PVC, PVC]}, pod_types.DUPLICATE_VOLUME, True),
    ({"volumeMounts": [{"name": "nope", "mountPath": "/models"}]}, pod_types.UNKNOWN_VOLUME, True),
    (
        {"volumeMounts": [{"name": "models", "mountPath": "/m"}, {"name": "models", "mountPath": "/m"}]},
        pod_types.DUPLICATE_MOUNT,
        True,
    ),
    *[
        ({"volumeMounts": [{"name": "models", "mountPath": path}]}, pod_types.MANAGED_PATH, True)
        for path in (
            "/cache",
            "/tmp",
            "/tmp/x",
            "/dev/shm",
            "/dev",
            "/var/run/specfleet",
            "/var/run/specfleet/control",
            "/var/run/specfleet/control/token",
        )
    ],
    *[
        ({"volumeMounts": [{"name": "models", "mountPath": path}]}, pod_types.MOUNT_PATH_SYNTAX, False)
        for path in ("/", "models", "/a/../cache", "/cache/./x", "/a//b", "/a/", "/c:d")
    ],
    ({"volumeMounts": [{"name": "models", "mountPath": "/m", "subPath": "../etc"}]}, "subPath", False),
    ({"priorityClassName": "system-node-critical"}, pod_types.SYSTEM_PRIORITY, True),
    ({"serviceAccountName": "Other/Namespace"}, "serviceAccountName", False),
    ({"imagePullSecrets": [{"name": "a b"}]}, "imagePullSecrets", False),
    ({"image": ""}, "image", False),
    (
        {
            "affinity": {
                "nodeAffinity": {
                    "requiredDuringSchedulingIgnoredDuringExecution": {
                        "nodeSelectorTerms": [{"matchExpressions": [{"key": "gpu", "operator": "In"}]}]
                    }
                }
            }
        },
        pod_types.IN_NEEDS_VALUES,
        True,
    ),
    (
        {
            "affinity": {
                "podAffinity": {
                    "requiredDuringSchedulingIgnoredDuringExecution": [
                        {
                            "topologyKey": "zone",
                            "labelSelector": {
                                "matchExpressions": [{"key": "a", "operator": "Exists", "values": ["x"]}]
                            },
                        }
                    ]
                }
            }
        },
        pod_types.IN_NEEDS_VALUES,
        True,
    ),
    (
        {
            "affinity": {
                "nodeAffinity": {
                    "requiredDuringSchedulingIgnoredDuringExecution": {
                        "nodeSelectorTerms": [
                            {"matchExpressions": [{"key": "cores", "operator": "Gt", "values": ["many"]}]}
                        ]
                    }
                }
            }
        },
        pod_types.GT_LT_VALUE,
        True,
    ),
    (
        {
            "affinity": {
                "podAntiAffinity": {
                    "preferredDuringSchedulingIgnoredDuringExecution": [
                        {"weight": 101, "podAffinityTerm": {"topologyKey": "zone"}}
                    ]
                }
            }
        },
        "weight",
        False,
    ),
    (
        {
            "affinity": {
                "podAffinity": {
                    "requiredDuringSchedulingIgnoredDuringExecution": [
                        {"topologyKey": "zone", "labelSelector": {"matchLabels": {}}}
                    ]
                }
            }
        },
        "matchLabels",
        False,
    ),
]


@pytest.mark.parametrize(("runtime", "message", "same_in_crd"), REFUSED)
def test_refused_by_the_operator_and_by_the_api(runtime: dict[str, Any], message: str, same_in_crd: bool) -> None:
    spec = _spec(**runtime)
    assert message in _python_refusal(spec)
    refusals = _api_refusals(spec)
    assert refusals, f"the CRD admitted {runtime}"
    assert all(r.startswith("spec.runtime") for r in refusals), refusals
    if same_in_crd:
        assert any(message in r for r in refusals), refusals


@pytest.mark.parametrize(
    ("runtime", "refusal"),
    [
        (
            {"volumeMounts": [{"name": "models", "mountPath": "/m", "mountPropagation": "Bidirectional"}]},
            "mountPropagation: Extra inputs are not permitted",
        ),
        (
            {"volumes": [{"name": "models", "emptyDir": {}, "hostPath": {"path": "/"}}]},
            "hostPath is not an allowed volume source",
        ),
    ],
)
def test_fields_the_crd_does_not_know_are_pruned_before_they_reach_the_pod(
    runtime: dict[str, Any], refusal: str
) -> None:
    """The operator refuses them when it reads them; the API server drops them, so it never does."""
    spec = _spec(**runtime)
    assert refusal in _python_refusal(spec)
    assert _api_refusals(spec) == []
    stored = prune({**copy.deepcopy(BASE), "spec": spec}, SCHEMA, root=True)["spec"]
    assert "mountPropagation" not in str(stored)
    assert "hostPath" not in str(stored)
    parse_spec(stored)


def test_python_and_cel_agree_on_managed_paths() -> None:
    """reaches_managed_path (Python) and the mount's CEL rule judge every path near the managed ones alike."""
    near = {"/", "/x", "/cache/a", "/cachex", "/dev/shmx", "/tmpx", "/var", "/var/run/specfleet/controlx"}
    for managed in pod_types.MANAGED_MOUNTS.values():
        parts = managed.strip("/").split("/")
        near |= {managed, f"{managed}/sub", *("/" + "/".join(parts[:i]) for i in range(1, len(parts)))}
    paths = sorted(p for p in near if p != "/")
    for path in paths:
        spec = _spec(volumeMounts=[{"name": "models", "mountPath": path}])
        crd_refuses = any(pod_types.MANAGED_PATH in r for r in _api_refusals(spec))
        assert crd_refuses == pod_types.reaches_managed_path(path), path
