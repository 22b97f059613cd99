"""The operator's own Prometheus metrics (one registry per operator, so tests can run several)."""

from __future__ import annotations

from wsgiref.simple_server import WSGIServer

from prometheus_client import CollectorRegistry, Counter, Gauge, Histogram, start_http_server

from specfleet.operator.api.types import SpeculationState
from specfleet.operator.policy.decision import Action, Decision

FLEET = ("namespace", "deployment")


class OperatorMetrics:
    def __init__(self) -> None:
        self.registry = CollectorRegistry()
        self._server: WSGIServer | None = None
        self.decisions = Counter(
            "specfleet_decisions_total",
            "Policy evaluations by action and reason code (applied=false: Recommend mode or paused).",
            [*FLEET, "action", "reason", "applied"],
            registry=self.registry,
        )
        self.rollbacks = Counter(
            "specfleet_rollbacks_total",
            "Rollbacks to the last good configuration.",
            FLEET,
            registry=self.registry,
        )
        self.enabled = Gauge(
            "specfleet_speculation_enabled", "1 while the fleet speculates.", FLEET, registry=self.registry
        )
        self.k = Gauge(
            "specfleet_speculation_k",
            "Draft tokens per step the fleet runs (0 when off).",
            FLEET,
            registry=self.registry,
        )
        self.metrics_available = Gauge(
            "specfleet_metrics_available",
            "1 when the last read of the fleet's signals succeeded.",
            FLEET,
            registry=self.registry,
        )
        self.queries_in_flight = Gauge(
            "specfleet_prometheus_queries_in_flight",
            "Prometheus queries holding a connection now, over every source.",
            registry=self.registry,
        )
        self.evaluation_seconds = Histogram(
            "specfleet_evaluation_duration_seconds",
            "Time to read signals, decide and act for one fleet.",
            registry=self.registry,
        )

    def serve(self, port: int) -> None:
        self._server, _ = start_http_server(port, registry=self.registry)

    def close(self) -> None:
        """Stop serving and free the port (an operator stopped in a process that goes on: tests, the demo)."""
        server, self._server = self._server, None
        if server is not None:
            server.shutdown()
            server.server_close()

    def record(self, namespace: str, name: str, decision: Decision, running: SpeculationState, available: bool) -> None:
        fleet = (namespace, name)
        self.decisions.labels(*fleet, decision.action.value, decision.code.value, str(decision.applied).lower()).inc()
        if decision.action == Action.ROLLBACK and decision.applied:
            self.rollbacks.labels(*fleet).inc()
        self.enabled.labels(*fleet).set(1 if running.enabled else 0)
        self.k.labels(*fleet).set(running.k or 0 if running.enabled else 0)
        self.metrics_available.labels(*fleet).set(1 if available else 0)

    def forget(self, namespace: str, name: str) -> None:
        for gauge in (self.enabled, self.k, self.metrics_available):
            try:
                gauge.remove(namespace, name)
            except KeyError:
                continue
