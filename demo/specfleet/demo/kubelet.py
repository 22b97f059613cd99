"""SHELL the kubelet and Deployment controller of the local fleet; what runs in each pod is a subclass's.

One thread, two cadences. Every `tick` the subclass advances its pods (`_step`) and pods that have finished
leaving are released. Every `sync` it reads the Deployments and Pods through the Kubernetes API (the
emulator's HTTP API, with the official client), creates and deletes Pod objects as the Deployment's
RollingUpdate (maxSurge, maxUnavailable) would, marks pods Ready once their engine is (status.podIP 127.0.0.1, the
`specfleet.dev/metrics-port` annotation naming the port their `/metrics` listens on), and writes the
Deployments' status through the status subresource.
"""

from __future__ import annotations

import base64
import json
import logging
import secrets
import threading
import time
from abc import ABC, abstractmethod
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any, Generic, TypeVar

import kubernetes.client

from specfleet.demo.rollout import PodView, plan
from specfleet.operator.api.constants import (
    ANNOTATION_CONTROL_PORT,
    ANNOTATION_METRICS_PORT,
    LABEL_CONFIG_HASH,
    LABEL_MANAGED_BY,
    MANAGER,
)
from specfleet.operator.api.pod_types import CONTROL_VOLUME
from specfleet.operator.render.children import CONTROL_TOKEN_KEY

log = logging.getLogger(__name__)
SELECTOR = f"{LABEL_MANAGED_BY}={MANAGER}"
POD_IP = "127.0.0.1"

Target = tuple[str, dict[str, str]]  # host:port, Prometheus target labels


@dataclass
class LocalPod:
    """What every local pod has; subclasses add their engine."""

    name: str
    namespace: str
    deployment: str
    config_hash: str
    created: float
    ready: bool = False
    leaving_since: float | None = None

    @property
    def metrics_port(self) -> int:
        raise NotImplementedError

    @property
    def control_port(self) -> int | None:
        """The port of its live-table control endpoint (the runtime's health port), if it serves one."""
        return None


P = TypeVar("P", bound=LocalPod)


@dataclass(frozen=True)
class NewPod:
    """A pod to start: its identity and the container the Deployment's template describes."""

    name: str
    namespace: str
    deployment: str
    config_hash: str
    container: dict[str, Any]
    created: float
    # The token of the Secret volume the template mounts (the operator's control token), as a kubelet mounts it.
    control_token: str | None = None


