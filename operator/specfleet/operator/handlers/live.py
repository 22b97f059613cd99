"""SHELL live tables: every tick, each Ready pod of a fleet's current configuration runs the policy's table.

A table change the policy decides is pushed to the pods' control endpoint (`PUT /speculation/table` on the
health port, authenticated with the fleet's control token) in the same tick, without a rollout; a pod that
starts later gets it when its first Ready is seen (the pod event), and any pod whose table differs (restarted,
missed) at the next tick (`GET` shows another table). Requests run concurrently with short timeouts, so one
slow pod never holds a tick for long. A pod that fails `MAX_FAILURES` rounds in a row is deleted — restarted
as any change restarted pods before live tables; its replacement gets the table on Ready. The token is never
logged, put in status or in an Event.
"""

from __future__ import annotations

import asyncio
import base64
import hashlib
import hmac
import logging
import secrets
import time
from dataclasses import dataclass, field

import aiohttp

from specfleet.operator.api.types import LiveTableStatus, SpecDecodeDeploymentStatus, SpeculationState
from specfleet.operator.handlers.pods import ControlEndpoint
from specfleet.operator.kubeapi import ApiError, KubeApi, Ref
from specfleet.operator.render.engine import runs_live_table
from specfleet.operator.render.labels import Owner
from specfleet.operator.status.evaluation import Note
from specfleet.operator.status.live import PodPush, desired_table, fold_pushes, restart_note, revision_of
from specfleet.runtime.table_control import CONTROL_TABLE_PATH

log = logging.getLogger(__name__)
GET_TIMEOUT_SECONDS = 2.0
# The runtime answers a PUT once the engine core runs the table (usually within a step), else 202 after 10 s.
PUT_TIMEOUT_SECONDS = 5.0
PUSH_CONCURRENCY = 8
MAX_FAILURES = 3
KEY_BYTES = 32
# In the operator's namespace: the key every fleet's control token is derived from.
CONTROL_KEY_SECRET = "specfleet-control-key"
CONTROL_KEY_FIELD = "key"

Key = tuple[str, str]  # (namespace, name)


@dataclass
class LiveTables:
    """What the operator remembers between ticks: the control key, failure counts, when revisions began.

    Each fleet's token is derived from one key (HMAC of the fleet's uid), so the operator never reads a
    Secret in the fleets' namespaces: it applies each control Secret with the token it can always recompute.
    The key is the Secret `CONTROL_KEY_SECRET` of the operator's own namespace (the chart creates it once and
    keeps it); without one (no namespace configured, the demo, the tests) a random key lives in memory, and the
    tokens change when the operator restarts (the Secrets are re-applied; kubelets refresh the mounted files).
    """

    operator_namespace: str | None = None
    key: bytes | None = None
    failures: dict[Key, int] = field(default_factory=dict)  # (namespace, pod) → failed rounds in a row
    # Per fleet: the revision (config hash, number) being pushed, and the monotonic time it was decided.
    started: dict[Key, tuple[str, int, float]] = field(default_factory=dict)
    ready: set[Key] = field(default_factory=set)  # (namespace, pod) of the pods seen Ready

    async def token(self, api: KubeApi, owner: Owner) -> str:
        """The fleet's control token: HMAC-SHA256 of its uid under the operator's key."""
        if self.key is None:
            self.key = await self._load_key(api)
        return hmac.new(self.key, owner.uid.encode(), hashlib.sha256).hexdigest()

    async def _load_key(self, api: KubeApi) -> bytes:
        if self.operator_namespace:
            try:
                found = await api.get(Ref("v1", "Secret", self.operator_namespace, CONTROL_KEY_SECRET))
            except ApiError as exc:  # not allowed to read it (rbac.readSecrets=false): as if there were none
                log.warning("cannot read Secret %s: %s", CONTROL_KEY_SECRET, exc.reason)
                found = None
            raw = ((found or {}).get("data") or {}).get(CONTROL_KEY_FIELD)
            if raw:
                return base64.b64decode(raw)
        log.warning("no Secret %s in the operator's namespace: live-table tokens change when it restarts",
                    CONTROL_KEY_SECRET)  # fmt: skip
        return secrets.token_bytes(KEY_BYTES)

    def first_ready(self, namespace: str, pod: str, ready: bool) -> bool:
        """Whether `ready` is the pod's first Ready seen (a pod that leaves Ready is forgotten, so it counts again)."""
        key = (namespace, pod)
        if not ready:
            self.ready.discard(key)
            return False
        if key in self.ready:
            return False
        self.ready.add(key)
        return True

    def forget(self, namespace: str, name: str) -> None:
        self.started.pop((namespace, name), None)

    def decided_at(self, key: Key, config_hash: str, revision: int, tick_started: float) -> float:
        """When the tick that first pushed this revision began: the tick that decided it (push follows)."""
        started = self.started.get(key)
        if started is None or started[:2] != (config_hash, revision):
            started = self.started[key] = (config_hash, revision, tick_started)
        return started[2]


