"""Render what a SpeculationProfile runs: a dedicated engine of the fleet's model and draft, and the Job that sweeps
it with `specfleet profile`. Pure.

The engine is a Deployment of one pod built from the fleet's spec (the fleet's own pod template, so the same
image, runtime, resources and control Secret), labelled as a profiling pod: none of the fleet's labels that
its Service, its PodDisruptionBudget, the operator's indices or its signals select on. It starts at the
fleet's ceiling k with a live table, so the Job sets every k of the sweep without a restart.

The Job's container runs `specfleet profile` against that pod's address and writes the compact result to its
termination message, where the operator reads it; it mounts the prompts from the ConfigMap key of the profile's
own namespace and the fleet's control token, and has no Kubernetes credentials at all.
"""

from __future__ import annotations

from typing import Any

from specfleet.operator.api.constants import (
    ANNOTATION_CONFIG_HASH,
    LABEL_COMPONENT,
    LABEL_CONFIG_HASH,
    LABEL_INSTANCE,
    LABEL_MANAGED_BY,
    LABEL_NAME,
    LABEL_PART_OF,
    LABEL_PROFILE,
    MANAGER,
)
from specfleet.operator.api.pod_types import CONTROL_FILE, CONTROL_MOUNT
from specfleet.operator.api.profile_types import SpeculationProfileSpec
from specfleet.operator.api.types import ScheduleEntry, SpecDecodeDeploymentSpec, SpeculationState
from specfleet.operator.render.children import (
    CONTROL_TOKEN_KEY,
    container_security_context,
    control_secret_name,
    pod_security_context,
    pod_spec,
)
from specfleet.operator.render.engine import engine_config
from specfleet.operator.render.labels import Owner

PROFILER_APP = "specfleet-profiler"
ENGINE_COMPONENT, JOB_COMPONENT = "profiling-engine", "profiling-job"
PROMPTS_DIR = "/specfleet/prompts"
PROMPTS_FILE = "requests.jsonl"
RESULT_PATH = "/dev/termination-log"
REPORT_PATH = "/tmp/report.json"
# Room for the suffixes within a label value's 63 characters (the Job's name becomes its pods' job-name label).
NAME_ROOM = 48


class ProfileNotRunnableError(ValueError):
    """The fleet's spec cannot be profiled as asked; the message says why."""


def engine_name(profile: str) -> str:
    return f"{profile[:NAME_ROOM]}-engine"


def job_name(profile: str, generation: int, run: int = 0) -> str:
    """`<profile>-g<generation>`, and `-r<run>` for a sweep run again on drift (a Job's spec cannot change)."""
    return f"{profile[:NAME_ROOM]}-g{generation}" + (f"-r{run}" if run else "")


def engine_selector(owner: Owner) -> dict[str, str]:
    """Selects the profile's engine pod: not its Job's pod, nor anything of any fleet (whose name label differs)."""
    return {LABEL_NAME: PROFILER_APP, LABEL_INSTANCE: owner.name, LABEL_COMPONENT: ENGINE_COMPONENT}


def profiling_labels(owner: Owner, component: str) -> dict[str, str]:
    return {
        LABEL_NAME: PROFILER_APP,
        LABEL_INSTANCE: owner.name,
        LABEL_COMPONENT: component,
        LABEL_PART_OF: "specfleet",
        LABEL_MANAGED_BY: MANAGER,
        LABEL_PROFILE: owner.name,
    }


def _meta(owner: Owner, name: str, component: str) -> dict[str, Any]:
    return {
        "name": name,
        "namespace": owner.namespace,
        "labels": profiling_labels(owner, component),
        "ownerReferences": [owner.reference()],
    }


def check_runnable(profile: SpeculationProfileSpec, fleet: SpecDecodeDeploymentSpec) -> None:
    """The sweep's k values need a live table, which needs data parallelism 1 and k within the fleet's ceiling."""
    if fleet.model.data_parallel_size != 1:
        raise ProfileNotRunnableError("the fleet's dataParallelSize is not 1: its engine takes no live table")
    ceiling = fleet.speculation.max_speculative_tokens
    above = [k for k in profile.sweep.k if k > ceiling]
    if above:
        raise ProfileNotRunnableError(f"sweep.k {above} above the fleet's maxSpeculativeTokens {ceiling}")


