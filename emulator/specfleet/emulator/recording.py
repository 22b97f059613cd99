"""A small, thread-safe record of every request, in Kubernetes terms (verb, group, resource, ...)."""

from __future__ import annotations

import threading
from dataclasses import dataclass, field
from typing import Any

from specfleet.emulator.paths import ApiPath, verb_of


@dataclass(frozen=True)
class RecordedRequest:
    method: str
    path: str
    query: dict[str, str]
    verb: str  # get, list, watch, create, update, patch, delete, deletecollection (or the HTTP method)
    api_group: str | None  # "" for the core group; None for non-resource paths
    api_version: str | None
    resource: str | None
    subresource: str | None
    namespace: str | None
    name: str | None
    content_type: str
    body: Any = field(default=None, compare=False)

    @property
    def rbac(self) -> tuple[str, str, str]:
        """(verb, apiGroup, resource[/subresource]) that an RBAC rule must allow; (verb, "", path) for
        non-resource URLs such as discovery."""
        if self.resource is None:
            return (self.verb, "", self.path)
        resource = f"{self.resource}/{self.subresource}" if self.subresource else self.resource
        return (self.verb, self.api_group or "", resource)


def record_of(
    method: str, path: str, query: dict[str, str], content_type: str, body: Any, api: ApiPath
) -> RecordedRequest:
    return RecordedRequest(
        method=method.upper(),
        path=path,
        query=dict(query),
        verb=verb_of(method, api, query),
        api_group=api.group,
        api_version=api.version,
        resource=api.plural,
        subresource=api.subresource,
        namespace=api.namespace,
        name=api.name,
        content_type=content_type,
        body=body,
    )


class Recorder:
    """Requests in arrival order; the server's loop appends, test threads read copies."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._records: list[RecordedRequest] = []

    def add(self, record: RecordedRequest) -> None:
        with self._lock:
            self._records.append(record)

    def snapshot(self) -> list[RecordedRequest]:
        with self._lock:
            return list(self._records)

    def clear(self) -> None:
        with self._lock:
            self._records.clear()
