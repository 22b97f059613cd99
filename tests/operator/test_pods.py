from __future__ import annotations

from specfleet.operator.handlers.pods import control_endpoint, pod_endpoint


def _pod(**meta_extra: object) -> dict[str, object]:
    return {
        "metadata": {"name": "p", "labels": {"specfleet.dev/config-hash": "abc"}, **meta_extra},
        "spec": {"containers": [{"ports": [{"name": "http", "containerPort": 8000}]}]},
        "status": {"podIP": "10.0.0.7"},
    }


def test_endpoint_from_the_http_port() -> None:
    endpoint = pod_endpoint(_pod())
    assert endpoint is not None
    assert endpoint.metrics_url == "http://10.0.0.7:8000/metrics"
    assert endpoint.config_hash == "abc"


def test_annotation_overrides_the_port() -> None:
    endpoint = pod_endpoint(_pod(annotations={"specfleet.dev/metrics-port": "41234"}))
    assert endpoint is not None
    assert endpoint.metrics_url.endswith(":41234/metrics")


def test_pods_without_ip_or_terminating_are_skipped() -> None:
    no_ip = _pod()
    no_ip["status"] = {}
    assert pod_endpoint(no_ip) is None
    assert pod_endpoint(_pod(deletionTimestamp="2026-01-01T00:00:00Z")) is None


def _ready(pod: dict[str, object], ready: bool = True) -> dict[str, object]:
    condition = {"type": "Ready", "status": "True" if ready else "False"}
    return {**pod, "status": {"podIP": "10.0.0.7", "conditions": [condition]}}


def test_control_endpoint_of_a_ready_pod_is_its_health_port() -> None:
    endpoint = control_endpoint(_ready(_pod()))
    assert endpoint is not None
    assert endpoint.base_url == "http://10.0.0.7:8081"
    assert endpoint.config_hash == "abc"
    local = control_endpoint(_ready(_pod(annotations={"specfleet.dev/control-port": "41235"})))
    assert local is not None
    assert local.base_url == "http://10.0.0.7:41235"


def test_only_ready_pods_get_a_table() -> None:
    assert control_endpoint(_ready(_pod(), ready=False)) is None
    assert control_endpoint(_pod()) is None  # no Ready condition yet
    assert control_endpoint(_ready(_pod(deletionTimestamp="2026-01-01T00:00:00Z"))) is None
