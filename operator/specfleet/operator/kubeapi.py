"""A thin generic Kubernetes REST client over the official client's transport (auth, TLS, kubeconfig).

The operator touches a handful of kinds; a path table is simpler and more honest than discovery.
"""

from __future__ import annotations

import asyncio
import concurrent.futures
import copy
import functools
import json
from dataclasses import dataclass
from typing import Any

import kubernetes.client
import kubernetes.config
import yaml

from specfleet.operator.api.constants import (
    API_VERSION,
    MANAGER,
    POLICY_KIND,
    POLICY_PLURAL,
    PROFILE_KIND,
    PROFILE_PLURAL,
    SDD_KIND,
    SDD_PLURAL,
)
from specfleet.operator.config import ConfigError, one_line

PLURALS = {
    "Deployment": "deployments",
    "Service": "services",
    "PodDisruptionBudget": "poddisruptionbudgets",
    "Pod": "pods",
    "Secret": "secrets",
    "Event": "events",
    "ConfigMap": "configmaps",
    "Job": "jobs",
    SDD_KIND: SDD_PLURAL,
    POLICY_KIND: POLICY_PLURAL,
    PROFILE_KIND: PROFILE_PLURAL,
}

JSON = "application/json"
MERGE_PATCH = "application/merge-patch+json"
APPLY_PATCH = "application/apply-patch+yaml"  # Server-Side Apply; a JSON body is valid YAML
# Every write names the operator, so managedFields credit it rather than the client library's User-Agent.
WRITER = {"fieldManager": MANAGER}
API_THREADS = 8  # concurrent API calls, within the client's connection pool (5 per CPU)


class ApiError(Exception):
    """A non-2xx answer from the API server."""

    def __init__(self, status: int, reason: str, message: str) -> None:
        super().__init__(f"{status} {reason}: {message}")
        self.status = status
        self.reason = reason
        self.message = message


@dataclass(frozen=True)
class Ref:
    api_version: str
    kind: str
    namespace: str
    name: str | None = None

    @classmethod
    def of(cls, obj: dict[str, Any]) -> Ref:
        meta = obj["metadata"]
        return cls(obj["apiVersion"], obj["kind"], meta.get("namespace", "default"), meta.get("name"))

    def path(self, subresource: str | None = None) -> str:
        prefix = "/api/v1" if self.api_version == "v1" else f"/apis/{self.api_version}"
        path = f"{prefix}/namespaces/{self.namespace}/{PLURALS[self.kind]}"
        if self.name:
            path += f"/{self.name}"
        if subresource:
            path += f"/{subresource}"
        return path


def sdd_ref(namespace: str, name: str) -> Ref:
    return Ref(API_VERSION, SDD_KIND, namespace, name)


def load_client(kubeconfig: str | None) -> kubernetes.client.ApiClient:
    """A client for the cluster in `kubeconfig`, else KUBECONFIG/~/.kube/config, else the in-cluster account."""
    configuration = kubernetes.client.Configuration()
    try:
        if kubeconfig:
            kubernetes.config.load_kube_config(config_file=kubeconfig, client_configuration=configuration)
        else:
            try:
                kubernetes.config.load_incluster_config(client_configuration=configuration)
            except kubernetes.config.ConfigException:
                kubernetes.config.load_kube_config(client_configuration=configuration)
    except (kubernetes.config.ConfigException, OSError, ValueError, yaml.YAMLError) as exc:
        where = kubeconfig or "KUBECONFIG, ~/.kube/config or the in-cluster account"
        raise ConfigError(f"no usable cluster configuration in {where}: {one_line(exc)}") from None
    return kubernetes.client.ApiClient(configuration)


class KubeApi:
    """Async get/list/patch/apply of plain dict objects."""

    def __init__(self, client: kubernetes.client.ApiClient) -> None:
        self._client = client
        # Its own threads: in asyncio's shared default executor, slow Prometheus reads (a fleet pointing at an
        # unreachable URL with a long timeout) used every thread and stalled the API calls of all fleets.
        self._executor = concurrent.futures.ThreadPoolExecutor(API_THREADS, thread_name_prefix="kubeapi")

    @property
    def configuration(self) -> kubernetes.client.Configuration:
        return self._client.configuration

    async def version(self, request_seconds: float) -> dict[str, Any]:
        """The API server's /version, asked once within `request_seconds`: whether the cluster answers at all.

        Once: each of urllib3's retries logs a warning, and the caller says what failed in one line. The timeout
        is the transport's, so a blackholed address ends the request, not only the wait for it.
        """
        once = copy.copy(self._client.configuration)
        once.retries = 0
        with kubernetes.client.ApiClient(once) as client:
            call = functools.partial(_request, client, "GET", "/version", None, JSON, None, request_seconds)
            return await asyncio.get_running_loop().run_in_executor(self._executor, call)

    async def get(self, ref: Ref, subresource: str | None = None) -> dict[str, Any] | None:
        try:
            return await self._call("GET", ref.path(subresource))
        except ApiError as exc:
            if exc.status == 404:
                return None
            raise

    async def list(self, ref: Ref, label_selector: str | None = None) -> list[dict[str, Any]]:
        query = {"labelSelector": label_selector} if label_selector else None
        answer = await self._call("GET", ref.path(), query=query)
        return list(answer.get("items", []))

    async def patch(self, ref: Ref, patch: dict[str, Any], subresource: str | None = None) -> dict[str, Any]:
        return await self._call("PATCH", ref.path(subresource), patch, content_type=MERGE_PATCH, query=WRITER)

    async def apply(self, obj: dict[str, Any], field_manager: str, force: bool = False) -> dict[str, Any]:
        """Server-Side Apply of `obj` (created if absent) as `field_manager`; `force` takes over conflicting fields."""
        query = {"fieldManager": field_manager, **({"force": "true"} if force else {})}
        return await self._call("PATCH", Ref.of(obj).path(), obj, content_type=APPLY_PATCH, query=query)

    async def delete(self, ref: Ref) -> None:
        """Delete the object; one already gone is not an error."""
        try:
            await self._call("DELETE", ref.path())
        except ApiError as exc:
            if exc.status != 404:
                raise

    async def _call(
        self,
        method: str,
        path: str,
        body: dict[str, Any] | None = None,
        content_type: str = JSON,
        query: dict[str, str] | None = None,
    ) -> dict[str, Any]:
        call = functools.partial(_request, self._client, method, path, body, content_type, query, None)
        return await asyncio.get_running_loop().run_in_executor(self._executor, call)


def _request(
    client: kubernetes.client.ApiClient,
    method: str,
    path: str,
    body: dict[str, Any] | None,
    content_type: str,
    query: dict[str, str] | None,
    request_seconds: float | None,
) -> dict[str, Any]:
    _, url, headers, serialized, _ = client.param_serialize(
        method=method,
        resource_path=path,
        query_params=list(query.items()) if query else None,
        header_params={"Content-Type": content_type, "Accept": JSON},
        body=body,
        auth_settings=["BearerToken"],
    )
    try:
        response = client.call_api(
            method, url, header_params=headers, body=serialized, _request_timeout=request_seconds
        )
        response.read()
    except kubernetes.client.ApiException as exc:
        raise _api_error(exc.status or 0, exc.body) from exc
    if not 200 <= response.status < 300:
        raise _api_error(response.status, response.data)
    return dict(json.loads(response.data or b"{}"))


def _api_error(status: int, raw: Any) -> ApiError:
    try:
        body = json.loads(raw) if raw else {}
    except (TypeError, ValueError):
        body = {}
    return ApiError(status, str(body.get("reason", "")), str(body.get("message", raw)))
