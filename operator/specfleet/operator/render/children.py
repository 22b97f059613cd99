"""Render the child objects of a SpecDecodeDeployment: Deployment, Service, PodDisruptionBudget. Pure."""

from __future__ import annotations

import base64
from typing import Any

from specfleet.operator.api.constants import (
    ANNOTATION_CONFIG_HASH,
    ANNOTATION_SPEC_CONFIG,
    LABEL_CONFIG_HASH,
)
from specfleet.operator.api.pod_types import (
    CACHE_VOLUME,
    CONTROL_FILE,
    CONTROL_MOUNT,
    CONTROL_SECRET_SUFFIX,
    CONTROL_VOLUME,
    MANAGED_MOUNTS,
    SHM_VOLUME,
    TMP_VOLUME,
)
from specfleet.operator.api.quantity import GPU_RESOURCE
from specfleet.operator.api.types import EnvVar, SpecDecodeDeploymentSpec, SpeculationState
from specfleet.operator.render.engine import engine_config
from specfleet.operator.render.labels import Owner, common_labels, object_meta, selector_labels
from specfleet.runtime.engine_args import EngineConfig, canonical_json
from specfleet.runtime.health import HEALTH_PORT, LIVE_PATH, READY_PATH
from specfleet.runtime.image import CACHE_DIR, SPECFLEET_UID
from specfleet.runtime.table_control import DEFAULT_TOKEN_PATH, TOKEN_FILE_ENV

# Endpoints take a few seconds to drop a terminating pod: keep serving meanwhile, then drain.
PRE_STOP_SLEEP_SECONDS = 5
# The grace period also covers the pre-stop sleep and vLLM's own stop (up to 10 s after the drain).
DRAIN_MARGIN_SECONDS = PRE_STOP_SLEEP_SECONDS + 10
PROBE_PERIOD_SECONDS = 10
# The per-fleet Secret whose token authenticates the operator's live-table changes on each pod's control port.
CONTROL_TOKEN_KEY = "token"
ENGINE_CONTAINER = "engine"


def pod_security_context() -> dict[str, Any]:
    """Pod Security Standards' restricted profile, as the one UID of every specfleet image (fsGroup reads the
    control token, a file of mode 0440)."""
    uid = SPECFLEET_UID
    return {"runAsNonRoot": True, "runAsUser": uid, "runAsGroup": uid, "fsGroup": uid,
            "seccompProfile": {"type": "RuntimeDefault"}}  # fmt: skip


def container_security_context() -> dict[str, Any]:
    """The restricted profile's container part, on a read-only root filesystem."""
    return {
        "allowPrivilegeEscalation": False,
        "readOnlyRootFilesystem": True,
        "runAsNonRoot": True,
        "capabilities": {"drop": ["ALL"]},
        "seccompProfile": {"type": "RuntimeDefault"},
    }


def control_secret_name(fleet: str) -> str:
    return f"{fleet}{CONTROL_SECRET_SUFFIX}"


def render_control_secret(owner: Owner, token: str) -> dict[str, Any]:
    """The fleet's control Secret; the caller brings the token (derived from the operator's control key)."""
    return {
        "apiVersion": "v1",
        "kind": "Secret",
        "type": "Opaque",
        "metadata": object_meta(owner, control_secret_name(owner.name)),
        "data": {CONTROL_TOKEN_KEY: base64.b64encode(token.encode()).decode()},
    }


def render_children(
    owner: Owner, spec: SpecDecodeDeploymentSpec, state: SpeculationState, runtime_image: str
) -> list[dict[str, Any]]:
    """Every child object, in the order they should be created; `runtime_image` is the operator's, for a spec
    that names none."""
    config = engine_config(spec, state)
    return [
        render_deployment(owner, spec, config, runtime_image),
        render_service(owner, spec),
        render_pdb(owner),
    ]