class LocalKubelet(ABC, Generic[P]):
    """Plays kubelet and Deployment controller for one namespace."""

    def __init__(
        self,
        client: kubernetes.client.ApiClient,
        namespace: str,
        *,
        tick: float,
        sync: float,
        on_targets: Callable[[list[Target]], None] | None = None,
    ) -> None:
        self.core = kubernetes.client.CoreV1Api(client)
        self.apps = kubernetes.client.AppsV1Api(client)
        self.namespace = namespace
        self.tick = tick
        self.sync = sync
        self.on_targets = on_targets
        self.lock = threading.RLock()
        self.pods: dict[str, P] = {}
        self._status: dict[str, dict[str, Any]] = {}
        self._epoch = time.monotonic()
        self._last_sync = -1e9
        self._targets: list[Target] | None = None
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, name="local-fleet", daemon=True)

    # ------------------------------------------------------------------ what runs in a pod

    @abstractmethod
    def _launch(self, pod: NewPod) -> P:
        """Start the pod's engine."""

    @abstractmethod
    def _engine_ready(self, pod: P) -> bool:
        """Whether the pod's readiness probe passes now."""

    @abstractmethod
    def _on_leave(self, pod: P) -> None:
        """The pod stops taking requests and starts draining."""

    @abstractmethod
    def _left(self, pod: P) -> bool:
        """Whether a leaving pod has finished (drained and stopped)."""

    @abstractmethod
    def _release(self, pod: P) -> None:
        """Stop whatever still runs for the pod."""

    def _step(self, now: float) -> None:
        """Per-tick work of the engines (none by default)."""

    # ------------------------------------------------------------------ lifecycle and access

    def now(self) -> float:
        """Seconds since the fleet started (1:1 with the wall clock)."""
        return time.monotonic() - self._epoch

    def start(self) -> LocalKubelet[P]:
        self._thread.start()
        return self

    def stop(self) -> None:
        self._stop.set()
        self._thread.join(timeout=10)
        with self.lock:
            for pod in self.pods.values():
                self._release(pod)
            self.pods.clear()

    def serving(self, deployment: str) -> list[P]:
        """The pods of a deployment that exist (not leaving)."""
        with self.lock:
            return [p for p in self.pods.values() if p.deployment == deployment and p.leaving_since is None]

    # ------------------------------------------------------------------ the loop

    def _run(self) -> None:
        while not self._stop.wait(self.tick):
            try:
                with self.lock:
                    self._step(self.now())
                    self._reap()
                if self.now() - self._last_sync >= self.sync:
                    self._last_sync = self.now()
                    self._sync()
            except Exception:  # the fleet must outlive one failed API call; the next sync retries
                log.exception("local fleet step failed")

    def _reap(self) -> None:
        for pod in list(self.pods.values()):
            if pod.leaving_since is not None and self._left(pod):
                self._release(pod)
                del self.pods[pod.name]

    def _sync(self) -> None:
        deployments = _items(
            self.apps.list_namespaced_deployment(self.namespace, label_selector=SELECTOR, _preload_content=False)
        )
        listed = _items(self.core.list_namespaced_pod(self.namespace, label_selector=SELECTOR, _preload_content=False))
        existing = {p["metadata"]["name"] for p in listed}
        with self.lock:
            for pod in list(self.pods.values()):
                if pod.leaving_since is None and pod.name not in existing and self.now() - pod.created > 2 * self.sync:
                    self._leave(pod)  # deleted by someone else (kubectl delete pod)
            names = {d["metadata"]["name"] for d in deployments}
            for pod in list(self.pods.values()):
                if pod.deployment not in names and pod.leaving_since is None:
                    self._leave(pod, delete=False)
        for deployment in deployments:
            self._reconcile(deployment)
        self._publish_targets()

    def _reconcile(self, deployment: dict[str, Any]) -> None:
        meta, spec = deployment["metadata"], deployment["spec"]
        name = meta["name"]
        template_hash = spec["template"]["metadata"]["labels"][LABEL_CONFIG_HASH]
        with self.lock:
            for pod in self.serving(name):
                if not pod.ready and self._engine_ready(pod):
                    self._mark_ready(pod)
            views = [PodView(p.name, p.config_hash, p.ready, p.created) for p in self.serving(name)]
            rolling = (spec.get("strategy") or {}).get("rollingUpdate") or {}
            surge, unavailable = int(rolling.get("maxSurge", 1)), int(rolling.get("maxUnavailable", 0))
            actions = plan(int(spec.get("replicas", 1)), template_hash, views, surge, unavailable)
            for pod_name in actions.delete:
                self._leave(self.pods[pod_name])
            for _ in range(actions.create):
                self._create(deployment, template_hash)
            self._write_status(deployment, template_hash)

    # ------------------------------------------------------------------ pods

    def _create(self, deployment: dict[str, Any], template_hash: str) -> None:
        meta, template = deployment["metadata"], deployment["spec"]["template"]
        new = NewPod(
            name=f"{meta['name']}-{template_hash[:6]}-{secrets.token_hex(3)}",
            namespace=self.namespace,
            deployment=meta["name"],
            config_hash=template_hash,
            container=template["spec"]["containers"][0],
            created=self.now(),
            control_token=self._secret_token(template["spec"]),
        )
        pod = self._launch(new)
        annotations = {
            **template["metadata"].get("annotations", {}),
            ANNOTATION_METRICS_PORT: str(pod.metrics_port),
        }
        if pod.control_port is not None:
            annotations[ANNOTATION_CONTROL_PORT] = str(pod.control_port)
        body = {
            "apiVersion": "v1",
            "kind": "Pod",
            "metadata": {
                "name": new.name,
                "namespace": self.namespace,
                "labels": dict(template["metadata"]["labels"]),
                "annotations": annotations,
                "ownerReferences": [
                    {
                        "apiVersion": "apps/v1",
                        "kind": "Deployment",
                        "name": meta["name"],
                        "uid": meta["uid"],
                        "controller": True,
                    }
                ],
            },
            "spec": {**template["spec"], "nodeName": "local"},
            "status": {"phase": "Pending", "conditions": [_condition("Ready", False)]},
        }
        try:
            self.core.create_namespaced_pod(self.namespace, body)
        except BaseException:
            self._release(pod)
            raise
        self.pods[new.name] = pod

    def _secret_token(self, pod_spec: dict[str, Any]) -> str | None:
        """The control token from the Secret volume the pod mounts; None while that Secret does not exist."""
        for volume in pod_spec.get("volumes", []):
            if volume.get("name") != CONTROL_VOLUME:
                continue
            try:
                secret = self.core.read_namespaced_secret(volume["secret"]["secretName"], self.namespace)
            except kubernetes.client.ApiException as exc:
                if exc.status == 404:
                    return None
                raise
            raw = (secret.data or {}).get(CONTROL_TOKEN_KEY)
            return base64.b64decode(raw).decode() if raw else None
        return None

    def _mark_ready(self, pod: P) -> None:
        status = {
            "phase": "Running",
            "podIP": POD_IP,
            "hostIP": POD_IP,
            "conditions": [_condition("Ready", True)],
        }
        self.core.patch_namespaced_pod(pod.name, self.namespace, {"status": status})
        pod.ready = True

    def _leave(self, pod: P, delete: bool = True) -> None:
        """Stop routing to the pod, let it drain, delete its object."""
        pod.leaving_since = self.now()
        self._on_leave(pod)
        if delete:
            try:
                self.core.delete_namespaced_pod(pod.name, self.namespace)
            except kubernetes.client.ApiException as exc:
                if exc.status != 404:
                    raise

    def _write_status(self, deployment: dict[str, Any], template_hash: str) -> None:
        meta = deployment["metadata"]
        pods = self.serving(meta["name"])
        ready = sum(p.ready for p in pods)
        status = {
            "observedGeneration": meta.get("generation", 1),
            "replicas": len(pods),
            "updatedReplicas": sum(p.config_hash == template_hash for p in pods),
            "readyReplicas": ready,
            "availableReplicas": ready,
            "unavailableReplicas": max(int(deployment["spec"].get("replicas", 1)) - ready, 0),
        }
        written = self._status.get(meta["name"])
        if status != written or status != {k: (deployment.get("status") or {}).get(k) for k in status}:
            self.apps.patch_namespaced_deployment_status(meta["name"], self.namespace, {"status": status})
            self._status[meta["name"]] = status

    def _publish_targets(self) -> None:
        if self.on_targets is None:
            return
        with self.lock:
            targets = [
                (
                    f"{POD_IP}:{p.metrics_port}",
                    {
                        "namespace": p.namespace,
                        "specfleet_dev_deployment": p.deployment,
                        "specfleet_dev_config_hash": p.config_hash,
                        "pod": p.name,
                    },
                )
                for p in self.pods.values()
                if p.ready and p.leaving_since is None
            ]
        if targets != self._targets:
            self.on_targets(targets)
            self._targets = targets


def _items(response: Any) -> list[dict[str, Any]]:
    items: list[dict[str, Any]] = json.loads(response.data)["items"]
    return items


def _condition(kind: str, ok: bool) -> dict[str, str]:
    stamp = time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime())
    return {"type": kind, "status": "True" if ok else "False", "lastTransitionTime": stamp}
