"""Server-Side Apply and managedFields: field sets, merge and ownership on plain data, then over HTTP with the
kubernetes client and the real kubectl (`apply --server-side`, `--force-conflicts`)."""

from __future__ import annotations

import json
import pathlib
import subprocess
from typing import Any

import kubernetes.client
import pytest
import yaml

from specfleet.emulator import EmulatorServer
from specfleet.emulator.apply import APPLY, UPDATE, Writer, managed_fields, merge, pruned
from specfleet.emulator.errors import ApiError
from specfleet.emulator.fieldsets import (
    Path,
    builtin_shape,
    from_fields_v1,
    members,
    schema_shapes,
    shown,
    to_fields_v1,
)
from tests.emulator.conftest import Http
from tests.emulator.widgets import widget
from tests.fixtures.deps import require_binary

APPLY_TYPE = "application/apply-patch+yaml"


def deployment(name: str = "web", replicas: int = 2, image: str = "web:1", **meta: Any) -> dict[str, Any]:
    labels = {"app": name}
    return {
        "apiVersion": "apps/v1",
        "kind": "Deployment",
        "metadata": {"name": name, **meta},
        "spec": {
            "replicas": replicas,
            "selector": {"matchLabels": labels},
            "template": {
                "metadata": {"labels": labels},
                "spec": {
                    "containers": [
                        {
                            "name": "web",
                            "image": image,
                            "ports": [{"containerPort": 80}],
                            "env": [{"name": "A", "value": "1"}],
                        }
                    ]
                },
            },
        },
    }


# --- field sets on plain data ---------------------------------------------------------------------


def test_field_set_uses_list_map_keys_and_atomic_selectors() -> None:
    fields = to_fields_v1(members(deployment(), builtin_shape))
    spec = fields["f:spec"]
    assert spec["f:selector"] == {}  # a LabelSelector is atomic: owned whole
    container = spec["f:template"]["f:spec"]["f:containers"]['k:{"name":"web"}']
    assert container["."] == {}
    assert container["f:image"] == {}
    # A port is keyed by containerPort and protocol, the protocol defaulted as the server defaults it.
    assert container["f:ports"] == {'k:{"containerPort":80,"protocol":"TCP"}': {".": {}, "f:containerPort": {}}}
    assert container["f:env"] == {'k:{"name":"A"}': {".": {}, "f:name": {}, "f:value": {}}}
    assert fields["f:metadata"] == {"f:name": {}}
    service_ports = members({"spec": {"ports": [{"port": 8000, "protocol": "UDP"}]}}, builtin_shape)
    assert ("f:spec", "f:ports", 'k:{"port":8000,"protocol":"UDP"}') in service_ports


def test_fields_v1_round_trip_and_paths_as_messages_show_them() -> None:
    paths = set(members(deployment(), builtin_shape))
    assert from_fields_v1(to_fields_v1(paths)) == paths
    image = ("f:spec", "f:template", "f:spec", "f:containers", 'k:{"name":"web"}', "f:image")
    assert image in paths
    assert shown(image) == '.spec.template.spec.containers[name="web"].image'
    assert shown(("f:metadata", "f:finalizers", 'v:"a/b"')) == '.metadata.finalizers[="a/b"]'


def test_crd_schema_list_types() -> None:
    schema = {
        "type": "object",
        "properties": {
            "spec": {
                "type": "object",
                "properties": {
                    "routes": {
                        "type": "array",
                        "x-kubernetes-list-type": "map",
                        "x-kubernetes-list-map-keys": ["host", "port"],
                        "items": {"type": "object", "properties": {"host": {"type": "string"}}},
                    },
                    "tags": {"type": "array", "x-kubernetes-list-type": "set", "items": {"type": "string"}},
                    "args": {"type": "array", "items": {"type": "string"}},
                },
            }
        },
    }
    found = members(
        {"spec": {"routes": [{"host": "a", "port": 1, "w": 2}], "tags": ["x"], "args": ["y"]}}, schema_shapes(schema)
    )
    assert found[("f:spec", "f:args")] == ["y"]  # no list type: atomic
    assert ("f:spec", "f:tags", 'v:"x"') in found
    assert ("f:spec", "f:routes", 'k:{"host":"a","port":1}', "f:w") in found


