"""SHELL the Job controller and kubelet of the local fleet for Jobs: each Job's pod runs its container's command
as a local process, with its volumes as folders.

Every `sync` it lists the namespace's Jobs that specfleet manages (the emulator's HTTP API, the official
client). A new Job gets its Pod object (labelled `job-name`, owned by the Job) and its process: the
container's ConfigMap and Secret volumes are written to folders under `workdir/<job>/`, an emptyDir is an
empty one, and every argument under a mount path (and the termination-message path) is rewritten to the
folder that stands for it; `specfleet ...` runs as this Python's `-m specfleet.operator.cli`. When the
process exits, the Pod's status gets the container's terminated state with its termination message (the
file, or the log's tail under FallbackToLogsOnError when it failed without one), and the Job's status
`succeeded` or `failed` with its condition, as the Job controller writes them. A Job past its
activeDeadlineSeconds is killed and failed with DeadlineExceeded; a deleted Job's process is killed.
"""

from __future__ import annotations

import base64
import json
import logging
import secrets
import subprocess
import sys
import threading
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import kubernetes.client

from specfleet.demo.kubelet import SELECTOR

log = logging.getLogger(__name__)
JOB_NAME_LABEL = "job-name"
# The kubelet keeps at most this much of a termination message, and of the log's tail in its place.
MESSAGE_LIMIT = 4096
LOG_TAIL = 2048


@dataclass
class JobRun:
    job: str
    pod: str
    process: subprocess.Popen[bytes]
    log_path: Path
    message_path: Path
    fallback_to_logs: bool
    deadline: float | None
    killed_for_deadline: bool = False