async def push_live(
    live: LiveTables,
    api: KubeApi,
    owner: Owner,
    before: SpecDecodeDeploymentStatus,
    status: SpecDecodeDeploymentStatus,
    pods: list[ControlEndpoint],
    replicas: int,
    now: str,
    tick_started: float,
) -> tuple[SpecDecodeDeploymentStatus, list[Note]]:
    """`status` with where its live table stands after one round over the Ready pods, and the Events to post.

    `before` is the status the tick started from (monotonic `tick_started`): a live change rebuilt
    `status.speculation`, and the revision it replaces is found there.
    """
    speculation = status.speculation
    if speculation is None or speculation.config_hash is None or not runs_live_table(speculation):
        return status, []
    revision = revision_of(_prior(before.speculation, speculation), desired_table(speculation), now)
    key = (owner.namespace, owner.name)
    started = live.decided_at(key, speculation.config_hash, revision.revision, tick_started)
    current = [pod for pod in pods if pod.config_hash == speculation.config_hash]
    pushes = await _push_all(current, revision.table, await live.token(api, owner))
    elapsed = f", {1000 * (time.monotonic() - started):.0f} ms after the tick that decided it"
    fold = fold_pushes(revision, pushes, replicas, now, elapsed)
    notes = [*fold.events, *await _restart_failing(live, api, owner.namespace, pushes)]
    updated = speculation.model_copy(update={"live_table": fold.live})
    return status.model_copy(update={"speculation": updated}), notes


def _prior(before: SpeculationState | None, now: SpeculationState) -> LiveTableStatus | None:
    """The revision in force: this status's, else (a live change rebuilt it) the one the tick started from."""
    if now.live_table is not None:
        return now.live_table
    if before is not None and before.config_hash == now.config_hash:
        return before.live_table
    return None


async def _push_all(pods: list[ControlEndpoint], table: list[list[int]], token: str) -> list[PodPush]:
    if not pods:
        return []
    limit = asyncio.Semaphore(PUSH_CONCURRENCY)
    async with aiohttp.ClientSession() as session:

        async def bounded(pod: ControlEndpoint) -> PodPush:
            async with limit:
                return await _push_one(session, pod, table, token)

        return list(await asyncio.gather(*(bounded(pod) for pod in pods)))


async def _push_one(
    session: aiohttp.ClientSession, pod: ControlEndpoint, table: list[list[int]], token: str
) -> PodPush:
    """GET the pod's table; PUT the desired one when it differs. Applied means the engine runs it now."""
    url = pod.base_url + CONTROL_TABLE_PATH
    try:
        async with session.get(url, timeout=aiohttp.ClientTimeout(total=GET_TIMEOUT_SECONDS)) as response:
            if response.status != 200:
                return PodPush(pod.name, False, f"GET {response.status}: {await _message(response)}")
            shown = await response.json()
        if shown.get("table") == table:
            running = shown.get("appliedVersion") == shown.get("version")
            return PodPush(pod.name, running, None if running else "accepted, the engine does not run it yet")
        body = {"table": table, "expectedVersion": shown.get("version")}
        headers = {"Authorization": f"Bearer {token}"}
        timeout = aiohttp.ClientTimeout(total=PUT_TIMEOUT_SECONDS)
        async with session.put(url, json=body, headers=headers, timeout=timeout) as response:
            if response.status == 200:
                return PodPush(pod.name, True)
            return PodPush(pod.name, False, f"{response.status}: {await _message(response)}")
    except (aiohttp.ClientError, TimeoutError, ValueError) as exc:
        return PodPush(pod.name, False, f"unreachable: {type(exc).__name__}")


async def _message(response: aiohttp.ClientResponse) -> str:
    text = (await response.text())[:200]
    try:
        parsed = await response.json(content_type=None)
    except ValueError:
        return text
    return str(parsed.get("message", text)) if isinstance(parsed, dict) else text


async def _restart_failing(live: LiveTables, api: KubeApi, namespace: str, pushes: list[PodPush]) -> list[Note]:
    """Count each pod's failed rounds; delete one that reached the bound (its replacement starts afresh).

    One pod per round at most, as a rolling restart would: the fleet never loses more than one pod's capacity.
    """
    over = []
    for push in pushes:
        key = (namespace, push.pod)
        if push.applied:
            live.failures.pop(key, None)
            continue
        live.failures[key] = live.failures.get(key, 0) + 1
        if live.failures[key] >= MAX_FAILURES:
            over.append(push)
    if not over:
        return []
    push = over[0]
    failures = live.failures.pop((namespace, push.pod))
    await api.delete(Ref("v1", "Pod", namespace, push.pod))
    return [restart_note(push.pod, failures, push.error)]
