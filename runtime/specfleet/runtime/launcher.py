"""`specfleet-runtime`: the GPU pod's entrypoint.

I/O shell. The container's args are exactly `EngineConfig.vllm_args()` as the operator rendered them. The
launcher parses and validates them, and has vLLM's own parser confirm that no extra argument changes a managed
setting (vllm_check.py); either failure exits 2 with one line naming it, before anything starts. It runs the
serving process (`python -m specfleet.runtime.serve`, i.e. vLLM plus the info metric and drain middleware) as
its child, and serves the pod's probes on its own port (SPECFLEET_HEALTH_PORT, default 8081):

- `GET /live`  200 while the engine process runs, also while it is still loading the model;
- `GET /ready` 200 once vLLM answers `/health` (model loaded) and no drain has started;
- `GET /info`  the info-metric labels as JSON (the metric itself is on the engine port's `/metrics`);
- `GET|PUT /speculation/table`  the live batch-size→k table (table_endpoint.py; PUT needs the token).

On SIGTERM: readiness goes false, the engine refuses new requests, in-flight ones finish up to
SPECFLEET_DRAIN_SECONDS, then vLLM is stopped (SIGTERM, then SIGKILL after STOP_SECONDS) and the launcher
exits 0. If vLLM exits by itself, the launcher exits with its code so the kubelet restarts the container.
"""

from __future__ import annotations

import asyncio
import logging
import os
import signal
import sys
import tempfile
from pathlib import Path
from typing import Any

import aiohttp
from aiohttp import web

from specfleet.runtime.drain import STATUS_PATH
from specfleet.runtime.engine_args import EngineConfigError
from specfleet.runtime.health import LIVE_PATH, READY_PATH
from specfleet.runtime.settings import STOP_SECONDS, RuntimePlan, plan
from specfleet.runtime.table_endpoint import TableEndpoint
from specfleet.runtime.vllm_check import recheck

log = logging.getLogger("specfleet.runtime")
EXIT_INVALID_CONFIG = 2
PROBE_TIMEOUT = aiohttp.ClientTimeout(total=2)
DRAIN_POLL_SECONDS = 0.2


class EngineClient:
    """The launcher's view of its engine over loopback HTTP."""

    def __init__(self, session: aiohttp.ClientSession, port: int) -> None:
        self.session = session
        self.base = f"http://127.0.0.1:{port}"

    async def healthy(self) -> bool:
        try:
            async with self.session.get(f"{self.base}/health", timeout=PROBE_TIMEOUT) as response:
                return response.status == 200
        except (aiohttp.ClientError, TimeoutError):
            return False

    async def drain(self, start: bool) -> dict[str, Any] | None:
        """Start the drain (POST) or read its state (GET); None when the engine does not answer."""
        method = "POST" if start else "GET"
        url = self.base + STATUS_PATH
        try:
            async with self.session.request(method, url, timeout=PROBE_TIMEOUT) as response:
                result: dict[str, Any] = await response.json()
                return result
        except (aiohttp.ClientError, TimeoutError):
            return None


class Supervisor:
    def __init__(self, runtime: RuntimePlan) -> None:
        self.runtime = runtime
        self.draining = False
        self.stop_requested = asyncio.Event()
        self.process: asyncio.subprocess.Process | None = None
        self.engine: EngineClient | None = None
        self.table = TableEndpoint(runtime.engine, Path(tempfile.mkdtemp(prefix="specfleet-table-")), os.environ)

    async def run(self) -> int:
        loop = asyncio.get_running_loop()
        for signum in (signal.SIGTERM, signal.SIGINT):
            loop.add_signal_handler(signum, self.stop_requested.set)
        env = {**self.runtime.child_env(os.environ), **self.table.child_env()}
        self.process = await asyncio.create_subprocess_exec(*self.runtime.child_argv(sys.executable), env=env)
        log.info("engine started (pid %d), config %s", self.process.pid, self.runtime.info_labels())
        if warning := self.runtime.hash_mismatch():
            log.warning(warning)
        probes = await self._serve_probes()
        try:
            async with aiohttp.ClientSession() as session:
                self.engine = EngineClient(session, self.runtime.engine.port)
                return await self._supervise(self.process)
        finally:
            await probes.cleanup()

    async def _supervise(self, process: asyncio.subprocess.Process) -> int:
        exited = asyncio.create_task(process.wait())
        stopping = asyncio.create_task(self.stop_requested.wait())
        await asyncio.wait({exited, stopping}, return_when=asyncio.FIRST_COMPLETED)
        if exited.done():
            stopping.cancel()
            log.error("engine exited by itself with code %s", process.returncode)
            return process.returncode or 1
        await self._drain()
        await self._stop(process)
        return 0

    async def _drain(self) -> None:
        # Readiness drops first, so the Service stops routing here before the engine starts refusing.
        self.draining = True
        assert self.engine is not None
        deadline = asyncio.get_running_loop().time() + self.runtime.settings.drain_seconds
        state = await self.engine.drain(start=True)
        while state is not None and state["in_flight"] > 0 and asyncio.get_running_loop().time() < deadline:
            await asyncio.sleep(DRAIN_POLL_SECONDS)
            state = await self.engine.drain(start=False)
        log.info("drain finished: %s", state if state is not None else "engine not serving")

    async def _stop(self, process: asyncio.subprocess.Process) -> None:
        if process.returncode is None:
            process.terminate()
        try:
            await asyncio.wait_for(process.wait(), STOP_SECONDS)
        except TimeoutError:
            log.warning("engine ignored SIGTERM for %ss; killing it", STOP_SECONDS)
            process.kill()
            await process.wait()

    async def _serve_probes(self) -> web.AppRunner:
        app = web.Application()
        app.router.add_get(LIVE_PATH, self._live)
        app.router.add_get(READY_PATH, self._ready)
        app.router.add_get("/info", self._info)
        self.table.register(app)
        runner = web.AppRunner(app, access_log=None)
        await runner.setup()
        await web.TCPSite(runner, "0.0.0.0", self.runtime.settings.health_port).start()
        return runner

    async def _live(self, _: web.Request) -> web.Response:
        alive = self.process is not None and self.process.returncode is None
        return web.json_response({"alive": alive}, status=200 if alive else 503)

    async def _ready(self, _: web.Request) -> web.Response:
        ready = not self.draining and self.engine is not None and await self.engine.healthy()
        return web.json_response({"ready": ready, "draining": self.draining}, status=200 if ready else 503)

    async def _info(self, _: web.Request) -> web.Response:
        return web.json_response(self.runtime.info_labels())


def main(argv: list[str] | None = None) -> int:
    logging.basicConfig(level=logging.INFO, format="%(asctime)s specfleet-runtime %(levelname)s %(message)s")
    args = sys.argv[1:] if argv is None else argv
    try:
        runtime = plan(args, os.environ)
        recheck(runtime)
    except EngineConfigError as exc:
        print(f"specfleet-runtime: invalid configuration: {exc}", file=sys.stderr)
        return EXIT_INVALID_CONFIG
    return asyncio.run(Supervisor(runtime).run())


if __name__ == "__main__":
    sys.exit(main())
