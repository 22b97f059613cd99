"""Children repair: how long the operator takes to put back a hand edit of its Deployment and to re-create a
deleted Service, with a timer far longer than that (so the repair comes from the watch).

Prints each measurement and the median: from the answer of the edit (or delete) to the emulator holding the
repaired object again.

    cd /work/main && python -m benchmarks.children_repair [--fleets 5]
"""

from __future__ import annotations

import argparse
import pathlib
import statistics
import tempfile
import time
from collections.abc import Callable
from typing import Any

import kubernetes.client
import kubernetes.config

from specfleet.emulator import EmulatorServer
from specfleet.operator.runner import BackgroundOperator
from tests.examples import EXAMPLES, load
from tests.fixtures.operator import in_namespace, operator_config, wait_for
from tests.reliability.process import install_cluster

NAME = "code-assistant"
TIMER_SECONDS = 600.0


def _timed(change: Callable[[], object], done: Callable[[], bool]) -> float:
    started = time.monotonic()
    change()
    wait_for(done, 60, "the repair")
    return time.monotonic() - started


def _repairs(emulator: EmulatorServer, client: kubernetes.client.ApiClient, namespace: str) -> tuple[float, float]:
    """(seconds to undo a hand edit of replicas, seconds to re-create a deleted Service) for one new fleet."""
    emulator.apply({"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": namespace}})
    fleet = in_namespace(load(EXAMPLES / "code-assistant-ngram.yaml"), namespace)
    fleet["spec"]["replicas"] = 2
    custom = kubernetes.client.CustomObjectsApi(client)
    custom.create_namespaced_custom_object("specfleet.dev", "v1alpha1", namespace, "specdecodedeployments", fleet)

    def child(api_version: str, plural: str) -> dict[str, Any]:
        return emulator.get(api_version, plural, NAME, namespace) or {}

    wait_for(lambda: child("v1", "services") and child("apps/v1", "deployments"), 60, "the children")
    time.sleep(0.5)  # the creation's own events are handled
    scale = {"spec": {"replicas": 7}}
    edit = _timed(
        lambda: kubernetes.client.AppsV1Api(client).patch_namespaced_deployment(
            NAME, namespace, scale, field_manager="kubectl-edit"
        ),
        lambda: child("apps/v1", "deployments")["spec"]["replicas"] == 2,
    )
    uid = child("v1", "services")["metadata"]["uid"]
    delete = _timed(
        lambda: kubernetes.client.CoreV1Api(client).delete_namespaced_service(NAME, namespace),
        lambda: child("v1", "services").get("metadata", {}).get("uid") not in (None, uid),
    )
    return edit, delete


def _shown(seconds: list[float]) -> str:
    return f"{', '.join(f'{s:.2f}' for s in seconds)} s; median {statistics.median(seconds):.2f} s"


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--fleets", type=int, default=5, help="fleets, one edit and one delete each")
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as tmp, EmulatorServer() as emulator:
        kubeconfig = install_cluster(emulator, pathlib.Path(tmp))
        client = kubernetes.config.new_client_from_config(config_file=str(kubeconfig))
        with BackgroundOperator(operator_config(kubeconfig, interval_seconds=TIMER_SECONDS)):
            measured = [_repairs(emulator, client, f"repair-{index}") for index in range(args.fleets)]
    print(f"timer interval                   {TIMER_SECONDS:g} s")
    print(f"hand edit (replicas 2→7) undone  {_shown([edit for edit, _ in measured])}")
    print(f"deleted Service re-created       {_shown([delete for _, delete in measured])}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