def test_merge_follows_the_schema() -> None:
    live = deployment()
    live["spec"]["template"]["spec"]["containers"].append({"name": "sidecar", "image": "s:1"})
    live["metadata"]["finalizers"] = ["a"]
    config = {
        "metadata": {"finalizers": ["b"]},
        "spec": {
            "selector": {"matchLabels": {"other": "x"}},
            "template": {"spec": {"containers": [{"name": "web", "image": "web:2"}]}},
        },
    }
    merged = merge(live, config, builtin_shape)
    containers = merged["spec"]["template"]["spec"]["containers"]
    assert [(c["name"], c["image"]) for c in containers] == [("web", "web:2"), ("sidecar", "s:1")]
    assert containers[0]["env"] == [{"name": "A", "value": "1"}]  # merged item by item, not replaced
    assert merged["spec"]["selector"] == {"matchLabels": {"other": "x"}}  # atomic: replaced whole
    assert merged["metadata"]["finalizers"] == ["a", "b"]  # a set: union


def _shapes_members(obj: dict[str, Any]) -> set[Any]:
    return set(members(obj, builtin_shape))


def test_ownership_conflicts_force_and_shared_values() -> None:
    created = deployment()
    created["metadata"]["managedFields"] = managed_fields(
        None, created, Writer("op", APPLY, applied=frozenset(_shapes_members(created))), builtin_shape, "apps/v1", "t0"
    )
    scaled = {**created, "spec": {**created["spec"], "replicas": 7}}
    scaled["metadata"] = {**created["metadata"]}
    scaled["metadata"]["managedFields"] = managed_fields(created, scaled, Writer("hpa"), builtin_shape, "apps/v1", "t1")
    owners = {e["manager"]: from_fields_v1(e["fieldsV1"]) for e in scaled["metadata"]["managedFields"]}
    assert owners["hpa"] == {("f:spec", "f:replicas")}
    assert ("f:spec", "f:replicas") not in owners["op"]  # an Update takes the fields it changes
    back = {**scaled, "spec": {**scaled["spec"], "replicas": 2}}
    applying = Writer("op", APPLY, applied=frozenset(_shapes_members(created)))
    with pytest.raises(ApiError) as caught:
        managed_fields(scaled, back, applying, builtin_shape, "apps/v1", "t2")
    assert caught.value.code == 409
    assert (
        caught.value.message == 'Apply failed with 1 conflict: conflict with "hpa" using apps/v1 at t1: .spec.replicas'
    )
    forced = Writer("op", APPLY, applied=applying.applied, force=True)
    entries = managed_fields(scaled, back, forced, builtin_shape, "apps/v1", "t2")
    assert [e["manager"] for e in entries] == ["op"]  # hpa owned nothing else: its entry is gone
    # The same value applied by a second manager is shared, not a conflict.
    other = Writer("other", APPLY, applied=frozenset({("f:spec", "f:replicas")}))
    shared = managed_fields(created, created, other, builtin_shape, "apps/v1", "t3")
    assert {e["manager"] for e in shared} == {"op", "other"}


def test_prune_keeps_what_others_own() -> None:
    obj = {"metadata": {"name": "x", "annotations": {"mine": "1", "theirs": "2", "both": "3"}}}

    def owned(*keys: str) -> set[Path]:
        return {("f:metadata", "f:annotations", f"f:{key}") for key in keys}

    applied_before, applied_now, others = owned("mine", "both"), owned(), owned("theirs", "both")
    result = pruned(obj, applied_before - applied_now - others, applied_now | others)
    assert result["metadata"]["annotations"] == {"theirs": "2", "both": "3"}
    gone = pruned(obj, owned("mine", "theirs", "both"), set())
    assert gone["metadata"] == {"name": "x"}  # emptied by the prune: removed too