def render_engine(
    owner: Owner, fleet_owner: Owner, fleet: SpecDecodeDeploymentSpec, runtime_image: str
) -> dict[str, Any]:
    """One engine pod of the fleet's model and draft at its ceiling k, with a live table (see the module doc);
    `runtime_image` is the operator's, for a fleet that names none."""
    ceiling = fleet.speculation.max_speculative_tokens
    state = SpeculationState(
        enabled=True,
        method=fleet.speculation.method,
        k=ceiling,
        schedule=[ScheduleEntry(max_batch_size=1, k=ceiling)],
    )
    config = engine_config(fleet, state)
    config_hash = config.config_hash()
    labels = {**profiling_labels(owner, ENGINE_COMPONENT), LABEL_CONFIG_HASH: config_hash}
    return {
        "apiVersion": "apps/v1",
        "kind": "Deployment",
        "metadata": _meta(owner, engine_name(owner.name), ENGINE_COMPONENT),
        "spec": {
            "replicas": 1,
            "selector": {"matchLabels": engine_selector(owner)},
            "strategy": {"type": "Recreate"},  # never two engines' GPUs at once
            "template": {
                "metadata": {"labels": labels, "annotations": {ANNOTATION_CONFIG_HASH: config_hash}},
                "spec": pod_spec(fleet_owner, fleet, config, config_hash, runtime_image),
            },
        },
    }


def profile_args(profile: SpeculationProfileSpec, engine_url: str, control_url: str) -> list[str]:
    """`specfleet profile`'s arguments: the live engine, every k of the sweep and k=0, the compact result."""
    sweep = profile.sweep
    ks = sorted({0, *sweep.k})
    args = [
        f"{PROMPTS_DIR}/{PROMPTS_FILE}",
        "--live",
        engine_url,
        "--control-url",
        control_url,
        "--control-token-file",
        f"{CONTROL_MOUNT}/{CONTROL_FILE}",
        "--k",
        ",".join(map(str, ks)),
        "--concurrency",
        ",".join(map(str, sorted(set(sweep.concurrencies)))),
        "--json",
        REPORT_PATH,
        "--result",
        RESULT_PATH,
    ]
    if sweep.requests_per_point is not None:
        args += ["--requests-per-point", str(sweep.requests_per_point)]
    if profile.sampling.max_tokens is not None:
        args += ["--max-tokens", str(profile.sampling.max_tokens)]
    return args


def render_job(
    owner: Owner,
    generation: int,
    profile: SpeculationProfileSpec,
    fleet_name: str,
    image: str,
    engine_url: str,
    control_url: str,
    run: int = 0,
) -> dict[str, Any]:
    """The sweep as a Job of one pod that never retries (a retry would measure a warmed, half-swept engine)."""
    prompts = profile.prompts.config_map_key_ref
    container = {
        "name": "profile",
        "image": image,
        "command": ["specfleet", "profile"],
        "args": profile_args(profile, engine_url, control_url),
        "terminationMessagePath": RESULT_PATH,
        # Without a result (bad input, unreachable engine) the message is the log's tail: the error it printed.
        "terminationMessagePolicy": "FallbackToLogsOnError",
        "securityContext": container_security_context(),
        "resources": {"requests": {"cpu": "250m", "memory": "256Mi"}, "limits": {"memory": "1Gi"}},
        "volumeMounts": [
            {"name": "prompts", "mountPath": PROMPTS_DIR, "readOnly": True},
            {"name": "control-token", "mountPath": CONTROL_MOUNT, "readOnly": True},
            {"name": "tmp", "mountPath": "/tmp"},
        ],
    }
    return {
        "apiVersion": "batch/v1",
        "kind": "Job",
        "metadata": _meta(owner, job_name(owner.name, generation, run), JOB_COMPONENT),
        "spec": {
            "backoffLimit": 0,
            "activeDeadlineSeconds": profile.active_deadline_seconds,
            "template": {
                "metadata": {"labels": profiling_labels(owner, JOB_COMPONENT)},
                "spec": {
                    "restartPolicy": "Never",
                    # It talks to the engine pod only: no API credentials to steal or misuse.
                    "automountServiceAccountToken": False,
                    "securityContext": pod_security_context(),
                    "containers": [container],
                    "volumes": [
                        {
                            "name": "prompts",
                            "configMap": {"name": prompts.name, "items": [{"key": prompts.key, "path": PROMPTS_FILE}]},
                        },
                        {
                            "name": "control-token",
                            "secret": {
                                "secretName": control_secret_name(fleet_name),
                                "items": [{"key": CONTROL_TOKEN_KEY, "path": CONTROL_FILE}],
                                "defaultMode": 0o440,
                            },
                        },
                        {"name": "tmp", "emptyDir": {}},
                    ],
                },
            },
        },
    }
