"""Real clients against the emulator: the `kubernetes` sync client, and a Kopf operator with peering."""

from __future__ import annotations

import asyncio
import contextlib
import logging
import pathlib
import threading
import time
from collections.abc import Callable, Iterator
from typing import Any

import kopf
import kubernetes
import pytest

from specfleet.emulator import EmulatorServer
from tests.emulator.widgets import API_VERSION, GROUP, KIND, PLURAL, widget

FINALIZER = "kopf.zalando.org/KopfFinalizerMarker"


def _client(emulator: EmulatorServer) -> kubernetes.client.ApiClient:
    config = kubernetes.client.Configuration()
    config.host = emulator.url
    return kubernetes.client.ApiClient(config)


def eventually(check: Callable[[], Any], timeout: float = 20) -> Any:
    deadline = time.monotonic() + timeout
    while not (result := check()):
        assert time.monotonic() < deadline, "condition not met in time"
        time.sleep(0.1)
    return result


def test_kubernetes_client_round_trip(kubeconfig: pathlib.Path, widgets: str, ns: str) -> None:
    api = kubernetes.client.CoreV1Api(kubernetes.config.new_client_from_config(config_file=str(kubeconfig)))
    owner = api.create_namespaced_config_map(ns, {"metadata": {"name": "owner"}, "data": {"a": "1"}})
    child = {
        "metadata": {
            "name": "child",
            "ownerReferences": [{"apiVersion": "v1", "kind": "ConfigMap", "name": "owner", "uid": owner.metadata.uid}],
        }
    }
    created = api.create_namespaced_config_map(ns, child)
    assert created.metadata.owner_references[0].uid == owner.metadata.uid
    assert [cm.metadata.name for cm in api.list_namespaced_config_map(ns).items] == ["child", "owner"]
    with pytest.raises(kubernetes.client.ApiException) as error:
        api.create_namespaced_config_map(ns, {"metadata": {"name": "owner"}})
    assert error.value.status == 409
    api.delete_namespaced_config_map("owner", ns)
    assert api.list_namespaced_config_map(ns).items == []


def test_kubernetes_client_custom_objects(emulator: EmulatorServer, widgets: str, ns: str) -> None:
    custom = kubernetes.client.CustomObjectsApi(_client(emulator))
    custom.create_namespaced_custom_object(GROUP, "v1", ns, PLURAL, widget("cw"))
    custom.patch_namespaced_custom_object_status(GROUP, "v1", ns, PLURAL, "cw", {"status": {"phase": "Up"}})
    custom.patch_namespaced_custom_object_scale(GROUP, "v1", ns, PLURAL, "cw", {"spec": {"replicas": 3}})
    stored = custom.get_namespaced_custom_object(GROUP, "v1", ns, PLURAL, "cw")
    assert (stored["spec"]["replicas"], stored["status"]["phase"]) == (3, "Up")
    watch = kubernetes.watch.Watch()
    events = list(watch.stream(custom.list_namespaced_custom_object, GROUP, "v1", ns, PLURAL, timeout_seconds=1))
    assert [(e["type"], e["object"]["metadata"]["name"]) for e in events] == [("ADDED", "cw")]


@contextlib.contextmanager
def running_operator(emulator: EmulatorServer, ns: str, registry: kopf.OperatorRegistry) -> Iterator[None]:
    """Kopf in its own thread and event loop, peering through a KopfPeering in `ns`."""
    emulator.apply(
        {
            "apiVersion": "kopf.dev/v1",
            "kind": "KopfPeering",
            "metadata": {"name": "emulated", "namespace": ns},
        }
    )

    @kopf.on.login(registry=registry)  # type: ignore[untyped-decorator]
    def login(**_: Any) -> kopf.ConnectionInfo:
        return kopf.ConnectionInfo(server=emulator.url, insecure=True)

    @kopf.on.startup(registry=registry)  # type: ignore[untyped-decorator]
    def configure(settings: kopf.OperatorSettings, **_: Any) -> None:
        settings.watching.server_timeout = 10
        settings.posting.enabled = True

    ready, stop = threading.Event(), threading.Event()
    coroutine = kopf.operator(
        registry=registry,
        namespaces=[ns],
        standalone=False,
        peering_name="emulated",
        ready_flag=ready,
        stop_flag=stop,
    )
    thread = threading.Thread(target=asyncio.run, args=(coroutine,), daemon=True)
    thread.start()
    try:
        assert ready.wait(20), "Kopf did not get ready"
        yield
    finally:
        stop.set()
        thread.join(timeout=20)
        assert not thread.is_alive()


@pytest.mark.slow
def test_kopf_operator_end_to_end(
    emulator: EmulatorServer, widgets: str, ns: str, caplog: pytest.LogCaptureFixture
) -> None:
    registry = kopf.OperatorRegistry()
    deleted: list[str] = []
    core = kubernetes.client.CoreV1Api(_client(emulator))

    @kopf.on.create(GROUP, "v1", PLURAL, registry=registry, id="create")  # type: ignore[untyped-decorator]
    def create(body: kopf.Body, name: str, namespace: str, patch: kopf.Patch, **_: Any) -> dict[str, str]:
        child = {
            "apiVersion": "v1",
            "kind": "ConfigMap",
            "metadata": {"name": f"{name}-config"},
            "data": {"k": "v"},
        }
        kopf.adopt(child, owner=body)
        core.create_namespaced_config_map(namespace, child)
        patch.status["phase"] = "Ready"
        return {"child": f"{name}-config"}

    @kopf.on.delete(GROUP, "v1", PLURAL, registry=registry)  # type: ignore[untyped-decorator]
    def delete(name: str, **_: Any) -> None:
        deleted.append(name)

    with running_operator(emulator, ns, registry):
        emulator.apply(widget("kopfy", namespace=ns))
        stored = eventually(
            lambda: (
                (w := emulator.get(API_VERSION, PLURAL, "kopfy", ns))
                and w.get("status", {}).get("phase") == "Ready"
                and w
            )
        )
        assert FINALIZER in stored["metadata"]["finalizers"]
        assert stored["status"]["create"] == {"child": "kopfy-config"}  # the handler's result
        config = emulator.get("v1", "configmaps", "kopfy-config", ns)
        assert config is not None
        assert (
            config["metadata"]["ownerReferences"][0] | {"kind": KIND, "uid": stored["metadata"]["uid"]}
            == config["metadata"]["ownerReferences"][0]
        )
        peering = eventually(
            lambda: (p := emulator.get("kopf.dev/v1", "kopfpeerings", "emulated", ns)) and p.get("status") and p
        )
        assert peering["status"]  # Kopf announced itself in the peering object

        kubernetes.client.CustomObjectsApi(_client(emulator)).delete_namespaced_custom_object(
            GROUP, "v1", ns, PLURAL, "kopfy"
        )
        eventually(lambda: emulator.get(API_VERSION, PLURAL, "kopfy", ns) is None)
        assert deleted == ["kopfy"]
        assert emulator.get("v1", "configmaps", "kopfy-config", ns) is None  # collected with its owner
    patches = [r for r in emulator.requests if r.method == "PATCH" and r.namespace == ns and r.resource == PLURAL]
    assert {r.subresource for r in patches} == {None, "status"}
    complaints = [r.getMessage() for r in caplog.records if r.levelno >= logging.WARNING and r.name.startswith("kopf")]
    assert [message for message in complaints if "OS signals" not in message] == []