def test_update_records_changed_fields_only() -> None:
    old = deployment()
    new = deployment(image="web:2")
    entries = managed_fields(old, new, Writer("kubectl-edit", UPDATE), builtin_shape, "apps/v1", "t")
    assert entries[0]["operation"] == "Update"
    assert from_fields_v1(entries[0]["fieldsV1"]) == {
        ("f:spec", "f:template", "f:spec", "f:containers", 'k:{"name":"web"}', "f:image")
    }


# --- over HTTP ---------------------------------------------------------------------------------------


def _apps(kubeconfig: pathlib.Path) -> kubernetes.client.AppsV1Api:
    return kubernetes.client.AppsV1Api(kubernetes.config.new_client_from_config(config_file=str(kubeconfig)))


def _apply(apps: kubernetes.client.AppsV1Api, ns: str, body: dict[str, Any], manager: str, force: bool = False) -> Any:
    return apps.patch_namespaced_deployment(
        body["metadata"]["name"], ns, body, field_manager=manager, force=force, _content_type=APPLY_TYPE
    )


def _managers(emulator: EmulatorServer, ns: str, name: str = "web") -> dict[str, dict[str, Any]]:
    stored = emulator.get("apps/v1", "deployments", name, ns) or {}
    return {f"{e['manager']}/{e['operation']}": e for e in stored["metadata"]["managedFields"]}


def test_client_apply_conflict_force_and_other_managers_fields(
    kubeconfig: pathlib.Path, emulator: EmulatorServer, ns: str
) -> None:
    apps = _apps(kubeconfig)
    _apply(apps, ns, deployment(), "op")
    # Someone else scales it and annotates it.
    apps.patch_namespaced_deployment("web", ns, {"spec": {"replicas": 7}}, field_manager="kubectl-scale")
    apps.patch_namespaced_deployment("web", ns, {"metadata": {"annotations": {"team": "a"}}}, field_manager="ann")
    with pytest.raises(kubernetes.client.ApiException) as caught:
        _apply(apps, ns, deployment(), "op")
    assert caught.value.status == 409
    cause = json.loads(caught.value.body)["details"]["causes"][0]
    assert (cause["field"], cause["reason"]) == (".spec.replicas", "FieldManagerConflict")
    assert cause["message"].startswith('conflict with "kubectl-scale" using apps/v1')
    assert (emulator.get("apps/v1", "deployments", "web", ns) or {})["spec"]["replicas"] == 7  # nothing written
    applied = _apply(apps, ns, deployment(image="web:2"), "op", force=True)
    assert (applied.spec.replicas, applied.spec.template.spec.containers[0].image) == (2, "web:2")
    assert applied.metadata.annotations == {"team": "a"}  # another manager's field stays
    assert set(_managers(emulator, ns)) == {"op/Apply", "ann/Update"}


def test_client_apply_prunes_what_it_stopped_applying_and_noop_stores_nothing(
    kubeconfig: pathlib.Path, emulator: EmulatorServer, ns: str
) -> None:
    apps = _apps(kubeconfig)
    first = deployment(annotations={"old": "x", "kept": "y"})
    _apply(apps, ns, first, "op")
    version = (emulator.get("apps/v1", "deployments", "web", ns) or {})["metadata"]["resourceVersion"]
    _apply(apps, ns, first, "op")  # unchanged: no new version
    assert (emulator.get("apps/v1", "deployments", "web", ns) or {})["metadata"]["resourceVersion"] == version
    second = deployment(annotations={"kept": "y"})
    second["spec"]["template"]["spec"]["containers"][0].pop("env")
    result = _apply(apps, ns, second, "op")
    assert result.metadata.annotations == {"kept": "y"}
    assert result.spec.template.spec.containers[0].env is None


