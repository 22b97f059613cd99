"""Where an engine pod serves its metrics, from the Pod object (for the direct-scrape default)."""

from __future__ import annotations

from typing import Any

from specfleet.operator.api.constants import ANNOTATION_METRICS_PORT, LABEL_CONFIG_HASH
from specfleet.operator.signals.model import PodEndpoint


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


def _http_port(pod: dict[str, Any]) -> int | None:
    for container in pod.get("spec", {}).get("containers", []):
        for port in container.get("ports", []):
            if port.get("name") == "http":
                return int(port["containerPort"])
    return None