def render_deployment(
    owner: Owner, spec: SpecDecodeDeploymentSpec, config: EngineConfig, runtime_image: str
) -> dict[str, Any]:
    config_hash = config.config_hash()
    annotations = {ANNOTATION_CONFIG_HASH: config_hash}
    if config.speculative is not None:
        annotations[ANNOTATION_SPEC_CONFIG] = canonical_json(config.speculative.to_json_obj())
    pod_labels = {**common_labels(owner), LABEL_CONFIG_HASH: config_hash}
    return {
        "apiVersion": "apps/v1",
        "kind": "Deployment",
        "metadata": object_meta(owner, owner.name, annotations),
        "spec": {
            "replicas": spec.replicas,
            "selector": {"matchLabels": selector_labels(owner)},
            # One pod at a time: with a surge pod the fleet never drops below the desired count while k
            # changes; without one (no spare GPU node) it runs one replica short.
            "strategy": {"type": "RollingUpdate", "rollingUpdate": rolling_update(spec.rollout.max_surge)},
            "template": {
                "metadata": {"labels": pod_labels, "annotations": dict(annotations)},
                "spec": pod_spec(owner, spec, config, config_hash, runtime_image),
            },
        },
    }


def rolling_update(max_surge: int) -> dict[str, int]:
    """The Deployment's RollingUpdate: a surge pod, or (none) one pod unavailable at a time."""
    return {"maxUnavailable": 0 if max_surge else 1, "maxSurge": max_surge}


def pod_spec(
    owner: Owner, spec: SpecDecodeDeploymentSpec, config: EngineConfig, config_hash: str, runtime_image: str
) -> dict[str, Any]:
    """An engine pod of the fleet `owner` (its pods, or a profiling pod of its model): it mounts the fleet's
    control Secret, and the spec's volumes beside the operator's (the types refuse any that would override them).

    The user's pod settings change the pod template, so the Deployment rolls the pods, but not the configuration
    hash: they do not change what the engine computes, so signals measured before still describe it.
    """
    runtime = spec.runtime
    pod: dict[str, Any] = {
        "terminationGracePeriodSeconds": runtime.termination_grace_period_seconds,
        "securityContext": pod_security_context(),
        # The engine never calls the Kubernetes API: naming a ServiceAccount gives the pods its cloud identity
        # and pull secrets, never its API rights.
        "automountServiceAccountToken": False,
        "containers": [_engine_container(spec, config, config_hash, runtime_image)],
        "volumes": [
            {"name": SHM_VOLUME, "emptyDir": {"medium": "Memory"}},
            {"name": TMP_VOLUME, "emptyDir": {}},
            {"name": CACHE_VOLUME, "emptyDir": {}},
            {
                "name": CONTROL_VOLUME,
                "secret": {
                    "secretName": control_secret_name(owner.name),
                    "items": [{"key": CONTROL_TOKEN_KEY, "path": CONTROL_FILE}],
                    "defaultMode": 0o440,
                },
            },
            *(volume.to_api() for volume in runtime.volumes),
        ],
    }
    named = {
        "serviceAccountName": runtime.service_account_name,
        "priorityClassName": runtime.priority_class_name,
        "runtimeClassName": runtime.runtime_class_name,
    }
    pod.update({key: name for key, name in named.items() if name is not None})
    if runtime.image_pull_secrets:
        pod["imagePullSecrets"] = [secret.to_api() for secret in runtime.image_pull_secrets]
    if runtime.affinity is not None:
        pod["affinity"] = runtime.affinity.to_api()
    if runtime.node_selector:
        pod["nodeSelector"] = dict(runtime.node_selector)
    if runtime.tolerations:
        pod["tolerations"] = [toleration.to_api() for toleration in runtime.tolerations]
    return pod


