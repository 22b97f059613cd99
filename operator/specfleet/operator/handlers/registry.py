"""The Kopf handlers of the operator, registered on an explicit registry (several operators per process in tests)."""

from __future__ import annotations

import dataclasses
import logging
import socket
import time
from typing import Any

import kopf
import kubernetes.client

from specfleet.operator.api.constants import (
    GROUP,
    LABEL_DEPLOYMENT,
    LABEL_MANAGED_BY,
    MANAGER,
    SDD_PLURAL,
    VERSION,
)
from specfleet.operator.api.parse import InvalidSpecError, parse_resource
from specfleet.operator.api.types import SpecDecodeDeploymentStatus
from specfleet.operator.config import OperatorConfig
from specfleet.operator.handlers.context import OperatorContext, now_iso
from specfleet.operator.handlers.converge import converge
from specfleet.operator.handlers.evaluate import evaluate, watched
from specfleet.operator.handlers.fleet import EventNote, SyncResult, drifted, owner_of, replica_status, sync_fleet
from specfleet.operator.handlers.live import push_live
from specfleet.operator.handlers.pods import ControlEndpoint, control_endpoint, pod_endpoint
from specfleet.operator.handlers.profile import register_profiles
from specfleet.operator.handlers.signals_hub import Watched
from specfleet.operator.kubeapi import sdd_ref
from specfleet.operator.policy.defaults import WINDOW_SECONDS

SDD = (GROUP, VERSION, SDD_PLURAL)
log = logging.getLogger(__name__)
DEFAULT_WINDOW = WINDOW_SECONDS
# The kinds of child the operator renders, watched so that drift and deletion are repaired:
# (group, version, plural, kind, the id of their index by fleet).
CHILD_TYPES = (
    ("apps", "v1", "deployments", "Deployment", "fleet_deployments"),
    ("", "v1", "services", "Service", "fleet_services"),
    ("policy", "v1", "poddisruptionbudgets", "PodDisruptionBudget", "fleet_pdbs"),
)


def build_registry(config: OperatorConfig) -> kopf.OperatorRegistry:
    registry = kopf.OperatorRegistry()
    kopf.on.startup(registry=registry)(configure)
    kopf.on.login(registry=registry)(login)
    for cause in (kopf.on.create, kopf.on.update, kopf.on.resume):
        cause(*SDD, registry=registry)(on_fleet_changed)
    kopf.on.delete(*SDD, optional=True, registry=registry)(on_fleet_deleted)
    for group, version, plural, _, index in CHILD_TYPES:
        kopf.on.event(group, version, plural, labels=MANAGED, id=f"{plural}-changed", registry=registry)(on_child_event)
        kopf.index(group, version, plural, labels=MANAGED, id=index, registry=registry)(fleet_children)
    kopf.index(*SDD, registry=registry)(fleets)
    kopf.index("", "v1", "pods", labels=FLEET_PODS, registry=registry)(fleet_pods)
    kopf.index("", "v1", "pods", labels=FLEET_PODS, registry=registry)(fleet_controls)
    kopf.on.event("", "v1", "pods", labels=FLEET_PODS, id="pods-changed", registry=registry)(on_pod_event)
    # A failed tick is retried at the next interval, not after Kopf's default backoff of a minute.
    kopf.timer(
        *SDD,
        interval=config.interval_seconds,
        initial_delay=config.interval_seconds,
        backoff=config.interval_seconds,
        registry=registry,
    )(on_evaluate)
    register_profiles(registry, config)
    return registry


MANAGED = {LABEL_MANAGED_BY: MANAGER}
# A fleet's own pods: a profiling engine pod (labelled with its profile instead) is none of its fleet's.
FLEET_PODS = {**MANAGED, LABEL_DEPLOYMENT: kopf.PRESENT}


def fleets(namespace: str, name: str, spec: kopf.Spec, status: kopf.Status, memo: kopf.Memo, **_: Any) -> Any:
    """Every valid fleet with the configuration it runs: the batch each signals read covers."""
    ctx: OperatorContext = memo.ctx
    config_hash = (status.get("speculation") or {}).get("configHash")
    try:
        parsed = parse_resource({"metadata": {"name": name}, "spec": dict(spec)})
    except InvalidSpecError:
        return None
    if not config_hash:
        return None
    # The window the last evaluation resolved (policyRef included), so batches group the same windows.
    measured = (status.get("signals") or {}).get("windowSeconds")
    window = float(measured or (parsed.policy.window_seconds if parsed.policy else None) or DEFAULT_WINDOW)
    return {(namespace, name): watched(namespace, name, parsed, config_hash, [], ctx, window)}


def fleet_pods(namespace: str, body: kopf.Body, **_: Any) -> Any:
    """Each engine pod's metrics endpoint, by fleet (for the direct-scrape default)."""
    endpoint = pod_endpoint(dict(body))
    if endpoint is None:
        return None
    return {(namespace, body["metadata"]["labels"][LABEL_DEPLOYMENT]): endpoint}