def test_apply_validation_creation_and_status(http: Http, widgets: str, emulator: EmulatorServer, ns: str) -> None:
    code, status = http("PATCH", f"{widgets}/ssa", widget("ssa", mode="On"), content_type=APPLY_TYPE)
    assert (code, status["reason"]) == (422, "Invalid")
    assert "fieldManager: Required value" in status["message"]
    code, status = http("PATCH", f"{widgets}/ssa?fieldManager=t", b"spec:\n  replicas: 3\n", content_type=APPLY_TYPE)
    assert code == 400  # no apiVersion and kind
    yaml_body = yaml.safe_dump(widget("ssa", mode="On", replicas=2)).encode()
    code, created = http("PATCH", f"{widgets}/ssa?fieldManager=t", yaml_body, content_type=APPLY_TYPE)
    assert (code, created["spec"]["mode"], created["metadata"]["managedFields"][0]["manager"]) == (201, "On", "t")
    code, status = http(
        "PATCH", f"{widgets}/ssa?force=true", {"spec": {"replicas": 1}}, content_type="application/merge-patch+json"
    )
    assert (code, status["reason"]) == (422, "Invalid")
    # Status goes through its subresource, recorded with it; the main resource's apply ignores status.
    status_body = {**widget("ssa"), "status": {"phase": "Up"}}
    code, _ = http("PATCH", f"{widgets}/ssa/status?fieldManager=ctl", status_body, content_type=APPLY_TYPE)
    assert code == 200
    code, again = http(
        "PATCH",
        f"{widgets}/ssa?fieldManager=t",
        {**widget("ssa", mode="On", replicas=2), "status": {"phase": "X"}},
        content_type=APPLY_TYPE,
    )
    assert (code, again["status"]["phase"]) == (200, "Up")
    entries = {(e["manager"], e.get("subresource")) for e in again["metadata"]["managedFields"]}
    assert entries == {("t", None), ("ctl", "status")}
    # The scale subresource writes replicas as its own manager.
    code, _ = http(
        "PATCH",
        f"{widgets}/ssa/scale?fieldManager=hpa",
        {"spec": {"replicas": 4}},
        content_type="application/merge-patch+json",
    )
    assert code == 200
    stored = emulator.get("test.dev/v1", "widgets", "ssa", ns) or {}
    scaler = next(e for e in stored["metadata"]["managedFields"] if e["manager"] == "hpa")
    assert (scaler["operation"], scaler["subresource"]) == ("Update", "scale")
    assert scaler["fieldsV1"] == {"f:spec": {"f:replicas": {}}}


def _kubectl(kubeconfig: pathlib.Path, ns: str, *args: str) -> subprocess.CompletedProcess[str]:
    command = [require_binary("kubectl"), f"--kubeconfig={kubeconfig}", "-n", ns, *args]
    return subprocess.run(command, capture_output=True, text=True, timeout=60, check=False)


@pytest.mark.slow
def test_kubectl_server_side_apply_conflict_and_force(
    kubeconfig: pathlib.Path, tmp_path: pathlib.Path, emulator: EmulatorServer, ns: str
) -> None:
    manifest = tmp_path / "web.yaml"
    manifest.write_text(yaml.safe_dump(deployment()))
    done = _kubectl(kubeconfig, ns, "apply", "--server-side", "-f", str(manifest))
    assert done.returncode == 0, done.stderr
    assert "serverside-applied" in done.stdout
    assert _kubectl(kubeconfig, ns, "scale", "deployment/web", "--replicas=5").returncode == 0
    manifest.write_text(yaml.safe_dump(deployment(image="web:2")))
    refused = _kubectl(kubeconfig, ns, "apply", "--server-side", "-f", str(manifest))
    assert refused.returncode != 0
    assert "conflict" in refused.stderr
    assert ".spec.replicas" in refused.stderr
    forced = _kubectl(kubeconfig, ns, "apply", "--server-side", "--force-conflicts", "-f", str(manifest))
    assert forced.returncode == 0, forced.stderr
    stored = emulator.get("apps/v1", "deployments", "web", ns) or {}
    assert stored["spec"]["replicas"] == 2
    assert stored["spec"]["template"]["spec"]["containers"][0]["image"] == "web:2"
    assert [e["manager"] for e in stored["metadata"]["managedFields"]] == ["kubectl"]