def _engine_container(
    spec: SpecDecodeDeploymentSpec, config: EngineConfig, config_hash: str, runtime_image: str
) -> dict[str, Any]:
    runtime = spec.runtime
    return {
        "name": ENGINE_CONTAINER,
        "image": runtime.image or runtime_image,
        "imagePullPolicy": runtime.image_pull_policy,
        "command": ["specfleet-runtime"],
        "args": config.vllm_args(),
        "ports": [
            {"name": "http", "containerPort": runtime.port, "protocol": "TCP"},
            {"name": "health", "containerPort": HEALTH_PORT, "protocol": "TCP"},
        ],
        "env": _env(spec, config_hash),
        "resources": _resources(spec),
        "readinessProbe": _probe(READY_PATH, failure_threshold=3),
        "livenessProbe": _probe(LIVE_PATH, failure_threshold=6),
        # Loading weights can take many minutes; liveness only applies once startup succeeded.
        "startupProbe": _probe(
            LIVE_PATH, failure_threshold=max(1, runtime.startup_timeout_seconds // PROBE_PERIOD_SECONDS)
        ),
        "lifecycle": {"preStop": {"sleep": {"seconds": PRE_STOP_SLEEP_SECONDS}}},
        "securityContext": container_security_context(),
        "volumeMounts": [
            *({"name": name, "mountPath": path} for name, path in MANAGED_MOUNTS.items() if name != CONTROL_VOLUME),
            {"name": CONTROL_VOLUME, "mountPath": CONTROL_MOUNT, "readOnly": True},
            *(mount.to_api() for mount in runtime.volume_mounts),
        ],
    }


def _env(spec: SpecDecodeDeploymentSpec, config_hash: str) -> list[dict[str, Any]]:
    drain = spec.runtime.termination_grace_period_seconds - DRAIN_MARGIN_SECONDS
    managed = [
        EnvVar(name="SPECFLEET_CONFIG_HASH", value=config_hash),
        EnvVar(name="SPECFLEET_DRAIN_SECONDS", value=str(max(1, drain))),
        EnvVar(name="HF_HOME", value=f"{CACHE_DIR}/huggingface"),
        EnvVar(name="VLLM_CACHE_ROOT", value=f"{CACHE_DIR}/vllm"),
        EnvVar(name="VLLM_NO_USAGE_STATS", value="1"),
        EnvVar(name=TOKEN_FILE_ENV, value=DEFAULT_TOKEN_PATH),
    ]
    managed_names = {var.name for var in managed}
    user = [var for var in spec.runtime.env if var.name not in managed_names]
    return [var.to_api() for var in [*managed, *user]]


def _resources(spec: SpecDecodeDeploymentSpec) -> dict[str, Any]:
    gpus = str(spec.model.tensor_parallel_size * spec.model.data_parallel_size)
    limits = {GPU_RESOURCE: gpus, **spec.runtime.resources.limits}
    requests = dict(spec.runtime.resources.requests)
    if GPU_RESOURCE in limits:
        requests[GPU_RESOURCE] = limits[GPU_RESOURCE]
    return {"limits": limits, "requests": requests}


def _probe(path: str, failure_threshold: int) -> dict[str, Any]:
    return {
        "httpGet": {"path": path, "port": "health"},
        "periodSeconds": PROBE_PERIOD_SECONDS,
        "timeoutSeconds": 5,
        "failureThreshold": failure_threshold,
    }


def render_service(owner: Owner, spec: SpecDecodeDeploymentSpec) -> dict[str, Any]:
    return {
        "apiVersion": "v1",
        "kind": "Service",
        "metadata": object_meta(owner, owner.name),
        "spec": {
            "type": "ClusterIP",
            "selector": selector_labels(owner),
            "ports": [
                {"name": "http", "port": spec.runtime.port, "targetPort": "http", "protocol": "TCP"},
            ],
        },
    }


def render_pdb(owner: Owner) -> dict[str, Any]:
    return {
        "apiVersion": "policy/v1",
        "kind": "PodDisruptionBudget",
        "metadata": object_meta(owner, owner.name),
        "spec": {"maxUnavailable": 1, "selector": {"matchLabels": selector_labels(owner)}},
    }