def fleet_controls(namespace: str, body: kopf.Body, **_: Any) -> Any:
    """Each Ready engine pod's control endpoint, by fleet (live tables)."""
    endpoint = control_endpoint(dict(body))
    if endpoint is None:
        return None
    return {(namespace, body["metadata"]["labels"][LABEL_DEPLOYMENT]): endpoint}


def fleet_children(namespace: str, body: kopf.Body, **_: Any) -> Any:
    """Each fleet's children of one kind, as the watch last saw them (no GET per fleet per tick): the
    Deployment's replica counts, and what each tick compares with the rendering to find drift."""
    owner = body["metadata"].get("labels", {}).get(LABEL_DEPLOYMENT)
    return {(namespace, owner): dict(body)} if owner else None


async def on_evaluate(
    body: kopf.Body,
    memo: kopf.Memo,
    fleets: kopf.Index,
    fleet_pods: kopf.Index,
    fleet_controls: kopf.Index,
    fleet_deployments: kopf.Index,
    fleet_services: kopf.Index,
    fleet_pdbs: kopf.Index,
    fleet_profiles: kopf.Index,
    **_: Any,
) -> None:
    ctx: OperatorContext = memo.ctx
    key = (body["metadata"].get("namespace", "default"), body["metadata"]["name"])
    pods = list(fleet_pods.get(key, []))
    children = {"Deployment": fleet_deployments, "Service": fleet_services, "PodDisruptionBudget": fleet_pdbs}

    def peers() -> list[Watched]:
        # Built only when the hub reads a new batch: once per tick for the whole fleet, not once per fleet.
        return [
            dataclasses.replace(w, target=dataclasses.replace(w.target, pods=tuple(fleet_pods.get(k, []))))
            for k, store in fleets.items()
            for w in store
        ]

    async def tick(owner: dict[str, Any]) -> SyncResult | None:
        started = time.monotonic()
        # Children are repaired every tick too, whatever events were missed; comparing the rendering with the
        # watched children costs no request, and an unchanged fleet writes nothing.
        if drifted(
            owner, {kind: list(index.get(key, [])) for kind, index in children.items()}, ctx.config.runtime_image
        ):
            return await repair(ctx, *key)
        # Level-triggered: replica counts are refreshed every tick, whatever Deployment events were missed.
        deployment = next(iter(fleet_deployments.get(key, [])), None)
        refreshed = (
            replica_status(owner, deployment)
            if deployment is not None
            else SyncResult(SpecDecodeDeploymentStatus.model_validate(owner.get("status") or {}))
        )
        profiles = list(fleet_profiles.get(key, []))
        result = await evaluate(ctx, {**owner, "status": refreshed.status.to_api()}, pods, peers, profiles) or refreshed
        # Every tick, not only after a decision: a pod whose table differs (restarted, missed) gets it too.
        return await live_step(ctx, owner, result, list(fleet_controls.get(key, [])), started)

    # The timer's snapshot is almost always current, and its step's first write (the decision's intent) is
    # guarded, so it is used as is.
    await converge(ctx, key[0], key[1], tick, first=dict(body))


async def live_step(
    ctx: OperatorContext, owner: dict[str, Any], result: SyncResult, controls: list[ControlEndpoint], started: float
) -> SyncResult:
    """`result` with the fleet's live table pushed to its Ready pods (handlers/live.py) and its Events."""
    before = SpecDecodeDeploymentStatus.model_validate(owner.get("status") or {})
    replicas = int((owner.get("spec") or {}).get("replicas") or 1)
    status, notes = await push_live(
        ctx.live, ctx.api, owner_of(owner), before, result.status, controls, replicas, now_iso(), started
    )
    events = result.events + [EventNote(n.type, n.reason, n.message) for n in notes]
    return dataclasses.replace(result, status=status, events=events)


async def on_pod_event(type: str, body: kopf.Body, memo: kopf.Memo, fleet_controls: kopf.Index, **_: Any) -> None:
    """A pod's first Ready: its fleet's live table now, not at the fleet's next tick (up to an interval later)."""
    ctx: OperatorContext = memo.ctx
    meta = body.get("metadata", {})
    namespace, fleet = meta.get("namespace"), meta.get("labels", {}).get(LABEL_DEPLOYMENT)
    ready = type != "DELETED" and control_endpoint(dict(body)) is not None
    if not namespace or not fleet or not ctx.live.first_ready(namespace, meta["name"], ready):
        return
    started = time.monotonic()

    async def push(owner: dict[str, Any]) -> SyncResult:
        status = SpecDecodeDeploymentStatus.model_validate(owner.get("status") or {})
        controls = list(fleet_controls.get((namespace, fleet), []))
        return await live_step(ctx, owner, SyncResult(status), controls, started)

    await converge(ctx, namespace, fleet, push)


