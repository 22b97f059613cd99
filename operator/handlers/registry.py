"""The Kopf handlers of the operator, registered on an explicit registry (several operators per process in tests)."""

from __future__ import annotations

import dataclasses
import logging
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
from specfleet.operator.handlers.context import OperatorContext
from specfleet.operator.handlers.converge import converge
from specfleet.operator.handlers.evaluate import evaluate, watched
from specfleet.operator.handlers.fleet import SyncResult, replica_status, sync_fleet
from specfleet.operator.handlers.pods import pod_endpoint
from specfleet.operator.handlers.signals_hub import Watched
from specfleet.operator.policy.defaults import WINDOW_SECONDS

SDD = (GROUP, VERSION, SDD_PLURAL)
DEFAULT_WINDOW = WINDOW_SECONDS


def build_registry(config: OperatorConfig) -> kopf.OperatorRegistry:
    registry = kopf.OperatorRegistry()
    kopf.on.startup(registry=registry)(configure)
    kopf.on.login(registry=registry)(login)
    for cause in (kopf.on.create, kopf.on.update, kopf.on.resume):
        cause(*SDD, registry=registry)(on_fleet_changed)
    kopf.on.delete(*SDD, optional=True, registry=registry)(on_fleet_deleted)
    kopf.on.event("apps", "v1", "deployments", labels=MANAGED, registry=registry)(on_child_event)
    kopf.index(*SDD, registry=registry)(fleets)
    kopf.index("", "v1", "pods", labels=MANAGED, registry=registry)(fleet_pods)
    kopf.index("apps", "v1", "deployments", labels=MANAGED, registry=registry)(fleet_deployments)
    kopf.timer(*SDD, interval=config.interval_seconds, initial_delay=config.interval_seconds, registry=registry)(
        on_evaluate
    )
    return registry


MANAGED = {LABEL_MANAGED_BY: MANAGER}


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


def fleet_deployments(namespace: str, body: kopf.Body, status: kopf.Status, **_: Any) -> Any:
    """Each fleet's Deployment status, as the watch last saw it (no GET per fleet per tick)."""
    owner = body["metadata"].get("labels", {}).get(LABEL_DEPLOYMENT)
    return {(namespace, owner): {"status": dict(status)}} if owner else None


async def on_evaluate(
    body: kopf.Body,
    memo: kopf.Memo,
    fleets: kopf.Index,
    fleet_pods: kopf.Index,
    fleet_deployments: kopf.Index,
    **_: Any,
) -> None:
    ctx: OperatorContext = memo.ctx
    key = (body["metadata"].get("namespace", "default"), body["metadata"]["name"])
    pods = list(fleet_pods.get(key, []))

    def peers() -> list[Watched]:
        # Built only when the hub reads a new batch: once per tick for the whole fleet, not once per fleet.
        return [
            dataclasses.replace(w, target=dataclasses.replace(w.target, pods=tuple(fleet_pods.get(k, []))))
            for k, store in fleets.items()
            for w in store
        ]

    async def tick(owner: dict[str, Any]) -> SyncResult:
        # Level-triggered: replica counts are refreshed every tick, whatever Deployment events were missed.
        deployment = next(iter(fleet_deployments.get(key, [])), None)
        refreshed = (
            replica_status(owner, deployment)
            if deployment is not None
            else SyncResult(SpecDecodeDeploymentStatus.model_validate(owner.get("status") or {}))
        )
        return await evaluate(ctx, {**owner, "status": refreshed.status.to_api()}, pods, peers) or refreshed

    # The timer's snapshot is almost always current, and its step's first write (the decision's intent) is
    # guarded, so it is used as is.
    await converge(ctx, key[0], key[1], tick, first=dict(body))


def on_fleet_deleted(namespace: str, name: str, memo: kopf.Memo, **_: Any) -> None:
    ctx: OperatorContext = memo.ctx
    ctx.metrics.forget(namespace, name)


def configure(settings: kopf.OperatorSettings, **_: Any) -> None:
    # Peering (name, standalone, cluster-wide) is passed to kopf.operator(); setting it here makes it mandatory.
    # Kopf's bookkeeping lives in annotations: status is ours and its schema is structural.
    settings.persistence.progress_storage = kopf.AnnotationsProgressStorage(prefix=GROUP)
    settings.persistence.diffbase_storage = kopf.AnnotationsDiffBaseStorage(
        prefix=GROUP, key="last-handled-configuration"
    )
    # Only our own Events and warnings reach users; Kopf's per-handler chatter stays in the logs.
    settings.posting.level = logging.WARNING
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
    """A child Deployment changed: re-create it if it was deleted, else refresh the owner's replica status.

    Only a deletion re-renders children here; every other change of what runs is the owner's handlers' job,
    so a status read here can never roll back a configuration they are applying.
    """
    ctx: OperatorContext = memo.ctx
    owner_name = body.get("metadata", {}).get("labels", {}).get(LABEL_DEPLOYMENT)
    namespace = body.get("metadata", {}).get("namespace")
    if not owner_name or not namespace:
        return
    deployment = dict(body)

    async def refresh(owner: dict[str, Any]) -> SyncResult:
        return await sync_fleet(ctx, owner) if type == "DELETED" else replica_status(owner, deployment)

    await converge(ctx, namespace, owner_name, refresh)


def speculation_respecified(diff: kopf.Diff) -> bool:
    """The user changed which draft runs or the starting k: start over from the spec, whatever was decided."""
    for item in diff:
        path = tuple(item.field)
        if path[:2] == ("spec", "speculation") and (len(path) == 2 or path[2] in RESPECIFYING_FIELDS):
            return True
    return False


RESPECIFYING_FIELDS = {"method", "draftModel", "numSpeculativeTokens"}