class LocalJobs:
    """Plays the Job controller and kubelet for one namespace's specfleet Jobs."""

    def __init__(self, client: kubernetes.client.ApiClient, namespace: str, workdir: Path, sync: float = 0.5) -> None:
        self.core = kubernetes.client.CoreV1Api(client)
        self.batch = kubernetes.client.BatchV1Api(client)
        self.namespace = namespace
        self.workdir = workdir
        self.sync = sync
        self.runs: dict[str, JobRun] = {}
        self.finished: set[str] = set()
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, name="local-jobs", daemon=True)

    def start(self) -> LocalJobs:
        self._thread.start()
        return self

    def stop(self) -> None:
        self._stop.set()
        self._thread.join(timeout=10)
        for run in self.runs.values():
            _kill(run.process)

    def _run(self) -> None:
        while not self._stop.wait(self.sync):
            try:
                self._sync()
            except Exception:  # the next sync retries; one failed API call must not end the Jobs
                log.exception("local jobs step failed")

    def _sync(self) -> None:
        listed = self.batch.list_namespaced_job(self.namespace, label_selector=SELECTOR, _preload_content=False)
        jobs = {job["metadata"]["name"]: job for job in json.loads(listed.data)["items"]}
        for name, run in list(self.runs.items()):
            if name not in jobs:
                _kill(run.process)
                del self.runs[name]
            elif run.deadline is not None and time.monotonic() > run.deadline and run.process.poll() is None:
                run.killed_for_deadline = True
                _kill(run.process)
            elif run.process.poll() is not None:
                self._report(jobs[name], run)
                del self.runs[name]
                self.finished.add(name)
        for name, job in jobs.items():
            if name not in self.runs and name not in self.finished and not (job.get("status") or {}).get("startTime"):
                self._launch(job)

    # ------------------------------------------------------------------ start

    def _launch(self, job: dict[str, Any]) -> None:
        meta, template = job["metadata"], job["spec"]["template"]
        pod_spec = template["spec"]
        container = pod_spec["containers"][0]
        folder = self.workdir / meta["name"]
        mounts = self._mounts(pod_spec, container, folder)
        message_path = folder / "termination-log"
        message_path.parent.mkdir(parents=True, exist_ok=True)
        message_path.write_text("")
        mounts[container.get("terminationMessagePath", "/dev/termination-log")] = message_path
        command = [_local(arg, mounts) for arg in [*container.get("command", []), *container.get("args", [])]]
        if command[:1] == ["specfleet"]:
            command = [sys.executable, "-m", "specfleet.operator.cli", *command[1:]]
        pod_name = f"{meta['name']}-{secrets.token_hex(3)}"
        self.core.create_namespaced_pod(self.namespace, _pod(job, pod_name))
        stamp = _now()
        self.batch.patch_namespaced_job_status(
            meta["name"], self.namespace, {"status": {"startTime": stamp, "active": 1}}
        )
        log_path = folder / "log"
        with log_path.open("wb") as out:
            process = subprocess.Popen(command, stdout=out, stderr=subprocess.STDOUT, cwd=folder)
        deadline = job["spec"].get("activeDeadlineSeconds")
        self.runs[meta["name"]] = JobRun(
            job=meta["name"],
            pod=pod_name,
            process=process,
            log_path=log_path,
            message_path=message_path,
            fallback_to_logs=container.get("terminationMessagePolicy") == "FallbackToLogsOnError",
            deadline=None if deadline is None else time.monotonic() + float(deadline),
        )
        log.info("job %s: pod %s runs %s (log %s)", meta["name"], pod_name, " ".join(command), log_path)

    def _mounts(self, pod_spec: dict[str, Any], container: dict[str, Any], folder: Path) -> dict[str, Path]:
        """Mount path → the folder holding what its volume holds."""
        volumes = {volume["name"]: volume for volume in pod_spec.get("volumes", [])}
        mounts = {}
        for mount in container.get("volumeMounts", []):
            local = folder / "volumes" / mount["name"]
            local.mkdir(parents=True, exist_ok=True)
            for key, data in self._files(volumes[mount["name"]]).items():
                (local / key).write_bytes(data)
            mounts[mount["mountPath"]] = local
        return mounts

    def _files(self, volume: dict[str, Any]) -> dict[str, bytes]:
        """The files a ConfigMap or Secret volume projects (its items, or every key); none for an emptyDir."""
        if "configMap" in volume:
            source = volume["configMap"]
            config_map = self.core.read_namespaced_config_map(source["name"], self.namespace)
            data = {key: value.encode() for key, value in (config_map.data or {}).items()}
        elif "secret" in volume:
            source = volume["secret"]
            secret = self.core.read_namespaced_secret(source["secretName"], self.namespace)
            data = {key: base64.b64decode(value) for key, value in (secret.data or {}).items()}
        else:
            return {}
        items = source.get("items")
        return {item["path"]: data[item["key"]] for item in items} if items else data

    # ------------------------------------------------------------------ finish

    def _report(self, job: dict[str, Any], run: JobRun) -> None:
        code = run.process.returncode
        message = run.message_path.read_text(errors="replace")[:MESSAGE_LIMIT]
        if not message and code != 0 and run.fallback_to_logs:
            message = run.log_path.read_bytes()[-LOG_TAIL:].decode(errors="replace")
        ok = code == 0 and not run.killed_for_deadline
        terminated = {"exitCode": code, "reason": "Completed" if ok else "Error", "message": message}
        container = job["spec"]["template"]["spec"]["containers"][0]
        status = {
            "phase": "Succeeded" if ok else "Failed",
            "containerStatuses": [
                {
                    "name": container["name"],
                    "image": container["image"],
                    "imageID": "",
                    "ready": False,
                    "restartCount": 0,
                    "state": {"terminated": terminated},
                }
            ],
        }
        self.core.patch_namespaced_pod(run.pod, self.namespace, {"status": status})
        reason = "Completed" if ok else ("DeadlineExceeded" if run.killed_for_deadline else "BackoffLimitExceeded")
        condition = {
            "type": "Complete" if ok else "Failed",
            "status": "True",
            "reason": reason,
            "lastTransitionTime": _now(),
        }
        job_status: dict[str, Any] = {"active": 0, "conditions": [condition], ("succeeded" if ok else "failed"): 1}
        if ok:
            job_status["completionTime"] = _now()
        self.batch.patch_namespaced_job_status(run.job, self.namespace, {"status": job_status})
        log.info("job %s: exit %s", run.job, code)


def _local(arg: str, mounts: dict[str, Path]) -> str:
    for path, local in mounts.items():
        if arg == path:
            return str(local)
        if arg.startswith(path.rstrip("/") + "/"):
            return str(local / arg[len(path.rstrip("/")) + 1 :])
    return arg


def _pod(job: dict[str, Any], name: str) -> dict[str, Any]:
    meta, template = job["metadata"], job["spec"]["template"]
    labels = {**template["metadata"].get("labels", {}), JOB_NAME_LABEL: meta["name"], "controller-uid": meta["uid"]}
    owner = {"apiVersion": "batch/v1", "kind": "Job", "name": meta["name"], "uid": meta["uid"], "controller": True}
    return {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {"name": name, "namespace": meta["namespace"], "labels": labels, "ownerReferences": [owner]},
        "spec": {**template["spec"], "nodeName": "local"},
        "status": {"phase": "Running"},
    }


def _kill(process: subprocess.Popen[bytes]) -> None:
    if process.poll() is None:
        process.kill()
        process.wait(timeout=10)


def _now() -> str:
    return time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime())