async def repair(ctx: OperatorContext, namespace: str, name: str) -> SyncResult | None:
    """Re-apply a fleet's drifted or missing children, rendered from a fresh read (the timer's snapshot may
    predate a decision); the evaluation waits for the next tick."""
    fresh = await ctx.api.get(sdd_ref(namespace, name))
    if fresh is None or (fresh.get("status") or {}).get("observedGeneration") != fresh["metadata"].get("generation"):
        return None  # gone, or a spec change its handler is about to apply
    log.info("repairing the children of %s/%s", namespace, name)
    result = await sync_fleet(ctx, fresh)
    return dataclasses.replace(result, resource_version=fresh["metadata"]["resourceVersion"])


def on_fleet_deleted(namespace: str, name: str, memo: kopf.Memo, **_: Any) -> None:
    ctx: OperatorContext = memo.ctx
    ctx.metrics.forget(namespace, name)
    ctx.live.forget(namespace, name)
    ctx.signals.forget((namespace, name))  # its queries still in flight are cancelled, their connections closed


def configure(settings: kopf.OperatorSettings, **_: Any) -> None:
    # Peering (name, standalone, cluster-wide) is passed to kopf.operator(); setting it here makes it mandatory.
    # Kopf's bookkeeping lives in annotations: status is ours and its schema is structural.
    settings.persistence.progress_storage = kopf.AnnotationsProgressStorage(prefix=GROUP)
    settings.persistence.diffbase_storage = kopf.AnnotationsDiffBaseStorage(
        prefix=GROUP, key="last-handled-configuration"
    )
    # Only our own Events and warnings reach users; Kopf's per-handler chatter stays in the logs.
    settings.posting.level = logging.WARNING
    # Events read `From: specfleet` (source.component, reportingComponent), and name the operator's pod.
    settings.posting.reporting_component = MANAGER
    settings.posting.reporting_instance = socket.gethostname()
    settings.posting.event_name_prefix = f"{MANAGER}-event-"
    settings.persistence.finalizer = f"{GROUP}/finalizer"
    settings.networking.request_timeout = 60
    settings.watching.server_timeout = 300


def login(memo: kopf.Memo, **_: Any) -> kopf.ConnectionInfo:
    """Connect Kopf exactly where the operator's own client connects (kubeconfig or in-cluster)."""
    ctx: OperatorContext = memo.ctx
    configuration: kubernetes.client.Configuration = ctx.api.configuration
    token = configuration.api_key.get("authorization") or configuration.api_key.get("BearerToken")
    return kopf.ConnectionInfo(
        server=configuration.host,
        ca_path=configuration.ssl_ca_cert,
        insecure=not configuration.verify_ssl,
        token=token.removeprefix("Bearer ").strip() if token else None,
        certificate_path=configuration.cert_file,
        private_key_path=configuration.key_file,
        default_namespace=None,
    )


async def on_fleet_changed(namespace: str, name: str, memo: kopf.Memo, diff: kopf.Diff, **_: Any) -> None:
    ctx: OperatorContext = memo.ctx
    respecified = speculation_respecified(diff)

    async def reconcile(owner: dict[str, Any]) -> SyncResult:
        return await sync_fleet(ctx, owner, restart_from_spec=respecified)

    await converge(ctx, namespace, name, reconcile)


async def on_child_event(type: str, body: kopf.Body, memo: kopf.Memo, **_: Any) -> None:
    """A child changed: re-apply it if it was deleted or drifted from the rendering, else refresh the owner's
    replica status from its Deployment.

    The rendering comes from a fresh read of the owner under its lock, so it is what the owner's handlers
    last applied (a decision is written to status before it is applied); while a spec change waits for its
    handler nothing is re-rendered here (see `drifted`).
    """
    ctx: OperatorContext = memo.ctx
    owner_name = body.get("metadata", {}).get("labels", {}).get(LABEL_DEPLOYMENT)
    namespace = body.get("metadata", {}).get("namespace")
    if not owner_name or not namespace:
        return
    child = dict(body)

    async def refresh(owner: dict[str, Any]) -> SyncResult | None:
        if type == "DELETED" or drifted(owner, {child["kind"]: [child]}, ctx.config.runtime_image, {child["kind"]}):
            return await sync_fleet(ctx, owner)
        return replica_status(owner, child) if child["kind"] == "Deployment" else None

    await converge(ctx, namespace, owner_name, refresh)


def speculation_respecified(diff: kopf.Diff) -> bool:
    """The user changed which draft runs or the starting k: start over from the spec, whatever was decided."""
    for item in diff:
        path = tuple(item.field)
        if path[:2] == ("spec", "speculation") and (len(path) == 2 or path[2] in RESPECIFYING_FIELDS):
            return True
    return False


RESPECIFYING_FIELDS = {"method", "draftModel", "numSpeculativeTokens"}
