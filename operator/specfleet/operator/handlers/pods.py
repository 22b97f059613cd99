"""Where an engine pod serves its metrics, from the Pod object (for the direct-scrape default)."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from specfleet.operator.api.constants import ANNOTATION_CONTROL_PORT, ANNOTATION_METRICS_PORT, LABEL_CONFIG_HASH
from specfleet.operator.signals.model import PodEndpoint
from specfleet.runtime.health import HEALTH_PORT


@dataclass(frozen=True)
class ControlEndpoint:
    """A Ready engine pod's control endpoint (`base_url` + the table path), for live tables."""

    name: str
    base_url: str
    config_hash: str


def pod_endpoint(pod: dict[str, Any]) -> PodEndpoint | None:
    """`http://<podIP>:<port named http>/metrics`; the annotation overrides the port (local fleets share an IP)."""
    meta = pod.get("metadata", {})
    ip = (pod.get("status") or {}).get("podIP")
    config_hash = meta.get("labels", {}).get(LABEL_CONFIG_HASH)
    if not ip or not config_hash or meta.get("deletionTimestamp"):
        return None
    port = meta.get("annotations", {}).get(ANNOTATION_METRICS_PORT) or _http_port(pod)
    if port is None:
        return None
    host = f"[{ip}]" if ":" in ip else ip
    return PodEndpoint(name=meta["name"], metrics_url=f"http://{host}:{port}/metrics", config_hash=config_hash)


def serving_url(pod: dict[str, Any]) -> str | None:
    """`http://<podIP>:<port>` of the OpenAI server: the runtime serves it and `/metrics` on the one port."""
    endpoint = pod_endpoint(pod)
    return None if endpoint is None else endpoint.metrics_url.removesuffix("/metrics")


def control_endpoint(pod: dict[str, Any]) -> ControlEndpoint | None:
    """`http://<podIP>:<health port>` of a Ready pod; the annotation overrides the port (local fleets)."""
    meta = pod.get("metadata", {})
    status = pod.get("status") or {}
    ip, config_hash = status.get("podIP"), meta.get("labels", {}).get(LABEL_CONFIG_HASH)
    ready = any(c.get("type") == "Ready" and c.get("status") == "True" for c in status.get("conditions", []))
    if not ip or not config_hash or not ready or meta.get("deletionTimestamp"):
        return None
    port = meta.get("annotations", {}).get(ANNOTATION_CONTROL_PORT) or _port(pod, "health") or HEALTH_PORT
    host = f"[{ip}]" if ":" in ip else ip
    return ControlEndpoint(name=meta["name"], base_url=f"http://{host}:{port}", config_hash=config_hash)


def _http_port(pod: dict[str, Any]) -> int | None:
    return _port(pod, "http")


def _port(pod: dict[str, Any], name: str) -> int | None:
    for container in pod.get("spec", {}).get("containers", []):
        for port in container.get("ports", []):
            if port.get("name") == name:
                return int(port["containerPort"])
    return None
