"""EmulatorServer: the emulator on a loopback port, in a thread with its own event loop."""

from __future__ import annotations

import asyncio
import pathlib
import threading
from collections.abc import Callable
from types import TracebackType
from typing import Any, Self, TypeVar

import aiohttp.web
import yaml

from specfleet.emulator.emulator import KubeEmulator
from specfleet.emulator.recording import RecordedRequest
from specfleet.emulator.resources import ResourceType

T = TypeVar("T")
_DEFAULT_NAMESPACES = ("default", "kube-system", "kube-public")


class EmulatorServer:
    """A Kubernetes API on http://host:port; `with EmulatorServer() as srv:` starts and stops it."""

    def __init__(
        self,
        host: str = "127.0.0.1",
        port: int = 0,
        *,
        history_limit: int = 10000,
        bookmark_interval: float = 60.0,
    ) -> None:
        self.host = host
        self.emulator = KubeEmulator(history_limit=history_limit, bookmark_interval=bookmark_interval)
        self._port = port
        self._loop: asyncio.AbstractEventLoop | None = None
        self._thread: threading.Thread | None = None
        self._runner: aiohttp.web.BaseRunner | None = None

    # --- lifecycle -----------------------------------------------------------------------------

    def start(self) -> None:
        """Serve in a background thread; returns once the port listens."""
        started = threading.Event()
        failure: list[BaseException] = []

        def run() -> None:
            loop = asyncio.new_event_loop()
            self._loop = loop
            try:
                loop.run_until_complete(self._up())
            except BaseException as exc:
                failure.append(exc)
                started.set()
                loop.close()
                return
            started.set()
            loop.run_forever()
            loop.run_until_complete(self._down())
            _finish_tasks(loop)
            loop.close()

        self._thread = threading.Thread(target=run, name="k8s-emulator", daemon=True)
        self._thread.start()
        started.wait()
        if failure:
            raise failure[0]
        for namespace in _DEFAULT_NAMESPACES:
            self.apply({"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": namespace}})

    async def _up(self) -> None:
        await self.emulator.__aenter__()
        server = aiohttp.web.Server(self.emulator, handler_cancellation=True)
        self._runner = aiohttp.web.ServerRunner(server, shutdown_timeout=0.5)
        await self._runner.setup()
        site = aiohttp.web.TCPSite(self._runner, self.host, self._port)
        await site.start()
        self._port = self._runner.addresses[0][1]

    async def _down(self) -> None:
        if self._runner is not None:
            await self._runner.cleanup()
        await self.emulator.__aexit__(None, None, None)

    def stop(self) -> None:
        if self._loop is not None and self._thread is not None:
            self._loop.call_soon_threadsafe(self._loop.stop)
            self._thread.join(timeout=10)
        self._loop = self._thread = None

    def __enter__(self) -> Self:
        self.start()
        return self

    def __exit__(
        self, exc_type: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None
    ) -> None:
        self.stop()

    # --- access --------------------------------------------------------------------------------

    @property
    def url(self) -> str:
        return f"http://{self.host}:{self._port}"

    def write_kubeconfig(self, path: str | pathlib.Path) -> pathlib.Path:
        """A kubeconfig for kubectl and the kubernetes client (no auth: the emulator has none)."""
        config = {
            "apiVersion": "v1",
            "kind": "Config",
            "clusters": [{"name": "emulator", "cluster": {"server": self.url}}],
            "users": [{"name": "emulator", "user": {"token": "emulator"}}],
            "contexts": [
                {
                    "name": "emulator",
                    "context": {"cluster": "emulator", "user": "emulator", "namespace": "default"},
                }
            ],
            "current-context": "emulator",
        }
        target = pathlib.Path(path)
        target.write_text(yaml.safe_dump(config))
        return target

    def _call(self, fn: Callable[[], T]) -> T:
        """Run `fn` on the emulator's loop (where the store lives) and wait for its result."""
        if self._loop is None:
            raise RuntimeError("the emulator is not running; call start() first")

        async def call() -> T:
            return fn()

        return asyncio.run_coroutine_threadsafe(call(), self._loop).result(timeout=30)

    def _type(self, api_version: str, kind: str | None = None, plural: str | None = None) -> ResourceType:
        group, _, version = api_version.rpartition("/")
        registry = self.emulator.store.registry
        rt = registry.by_kind(api_version, kind) if kind else registry.find(group, version, plural or "")
        if rt is None:
            raise LookupError(f"the emulator serves no {kind or plural} in {api_version}")
        return rt

    def apply(self, manifest: dict[str, Any]) -> dict[str, Any]:
        """Create or replace an object (a CRD registers its resources), status included; the stored object."""
        rt = self._type(manifest["apiVersion"], kind=manifest["kind"])
        namespace = manifest.get("metadata", {}).get("namespace") or ("default" if rt.namespaced else None)
        name = manifest["metadata"]["name"]
        body = {
            **manifest,
            "metadata": {k: v for k, v in manifest["metadata"].items() if k != "resourceVersion"},
        }
        store = self.emulator.store

        def write() -> dict[str, Any]:
            if store.exists(rt, namespace, name):
                stored = store.update(rt, namespace, name, body, None)
            else:
                stored = store.create(rt, namespace, body)
            if rt.status and "status" in manifest:
                stored = store.update(rt, namespace, name, {**stored, "status": manifest["status"]}, "status")
            return stored

        return self._call(write)

    def apply_path(self, path: str | pathlib.Path) -> list[dict[str, Any]]:
        """Apply every YAML document of a file, or of each *.yaml/*.yml file of a folder (in name order)."""
        path = pathlib.Path(path)
        files = sorted([*path.glob("*.yaml"), *path.glob("*.yml")]) if path.is_dir() else [path]
        documents = [doc for file in files for doc in yaml.safe_load_all(file.read_text())]
        return [self.apply(doc) for doc in documents if isinstance(doc, dict)]

    def get(self, api_version: str, kind_plural: str, name: str, namespace: str | None = None) -> dict[str, Any] | None:
        """The stored object, or None; `kind_plural` is the resource's plural name (`deployments`)."""
        rt = self._type(api_version, plural=kind_plural)
        store = self.emulator.store
        return self._call(lambda: store.get(rt, namespace, name) if store.exists(rt, namespace, name) else None)

    @property
    def requests(self) -> list[RecordedRequest]:
        return self.emulator.recorder.snapshot()

    def clear_requests(self) -> None:
        self.emulator.recorder.clear()

    def created(self, plural: str, namespace: str | None = None) -> list[str]:
        """The names of the objects of a resource created (ADDED), in order, as far as the watch log still
        reaches: with Server-Side Apply a create is a PATCH, so the request log cannot tell."""
        changes = self._call(lambda: self.emulator.store.log.after(0))
        return [
            change.obj["metadata"]["name"]
            for change in changes
            if change.type == "ADDED" and change.plural == plural and namespace in (None, change.namespace)
        ]


def _finish_tasks(loop: asyncio.AbstractEventLoop) -> None:
    """Cancel what is still running (handlers of clients that kept their connection) and let it unwind, as
    asyncio.run does: a loop closed over pending tasks logs "Task was destroyed but it is pending!"."""
    pending = asyncio.all_tasks(loop)
    for task in pending:
        task.cancel()
    if pending:  # gather() of nothing asks for the thread's current loop, which this thread never sets
        loop.run_until_complete(asyncio.gather(*pending, return_exceptions=True))
    loop.run_until_complete(loop.shutdown_asyncgens())
